//! The CPU convolution path of docs/cpu-kernels.md on a fixed two-conv net (3×3 16→32 stride 1, 3×3 32→24
//! stride 2, ReLUs): the channel-last layout pass with prepacked weights, `DMC=1`, clang-19 -O3 and the kernel
//! option rule must give convolution kernels whose object code (llvm-objdump-19) multiplies at the full vector
//! width — ymm FMAs for x86-64-v3, zmm for x86-64-v4, NEON `fmla .4s` for cortex-a76 — while the outputs still
//! match onnxruntime (on this CPU, and for aarch64 under qemu-aarch64), the producer flags name the compiler, and
//! the loader's refusal of a bundle needing missing CPU features names them.
//!
//! A second net (a stride-2 3×3 first conv on a 3-channel NCHW input, then a 512→1024 1×1 conv with 2 MiB of
//! weights on a 7×7 map) checks the channel-block-major form of large-weight convolutions (docs/cpu-kernels.md §3):
//! the 1×1 kernel has the blocked tile (16 channels × 7 positions, ymm FMAs) and the outputs match onnxruntime.
//!
//! A third check compiles the policy net (xtask/models/policy.onnx, batch-1 MatMuls): the Gemm/MatMul rule must give
//! its matrix-vector kernels ymm FMAs (the heuristic's were scalar) with outputs matching onnxruntime.
//!
//! tinygrad 0.14's own CLANG kernels for this net have no ymm/zmm FMA at all (float4 loads, docs/cpu-kernels.md
//! §2), so a behaviour change of the undocumented `DMC` switch or of the layout pass fails the width checks.
use modelrt_hal::target::TargetName;
use std::path::{Path, PathBuf};
use std::process::Command;

use modelrt_core::bundle::Bundle;
use modelrt_cpu::features::check_target_against;
use modelrt_hal::target::{cpu_features as f, CpuArch, Target};
use modelrt_tests::{python, replay_aarch64_manifest, root};
use xtask::exporter::ExportArgs;

const SCRIPT: &str = r#"
import sys, numpy as np, onnx
from onnx import TensorProto as T, helper as h, numpy_helper as nh
rng = np.random.default_rng(25)
w1 = nh.from_array((rng.standard_normal((32, 16, 3, 3)) * 0.2).astype(np.float32), "w1")
b1 = nh.from_array(rng.standard_normal(32).astype(np.float32), "b1")
w2 = nh.from_array((rng.standard_normal((24, 32, 3, 3)) * 0.1).astype(np.float32), "w2")
b2 = nh.from_array(rng.standard_normal(24).astype(np.float32), "b2")
nodes = [h.make_node("Conv", ["x", "w1", "b1"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
         h.make_node("Relu", ["c1"], ["r1"]),
         h.make_node("Conv", ["r1", "w2", "b2"], ["c2"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2]),
         h.make_node("Relu", ["c2"], ["y"])]
g = h.make_graph(nodes, "conv25", [h.make_tensor_value_info("x", T.FLOAT, [1, 16, 24, 32])],
                 [h.make_tensor_value_info("y", T.FLOAT, [1, 24, 12, 16])], [w1, b1, w2, b2])
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 13)]), sys.argv[1])
"#;

const BLOCKED_SCRIPT: &str = r#"
import sys, numpy as np, onnx
from onnx import TensorProto as T, helper as h, numpy_helper as nh
rng = np.random.default_rng(26)
w1 = nh.from_array((rng.standard_normal((512, 3, 3, 3)) * 0.3).astype(np.float32), "w1")
w2 = nh.from_array((rng.standard_normal((1024, 512, 1, 1)) / np.sqrt(512)).astype(np.float32), "w2")
b2 = nh.from_array(rng.standard_normal(1024).astype(np.float32), "b2")
nodes = [h.make_node("Conv", ["x", "w1"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2]),
         h.make_node("Relu", ["c1"], ["r1"]),
         h.make_node("Conv", ["r1", "w2", "b2"], ["c2"], kernel_shape=[1, 1]),
         h.make_node("Relu", ["c2"], ["y"])]
g = h.make_graph(nodes, "blocked25", [h.make_tensor_value_info("x", T.FLOAT, [1, 3, 14, 14])],
                 [h.make_tensor_value_info("y", T.FLOAT, [1, 1024, 7, 7])], [w1, w2, b2])
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 13)]), sys.argv[1])
"#;

fn model(py: &Path) -> PathBuf {
    model_from(py, SCRIPT, "conv25")
}

fn model_from(py: &Path, script: &str, name: &str) -> PathBuf {
    let dir = root().join("target/e2e/cpu_layout");
    std::fs::create_dir_all(&dir).unwrap();
    let onnx = dir.join(format!("{name}.onnx"));
    let st = Command::new(py)
        .arg("-c")
        .arg(script)
        .arg(&onnx)
        .status()
        .expect("the exporter Python runs");
    assert!(st.success());
    onnx
}

fn compile(py: &Path, target: &str, baseline: Option<&str>, tag: &str) -> PathBuf {
    let mut args = ExportArgs::onnx(model(py), target.parse().expect("a target name"), "");
    args.reference = true;
    args.cpu_baseline = baseline.map(str::to_string);
    modelrt_tests::compile_args(py, args, tag)
}

/// FMA counts of one kernel's object code: (xmm/scalar-or-128-bit, ymm, zmm) for x86, (vector `fmla`, 0, 0) for
/// aarch64 — from llvm-objdump-19, an independent disassembler.
fn fma_counts(binary: &[u8], tag: &str) -> (usize, usize, usize) {
    let path = root().join(format!("target/e2e/cpu_layout/{tag}.o"));
    std::fs::write(&path, binary).unwrap();
    let out = Command::new("llvm-objdump-19")
        .arg("-d")
        .arg(&path)
        .output()
        .expect("llvm-objdump-19 runs (Debian package llvm-19)");
    let text = String::from_utf8_lossy(&out.stdout);
    let (mut x, mut y, mut z) = (0, 0, 0);
    for line in text.lines() {
        if line.contains("vfmadd") || line.contains("vfnmadd") {
            if line.contains("zmm") {
                z += 1;
            } else if line.contains("ymm") {
                y += 1;
            } else {
                x += 1;
            }
        } else if line.contains("\tfmla\t") && line.contains(".4s") {
            x += 1;
        }
    }
    (x, y, z)
}

/// (name, (xmm, ymm, zmm) FMA counts) of the bundle's two convolution kernels (the ones reducing over ky·kx·ci).
fn conv_kernels(path: &Path) -> Vec<(String, (usize, usize, usize))> {
    let bytes = std::fs::read(path).unwrap();
    let b = Bundle::parse(&bytes).unwrap();
    let mut out = Vec::new();
    for (i, k) in b.body().kernels.iter().enumerate() {
        let k = k.unwrap();
        // the reduction of a 3×3 conv over 16 or 32 input channels shows in the kernel name: ..._3_3_16 / _3_3_32
        if k.name.ends_with("_3_3_16") || k.name.ends_with("_3_3_32") {
            out.push((k.name.to_string(), fma_counts(k.binary, &format!("k{i}"))));
        }
    }
    assert_eq!(
        out.len(),
        2,
        "two channel-last conv kernels in {path:?}: {out:?}"
    );
    out
}

fn verify_on_this_cpu(path: &Path) {
    let bytes = std::fs::read(path).unwrap();
    let (ins, want, atol, rtol) = modelrt_tests::reference(&bytes);
    let got = modelrt_tests::run_cpu(path, &ins).unwrap();
    let (g, w) = (f32s(&got[0]), f32s(&want[0]));
    for (a, b) in g.iter().zip(&w) {
        assert!(
            (a - b).abs() <= atol + rtol * b.abs(),
            "{a} vs onnxruntime {b}"
        );
    }
}

fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn flags(path: &Path) -> String {
    let bytes = std::fs::read(path).unwrap();
    Bundle::parse(&bytes)
        .unwrap()
        .body()
        .producer
        .flags
        .to_string()
}

#[test]
fn x86_64_v3_conv_kernels_use_ymm_fmas_and_match_onnxruntime() {
    let Some(py) = python() else { return };
    let path = compile(&py, "cpu-x86_64", None, "-layout-v3");
    for (name, (x, y, z)) in conv_kernels(&path) {
        assert!(y >= 8, "{name}: {y} ymm FMAs (xmm {x}, zmm {z})");
        assert_eq!(
            (x, z),
            (0, 0),
            "{name}: no narrow or zmm FMA in a v3 conv kernel"
        );
    }
    let fl = flags(&path);
    for want in ["DMC", "clang-19", "-O3 -march=x86-64-v3"] {
        assert!(fl.contains(want), "producer flags name {want}: {fl}");
    }
    verify_on_this_cpu(&path);
    // byte-reproducible: a second compile gives the same bundle
    let again = compile(&py, "cpu-x86_64", None, "-layout-v3-again");
    assert!(
        std::fs::read(&path).unwrap() == std::fs::read(&again).unwrap(),
        "two compiles of the same model differ"
    );
}

#[test]
fn x86_64_v4_conv_kernels_use_zmm_fmas() {
    let Some(py) = python() else { return };
    let host = modelrt_cpu::host_features();
    if host & f::AVX512F == 0 {
        // A compile runs its kernels on the host (capture and verification), so on a CPU without AVX-512 the v4
        // compile must be refused with one line before anything runs (it used to die of SIGILL mid-capture). The
        // zmm check below needs an AVX-512 host: machines of this kind differ (docs/testing.md).
        let mut args = ExportArgs::onnx(model(&py), TargetName::CpuX86_64, "");
        args.cpu_baseline = Some("x86-64-v4".into());
        let out = root().join("target/e2e/cpu_layout/refused-v4.mrt");
        let _ = std::fs::remove_file(&out);
        let err = format!(
            "{:#}",
            xtask::compile::compile(&py, args, &out)
                .expect_err("a v4 compile on a CPU without AVX-512")
        );
        assert!(
            err.contains("lacks avx512f") && err.contains("x86-64-v4"),
            "{err}"
        );
        assert!(!out.exists(), "a refused compile wrote {}", out.display());
        eprintln!("NOTE: no AVX-512 on this CPU: checked the refusal; the zmm FMA count needs an AVX-512 host");
        return;
    }
    let path = compile(&py, "cpu-x86_64", Some("x86-64-v4"), "-layout-v4");
    for (name, (x, y, z)) in conv_kernels(&path) {
        assert!(z >= 4, "{name}: {z} zmm FMAs (xmm {x}, ymm {y})");
    }
    assert!(flags(&path).contains("-mprefer-vector-width=512"));
    verify_on_this_cpu(&path);
}

#[test]
fn aarch64_conv_kernels_use_neon_fmla_and_match_onnxruntime_under_qemu() {
    let Some(py) = python() else { return };
    let path = compile(&py, "cpu-aarch64", None, "-layout-a64");
    for (name, (fmla, _, _)) in conv_kernels(&path) {
        assert!(fmla >= 8, "{name}: {fmla} four-lane fmla");
    }
    // the exporter's independent aarch64 replayer runs the manifest's kernels under qemu-aarch64 against the
    // embedded onnxruntime outputs
    replay_aarch64_manifest(&py, &path);
}

#[test]
fn large_weight_conv_is_channel_block_major_and_matches_onnxruntime() {
    let Some(py) = python() else { return };
    let mut args = ExportArgs::onnx(
        model_from(&py, BLOCKED_SCRIPT, "blocked25"),
        TargetName::CpuX86_64,
        "",
    );
    args.reference = true;
    let path = modelrt_tests::compile_args(&py, args, "-blocked-v3");
    let bytes = std::fs::read(&path).unwrap();
    let b = Bundle::parse(&bytes).unwrap();
    // the 1×1 conv reduces over 512 input channels; channel-block-major with the v3 tile: the block of 16 channels
    // (two ymm) and 7 output positions upcast, innermost in the kernel's name (`..._16_7_512`)
    let mut found = Vec::new();
    for (i, k) in b.body().kernels.iter().enumerate() {
        let k = k.unwrap();
        if k.name.ends_with("_512") {
            found.push((k.name.to_string(), fma_counts(k.binary, &format!("blk{i}"))));
        }
    }
    assert_eq!(found.len(), 1, "one 1×1 conv kernel: {found:?}");
    let (name, (x, y, z)) = &found[0];
    assert!(
        name.ends_with("_16_7_512"),
        "{name}: blocked tile 16 channels × 7 positions"
    );
    assert!(
        *y >= 14 && (*x, *z) == (0, 0),
        "{name}: xmm {x} ymm {y} zmm {z}"
    );
    verify_on_this_cpu(&path);
}

#[test]
fn policy_matrix_vector_kernels_use_ymm_fmas_and_match_onnxruntime() {
    // the Gemm/MatMul rule (docs/cpu-kernels.md §3): policy's first layer (512 + 8 + 2 inputs summed into 128
    // features, one kernel: `..._128_8_2_4`) and its 128 -> 64 layer multiply whole ymm vectors of weights; tinygrad's
    // heuristic gave them scalar FMAs only
    let Some(py) = python() else { return };
    let mut args = ExportArgs::onnx(
        root().join("xtask/models/policy.onnx"),
        TargetName::CpuX86_64,
        "",
    );
    args.reference = true;
    let path = modelrt_tests::compile_args(&py, args, "-gemm-v3");
    let bytes = std::fs::read(&path).unwrap();
    let b = Bundle::parse(&bytes).unwrap();
    let mut found = Vec::new();
    for (i, k) in b.body().kernels.iter().enumerate() {
        let k = k.unwrap();
        let (x, y, z) = fma_counts(k.binary, &format!("gemm{i}"));
        if y > 0 {
            found.push(k.name.to_string());
        }
        if k.name.contains("_128_8_2") {
            assert!(
                y >= 16 && (x, z) == (0, 0),
                "{}: xmm {x} ymm {y} zmm {z}",
                k.name
            );
        }
    }
    assert!(
        found.iter().any(|n| n.contains("_128_8_2")) && found.len() >= 3,
        "the three matrix-vector kernels have ymm FMAs: {found:?}"
    );
    verify_on_this_cpu(&path);
}

#[test]
fn loader_names_the_missing_cpu_features() {
    // a v4 bundle on an AVX2-only host: refused, naming avx512f and the baseline
    let v4 = Target::Cpu {
        arch: CpuArch::X86_64,
        baseline: "x86-64-v4",
        features: modelrt_cpu::features_for_baseline(CpuArch::X86_64, "x86-64-v4").unwrap(),
    };
    let v3_host = modelrt_cpu::features_for_baseline(CpuArch::X86_64, "x86-64-v3").unwrap();
    let err = check_target_against(&v4, Some(CpuArch::X86_64), v3_host)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("avx512f") && err.contains("x86-64-v4"),
        "{err}"
    );
    // an AVX-only host lacks four of the v3 features: all are named
    let v3 = Target::Cpu {
        arch: CpuArch::X86_64,
        baseline: "x86-64-v3",
        features: v3_host,
    };
    let err = check_target_against(&v3, Some(CpuArch::X86_64), f::SSE4_2 | f::AVX)
        .unwrap_err()
        .to_string();
    for want in ["avx2", "fma", "f16c", "bmi2"] {
        assert!(err.contains(want), "{err}");
    }
}
