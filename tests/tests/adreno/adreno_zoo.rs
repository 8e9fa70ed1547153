//! The ONNX light zoo through the IR3 interpreter of the KGSL model.
//!
//! The light models recreate every weight as a uniform `ConstantOfShape`, which lets tinygrad fold the whole
//! network into one constant kernel (see `xtask/exporter/tools/zoo_random_weights.py` for why). The helper rewrites
//! those weights as seeded random initializers, so the compiled net really computes. The result is compiled for
//! `adreno-a630` with `--reference` (onnxruntime's outputs on seeded inputs, embedded) and run on the Adreno
//! backend over the executing KGSL model, exactly as `modelrt verify --device qcom-emu` does. squeezenet (fully
//! convolutional, ends in a global pool) with its input resized to 64x64:
//! - fp32 (26 kernels): every output within 1e-4 abs (the bundle's tolerance) and 1e-3 rel of onnxruntime;
//! - `--image` (IMAGE=1 FLOAT16=1): within the 5e-2 the exporter embeds for fp16 bundles. One of its kernels reads
//!   the same buffer both as an image (texture descriptor) and as a plain buffer (pointer): tinygrad lists that
//!   buffer twice in the kernel's signature, the bundle carries one argument per use, and the stream builder
//!   binds each — the test requires such a launch to be present.
//!
//! Both have a kernel that uses per-fiber private memory (`stp`/`ldp`). These are cheap to emulate (a few seconds
//! a step); every zoo model at full size runs through `cargo xtask zoo --adreno` (docs/zoo.md).
use modelrt_hal::target::TargetName;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use modelrt_core::bundle::Bundle;
use modelrt_core::verify::compare;
use modelrt_ir3::Program;
use modelrt_targets::runner::{load, LoadOptions};
use modelrt_tests::{compile_args, count_launches, light_zoo, python, reference, root};
use xtask::exporter::ExportArgs;

/// `light_{model}.onnx` with seeded random weights, written under `target/e2e/zoo-rand/`.
fn randomized(py: &Path, model: &str, size: Option<u32>, tag: &str) -> PathBuf {
    let dir = root().join("target/e2e/zoo-rand");
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join(format!("{model}{tag}.onnx"));
    let mut cmd = Command::new(py);
    cmd.arg(root().join("xtask/exporter/tools/zoo_random_weights.py"))
        .arg(light_zoo(py).join(format!("light_{model}.onnx")))
        .arg(&out);
    if let Some(s) = size {
        cmd.args(["--size", &s.to_string()]);
    }
    let st = cmd.status().expect("the exporter Python runs");
    assert!(st.success(), "zoo_random_weights.py {model} failed");
    out
}

/// Compile the randomized `model` for adreno-a630 with an embedded onnxruntime reference, run the reference
/// inputs on `--device qcom-emu` and compare; returns (max abs, max rel) over all outputs.
fn check(model: &str, size: Option<u32>, image: bool) -> (f64, f64, usize, usize) {
    let py = match python() {
        Some(p) => p,
        None => return (0.0, 0.0, 0, 0),
    };
    let tag = if image { "-zoo-image" } else { "-zoo" };
    let onnx = randomized(&py, model, size, tag);
    let (b, _) = compile_and_run(&py, model, onnx, image, tag);
    b
}

/// Compile `onnx` for adreno-a630 (fp32, or `--image` fp16) with an embedded onnxruntime reference, run it on
/// `--device qcom-emu` and compare; returns (max abs, max rel, kernels using private memory, launches binding one
/// buffer twice) and every kernel's IR3 listing.
fn compile_and_run(
    py: &Path,
    model: &str,
    onnx: PathBuf,
    image: bool,
    tag: &str,
) -> ((f64, f64, usize, usize), Vec<Vec<String>>) {
    let mut args = ExportArgs::onnx(onnx, TargetName::AdrenoA630, "");
    args.image = image;
    args.float16 = image;
    args.reference = true;
    let t = Instant::now();
    let path = compile_args(py, args, tag);
    let compile_s = t.elapsed().as_secs_f64();
    let bytes = std::fs::read(path).unwrap();
    let b = Bundle::parse(&bytes).unwrap();
    let launches = count_launches(&b);
    let shared = launches_binding_one_buffer_twice(&b);
    // Folded, a zoo net is one kernel; random weights keep every layer.
    assert!(
        launches >= 20 || !tag.contains("zoo"),
        "{model}: only {launches} launches"
    );
    let listings: Vec<Vec<String>> = b
        .body()
        .kernels
        .iter()
        .map(Result::unwrap)
        .map(|k| {
            Program::decode(k.name, k.binary)
                .unwrap_or_else(|e| panic!("{e}"))
                .listing()
        })
        .collect();
    // Kernels that spill to or index per-fiber private memory (`stp`/`ldp`), which the interpreter must handle.
    let private = listings
        .iter()
        .filter(|l| {
            l.iter()
                .any(|l| l.starts_with("stp.") || l.contains(" stp."))
        })
        .count();
    let (inputs, want, atol, rtol) = reference(&bytes);
    if !image {
        assert!(atol <= 1e-4, "{model}: fp32 bundles embed atol 1e-4");
    }
    let dtypes: Vec<_> = b.body().outputs.iter().map(|o| o.unwrap().dtype).collect();
    let mut m = load(
        b,
        LoadOptions::on(modelrt_targets::runner::device("qcom-emu").unwrap()),
    )
    .unwrap_or_else(|e| panic!("{model}: {e:#}"));
    assert!(m.computes_outputs(), "{}", m.device_name());
    let mut outs: Vec<Vec<u8>> = want.iter().map(|w| vec![0u8; w.len()]).collect();
    let ins: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
    let mut refs: Vec<&mut [u8]> = outs.iter_mut().map(Vec::as_mut_slice).collect();
    let t = Instant::now();
    m.run(&ins, &mut refs)
        .unwrap_or_else(|e| panic!("{model}: {e:#}"));
    let step_s = t.elapsed().as_secs_f64();
    let (mut max_abs, mut max_rel) = (0f64, 0f64);
    for ((got, w), dt) in outs.iter().zip(&want).zip(dtypes) {
        let c = compare(dt, got, w, atol as f64, rtol as f64);
        assert!(
            c.ok(),
            "{model} image={image}: {c:?} (atol {atol}, rtol {rtol})"
        );
        // The reference is not degenerate: the random weights make the output depend on the input.
        let vals: Vec<f64> = (0..c.count as usize)
            .map(|i| modelrt_core::verify::element(dt, w, i).unwrap())
            .collect();
        let (lo, hi) = vals
            .iter()
            .fold((f64::MAX, f64::MIN), |(l, h), &v| (l.min(v), h.max(v)));
        assert!(hi - lo > 1e-3, "{model}: onnxruntime's output is uniform");
        max_abs = max_abs.max(c.max_abs);
        max_rel = max_rel.max(c.max_rel);
    }
    println!(
        "{model}{}: {launches} launches ({shared} bind one buffer in two slots, {private} kernels use private memory), max abs err {max_abs:.3e}, max rel err {max_rel:.3e}, compile {compile_s:.1} s, emulated step {step_s:.2} s",
        if image { " (image/fp16)" } else { " (fp32)" },
    );
    ((max_abs, max_rel, private, shared), listings)
}

/// Launches whose arguments name the same buffer bytes in two parameter slots.
fn launches_binding_one_buffer_twice(b: &Bundle<'_>) -> usize {
    use modelrt_core::bundle::{ArgRef, Step};
    b.body()
        .run
        .iter()
        .filter(|s| match s {
            Ok(Step::Launch { args, .. }) => {
                let bufs: Vec<_> = args
                    .iter()
                    .filter_map(|a| match a {
                        ArgRef::Buffer { buffer, offset, .. } => Some((*buffer, *offset)),
                        ArgRef::Int(_) => None,
                    })
                    .collect();
                bufs.iter().enumerate().any(|(i, x)| bufs[..i].contains(x))
            }
            _ => false,
        })
        .count()
}

#[test]
fn light_zoo_squeezenet_fp32_matches_onnxruntime_on_qcom_emu() {
    let Some(_) = python() else { return };
    let (_, max_rel, private, _) = check("squeezenet", Some(64), false);
    assert!(max_rel <= 1e-3, "fp32 max rel err {max_rel:e}");
    assert!(private > 0, "no kernel exercises private memory");
}

#[test]
#[ignore = "heavy: run by `cargo xtask ci --full` (docs/testing.md)"]
fn light_zoo_squeezenet_image_fp16_matches_onnxruntime_on_qcom_emu() {
    let Some(_) = python() else { return };
    let (_, _, private, shared) = check("squeezenet", Some(64), true);
    assert!(private > 0, "no kernel exercises private memory");
    assert!(shared > 0, "no launch binds one buffer in two slots");
}

/// A 512→256 3×3 convolution on 14×14 (shaped like vgg19's last block, seeded random weights). tinygrad splits the output
/// channels into work-group z blocks of 128, so each block's weights start at z · 0x90000 elements, and Mesa
/// multiplies by that constant with a single `madsh.m16 d, z, 0x90000, 0` (its `imadsh_mix16` rules drop the
/// other halves of the 32-bit multiply because 0x90000's low half is zero). Only the low-half-of-src1 ×
/// high-half-of-src2 reading of `madsh.m16` (docs/hw/adreno-kgsl-pm4.md §16.4) writes channels 128 and up; the
/// other reading left them unwritten, which is how vgg19 fp32 once failed on qcom-emu.
#[test]
#[ignore = "heavy: run by `cargo xtask ci --full` (docs/testing.md)"]
fn wide_convolution_channel_blocks_match_onnxruntime_on_qcom_emu() {
    let Some(py) = python() else { return };
    let dir = root().join("target/e2e/zoo-rand");
    std::fs::create_dir_all(&dir).unwrap();
    let onnx = dir.join("wide_conv_512x256.onnx");
    let script = r#"
import sys, numpy as np, onnx
from onnx import TensorProto as T, helper as h, numpy_helper as nh
rng = np.random.default_rng(17)
w = nh.from_array((rng.standard_normal((256, 512, 3, 3)) * 0.02).astype(np.float32), "w")
b = nh.from_array(rng.standard_normal(256).astype(np.float32), "b")
g = h.make_graph([h.make_node("Conv", ["x", "w", "b"], ["y"], pads=[1, 1, 1, 1]), h.make_node("Relu", ["y"], ["z"])],
                 "wide_conv", [h.make_tensor_value_info("x", T.FLOAT, [1, 512, 14, 14])],
                 [h.make_tensor_value_info("z", T.FLOAT, [1, 256, 14, 14])], [w, b])
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 13)]), sys.argv[1])
"#;
    let st = Command::new(&py)
        .arg("-c")
        .arg(script)
        .arg(&onnx)
        .status()
        .expect("the exporter Python runs");
    assert!(st.success(), "writing {}", onnx.display());
    let ((max_abs, _, _, _), listings) =
        compile_and_run(&py, "wide_conv_512x256", onnx, false, "-wide");
    assert!(max_abs <= 1e-4, "max abs err {max_abs:e}");
    // The case this test is for is really compiled: a `madsh.m16` whose second source holds a constant with a
    // zero low half (moved into a register, as cat3 cannot encode it there).
    assert!(
        listings.iter().any(|l| madsh_by_high_constant(l)),
        "no kernel multiplies by a constant with a zero low half through madsh.m16"
    );
}

/// Whether a listing has `mov.u32u32 rX, 0xHHHH0000` (HHHH ≠ 0) and then `madsh.m16 d, a, rX, c`.
fn madsh_by_high_constant(listing: &[String]) -> bool {
    let mut regs: Vec<String> = Vec::new();
    for line in listing {
        let ops: Vec<&str> = line
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|t| !t.is_empty() && !t.starts_with('('))
            .collect();
        match ops.as_slice() {
            [m, dst, imm] if m.starts_with("mov.u32u32") => {
                let v = imm
                    .strip_prefix("0x")
                    .and_then(|h| u32::from_str_radix(h, 16).ok());
                regs.retain(|r| r != dst);
                if matches!(v, Some(v) if v & 0xFFFF == 0 && v != 0) {
                    regs.push(dst.to_string());
                }
            }
            [m, _, _, src2, _] if m.starts_with("madsh.m16") && regs.iter().any(|r| r == src2) => {
                return true
            }
            _ => {}
        }
    }
    false
}
