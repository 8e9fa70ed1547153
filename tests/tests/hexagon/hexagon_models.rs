//! Whole `hexagon-v65` bundles compiled by the real exporter and computed under qemu-hexagon launch by launch
//! (`modelrt_hexagon::bundle::emu`), checked against independent references:
//! - a small QDQ uint8 MobileNetV2-shaped net: bit-identical to tinygrad's own CPU result for the same graph, within
//!   quantisation tolerance of onnxruntime, every kernel launch byte-identical to what tinygrad's own mock
//!   (MOCKDSP) computed for the same launch, and no kernel keeps tinygrad's over-aligned vector type;
//! - a float32 small net within 1e-5 of onnxruntime (and the compile's pre-write check on the FastRPC model);
//! - two compiles of a QDQ depthwise 3×3 over 576 channels at 7×7 (each with its own empty DSP build cache) give
//!   identical bundle bytes, its output equals tinygrad's CPU result, and it equals the committed bundle
//!   `modelrt dsp selftest` embeds;
//! - bundles without kernels (a constant output, an input passed through: copies only) still carry a model library,
//!   pass the compile's pre-write check on dsp-emu and give onnxruntime's outputs there.
//!
//! Needs the exporter's Python, clang-19 and qemu-hexagon-static >= 8 (`cargo xtask setup`); a missing one is a
//! visible skip, and a failure under CI. Shared helpers: `modelrt_tests::hexagon`.
use modelrt_hal::target::TargetName;
use std::path::PathBuf;
use std::process::Command;

use modelrt_core::bundle::Bundle;
use modelrt_hexagon::device::MODEL_LIBRARY;
use modelrt_hexagon::emu::harness::{self, BufArg, Schedule, Step};
use modelrt_targets::runner::{load, LoadOptions};
use modelrt_tests::hexagon::{
    compile, dir, f32s, max_abs, models, run, small_qdq, tinygrad_cpu, tools,
};
use modelrt_tests::{reference, root};
use xtask::exporter::{ExportArgs, Source};

#[test]
fn small_qdq_mobilenet_is_bit_identical_to_tinygrad_cpu() {
    let Some(py) = tools() else { return };
    let (bundle, _) = small_qdq(&py);
    let b = Bundle::parse(bundle).unwrap();
    assert!(matches!(
        b.body().target,
        modelrt_hal::target::Target::Hexagon { version: 65 }
    ));
    let (ins, ort, _, _) = reference(bundle);
    let r = run(bundle, &ins);
    let got = f32s(&r.outputs[0]);
    let cpu = f32s(&tinygrad_cpu(&py, &models(&py).0, &ins[0], &[1, 3, 64, 64]));
    assert_eq!(
        got, cpu,
        "DSP under qemu vs tinygrad DEV=CPU: must be bit-identical"
    );
    // onnxruntime requantises with round-half-even, tinygrad with round-half-up: a few quantisation steps apart
    let ort = f32s(&ort[0]);
    let peak = ort.iter().fold(0f32, |m, v| m.max(v.abs()));
    let err = max_abs(&got, &ort);
    assert!(
        err <= 0.1 * peak,
        "vs onnxruntime: max abs {err} with |logit| up to {peak}"
    );
    // the same through the runner `modelrt run/verify --device dsp-emu` uses
    let mut m = modelrt_targets::runner::load(
        Bundle::parse(bundle).unwrap(),
        modelrt_targets::runner::LoadOptions::on(
            modelrt_targets::runner::device("dsp-emu").unwrap(),
        ),
    )
    .expect("dsp-emu loads a hexagon bundle");
    let mut out = vec![0u8; got.len() * 4];
    m.run(&[ins[0].as_slice()], &mut [out.as_mut_slice()])
        .unwrap();
    assert_eq!(f32s(&out), cpu, "dsp-emu runner output");
    let insns: u64 = r.steps.iter().map(|s| u64::from(s.instructions)).sum();
    eprintln!(
        "small QDQ: {} steps, {insns} instructions, qemu {:.2} s, vs ORT max abs {err:.4} (peak {peak:.3})",
        r.steps.len(),
        r.qemu_seconds
    );
}

#[test]
fn small_qdq_every_launch_equals_tinygrads_mock() {
    let Some(py) = tools() else { return };
    let (bundle, fixture) = small_qdq(&py);
    let b = Bundle::parse(bundle).unwrap();
    let index = std::fs::read_to_string(fixture.join("index.txt")).unwrap();
    let launches: Vec<Vec<&str>> = index.lines().map(|l| l.split(' ').collect()).collect();
    assert!(
        launches.len() >= 10,
        "fixture holds {} launches",
        launches.len()
    );
    let list = |f: &str| -> Vec<i64> {
        if f == "-" {
            return vec![];
        }
        f.split(',').map(|v| v.parse().unwrap()).collect()
    };
    let mut checked = 0;
    for l in &launches {
        let name = l[0];
        let kernels: Vec<_> = b
            .body()
            .kernels
            .iter()
            .map(Result::unwrap)
            .filter(|k| k.name == name)
            .collect();
        assert_eq!(kernels.len(), 1, "kernel {name} in the bundle");
        let sizes: Vec<usize> = list(l[2]).iter().map(|&s| s as usize).collect();
        let data = std::fs::read(fixture.join(l[1])).unwrap();
        let total: usize = sizes.iter().sum();
        assert_eq!(data.len(), 2 * total);
        let (before, after) = data.split_at(total);
        let mut bufs = Vec::new();
        let mut at = 0;
        for s in &sizes {
            bufs.push(before[at..at + s].to_vec());
            at += s;
        }
        let s = Schedule {
            libs: vec![kernels[0].binary],
            steps: vec![Step::Launch {
                lib: 0,
                bufs: sizes
                    .iter()
                    .enumerate()
                    .map(|(i, &s)| BufArg {
                        buffer: i as u32,
                        offset: 0,
                        size: s as u32,
                    })
                    .collect(),
                vals: list(l[3])
                    .iter()
                    .map(|&v| u64::from(v as i32 as u32))
                    .collect(),
            }],
            outputs: (0..sizes.len() as u32).collect(),
            buffers: bufs,
        };
        let got: Vec<u8> = harness::run(&s).unwrap().outputs.concat();
        assert!(
            got == after,
            "launch of {name}: device library under qemu_harness != tinygrad's mock"
        );
        checked += 1;
    }
    eprintln!("{checked} launches byte-identical to tinygrad's mock");
}

#[test]
fn small_qdq_kernels_have_no_over_aligned_vectors() {
    let Some(py) = tools() else { return };
    let (bundle, _) = small_qdq(&py);
    let b = Bundle::parse(bundle).unwrap();
    // what `modelrt info` checks: Hexagon ET_DYN, `entry` defined, only HAP_* imports
    let report = modelrt_targets::inspect::check_kernels(&b).unwrap();
    assert_eq!(report.kernels, b.body().kernels.len());
    for k in b.body().kernels.iter() {
        let k = k.unwrap();
        if k.name == MODEL_LIBRARY {
            // every kernel linked with the schedule runner: no source of its own, checked as a binary above
            assert!(
                k.source.is_none() && k.params.is_empty(),
                "model library record"
            );
            continue;
        }
        let src = k.source.expect("device source is stored");
        assert!(
            src.contains("int entry("),
            "{}: FastRPC entry wrapper",
            k.name
        );
        for line in src.lines().filter(|l| l.contains("ext_vector_type")) {
            // element types are 1, 2 or 4 bytes: a larger alignment is tinygrad's false whole-vector alignment
            assert!(
                ["aligned(1)", "aligned(2)", "aligned(4)"]
                    .iter()
                    .any(|a| line.contains(a)),
                "{}: {line}",
                k.name
            );
        }
        assert_eq!(&k.binary[..4], b"\x7fELF");
        assert_eq!(
            u16::from_le_bytes([k.binary[18], k.binary[19]]),
            164,
            "e_machine Hexagon"
        );
    }
}

#[test]
fn float_small_net_matches_onnxruntime() {
    let Some(py) = tools() else { return };
    let bundle = compile(&py, &models(&py).1, "float", &[], false);
    let (ins, ort, _, _) = reference(&bundle);
    let r = run(&bundle, &ins);
    let err = max_abs(&f32s(&r.outputs[0]), &f32s(&ort[0]));
    assert!(err <= 1e-5, "float32 vs onnxruntime: max abs {err}");
    // The check `cargo xtask compile` runs before writing a hexagon bundle: the FastRPC model, one invoke.
    let dev = xtask::emu_check::device_for(TargetName::HexagonV65).unwrap();
    let c = xtask::emu_check::check_embedded(&bundle, dev).unwrap();
    assert_eq!(c.device, "dsp-emu");
    assert!(c.max_abs <= 1e-5, "compile check: max abs {:e}", c.max_abs);
}

#[test]
#[ignore = "heavy: run by `cargo xtask ci --full` (docs/testing.md)"]
fn two_compiles_give_identical_bundles() {
    let Some(py) = tools() else { return };
    // the depthwise 3x3 over 576 channels at 7x7 (MobileNetV2's last stage shape): small, so cheap to compile twice
    let out = dir().join("dw");
    let ok = xtask::exporter_python::command(&py)
        .arg(xtask::exporter_python::tool("dsp_models.py"))
        .arg("--out")
        .arg(&out)
        .arg("--dwtrap")
        .status()
        .unwrap()
        .success();
    assert!(ok, "tools/dsp_models.py --dwtrap failed");
    let onnx = out.join("qdq.onnx");
    // each compile with its own empty build cache (mrt/dsp_cache.py): both really compile every kernel
    let (c1, c2) = (dir().join("dw-cache-1"), dir().join("dw-cache-2"));
    for c in [&c1, &c2] {
        let _ = std::fs::remove_dir_all(c);
    }
    let one = compile(&py, &onnx, "dw-1", &[("MODELRT_DSP_CACHE", &c1)], true);
    let two = compile(&py, &onnx, "dw-2", &[("MODELRT_DSP_CACHE", &c2)], true);
    assert!(one == two, "bundle bytes differ between two compiles");
    assert!(
        c1.join("obj").is_dir(),
        "the first compile built its kernels into {}",
        c1.display()
    );
    let b = Bundle::parse(&one).unwrap();
    assert!(b
        .body()
        .kernels
        .iter()
        .any(|k| k.unwrap().name.starts_with("r_576_7_7_3_3")));
    // and it computes what tinygrad computes on the CPU
    let (ins, _, _, _) = reference(&one);
    let got = run(&one, &ins);
    let cpu = tinygrad_cpu(&py, &onnx, &ins[0], &[1, 576, 7, 7]);
    assert!(
        got.outputs[0] == cpu,
        "depthwise 576x7x7 under qemu != tinygrad DEV=CPU"
    );
    // this bundle is `modelrt dsp selftest`'s embedded one: the committed copy must be what the exporter builds
    let asset = root().join("qcom/hexagon/assets/dsp-selftest.mrt");
    if std::env::var("MODELRT_UPDATE_DSP_SELFTEST").is_ok_and(|v| v == "1") {
        std::fs::write(&asset, &one).unwrap();
    }
    assert!(
        std::fs::read(&asset).unwrap() == one,
        "{} is out of date: run `MODELRT_UPDATE_DSP_SELFTEST=1 cargo test -p modelrt-tests --test hexagon hexagon_models two_compiles` and rebuild modelrt-hexagon",
        asset.display()
    );
    assert!(
        modelrt_hexagon::bundle::selftest::SELFTEST_BUNDLE == one.as_slice(),
        "the modelrt build embeds a stale selftest bundle"
    );
}

#[test]
fn bundles_without_kernels_run_on_dsp_emu() {
    let Some(py) = tools() else { return };
    let models = dir().join("kernel-less");
    let ok = Command::new(&py)
        .arg(root().join("xtask/exporter/tools/make_correctness_models.py"))
        .arg(&models)
        .status()
        .unwrap()
        .success();
    assert!(ok, "tools/make_correctness_models.py failed");
    // a Constant squared with no graph input (tinygrad folds it: the output is copied from a weight), and Identity
    for name in ["constant_no_inputs", "input_passthrough"] {
        let mut args = ExportArgs::onnx(
            models.join(format!("{name}.onnx")),
            TargetName::HexagonV65,
            "",
        );
        args.reference = true;
        let out = models.join(format!("{name}.mrt"));
        let report = xtask::compile::compile(&py, args, &out)
            .unwrap_or_else(|e| panic!("{name} for hexagon-v65: {e:#}"));
        let check = report
            .emu_check
            .unwrap_or_else(|| panic!("{name}: no pre-write check: {:?}", report.not_checked));
        assert_eq!(check.device, "dsp-emu");
        let bytes = std::fs::read(&out).unwrap();
        let b = Bundle::parse(&bytes).unwrap();
        let kernels: Vec<&str> = b.body().kernels.iter().map(|k| k.unwrap().name).collect();
        assert_eq!(kernels, [MODEL_LIBRARY], "{name}: only the model library");
        let (ins, ort, _, _) = reference(&bytes);
        let mut m = load(
            b,
            LoadOptions::on(modelrt_targets::runner::device("dsp-emu").unwrap()),
        )
        .unwrap_or_else(|e| panic!("{name} loads on dsp-emu: {e:#}"));
        let mut y = vec![0u8; ort[0].len()];
        let x: Vec<&[u8]> = ins.iter().map(Vec::as_slice).collect();
        m.run(&x, &mut [y.as_mut_slice()]).unwrap();
        assert_eq!(f32s(&y), f32s(&ort[0]), "{name}: dsp-emu vs onnxruntime");
    }
}

/// A tinygrad program (not an ONNX model) for `--tinygrad SCRIPT.py:build`: a dense layer with ReLU on fixed
/// seeded weights, the script format of xtask/exporter/mrt/script.py.
const TINY_SCRIPT: &str = r#"import numpy as np
from tinygrad import Tensor


def build():
  rng = np.random.default_rng(7)
  w, b = Tensor(rng.standard_normal((16, 8)).astype(np.float32)), Tensor(rng.standard_normal(8).astype(np.float32))
  def fn(x): return (x @ w + b).relu().contiguous()
  return {"fn": fn, "inputs": {"x": np.zeros((4, 16), np.float32)}, "outputs": ["y"]}
"#;

/// tinygrad's own output of the script's `fn` on the host CPU (`DEV=CPU`, unjitted) for input bytes `x`.
const TINY_REFERENCE: &str =
    "import sys, numpy as np\nfrom tinygrad import Tensor\nsys.path.insert(0, sys.argv[1])\n\
                              import tiny_net\nb = tiny_net.build()\n\
                              x = np.fromfile(sys.argv[2], np.float32).reshape(4, 16)\n\
                              b['fn'](Tensor(x)).numpy().astype(np.float32).tofile(sys.argv[3])\n";

#[test]
fn tinygrad_script_hexagon_bundle_runs_like_tinygrad() {
    let Some(py) = tools() else { return };
    let d = dir().join("script");
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    let script = d.join("tiny_net.py");
    std::fs::write(&script, TINY_SCRIPT).unwrap();
    let mut args = ExportArgs::onnx(PathBuf::new(), TargetName::HexagonV65, PathBuf::new());
    args.source = Source::Tinygrad(format!("{}:build", script.display()));
    let out = d.join("tiny.mrt");
    xtask::compile::compile(&py, args, &out).expect("--tinygrad compile for hexagon-v65");
    let bytes = std::fs::read(&out).unwrap();
    let bundle = Bundle::parse(&bytes).unwrap();
    // seeded inputs, then tinygrad's own result for them
    let x: Vec<f32> = (0..64)
        .map(|i| ((i * 37 % 29) as f32 - 14.0) / 7.0)
        .collect();
    let x_bytes: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
    let (inp, want_path) = (d.join("x.bin"), d.join("want.bin"));
    std::fs::write(&inp, &x_bytes).unwrap();
    let ok = Command::new(&py)
        .args(["-c", TINY_REFERENCE])
        .arg(&d)
        .arg(&inp)
        .arg(&want_path)
        .env("DEV", "CPU")
        .status()
        .unwrap()
        .success();
    assert!(ok, "tinygrad's own run of the script failed");
    let want = f32s(&std::fs::read(&want_path).unwrap());
    assert_eq!(want.len(), 32);
    // `modelrt run --device dsp-emu`'s loader: the FastRPC engine on the device model, one invoke per step
    let mut m = load(
        bundle.clone(),
        LoadOptions::on(modelrt_targets::runner::device("dsp-emu").unwrap()),
    )
    .expect("the --tinygrad hexagon bundle loads on dsp-emu");
    let mut y = vec![0u8; 32 * 4];
    m.run(&[&x_bytes], &mut [&mut y]).expect("runs on dsp-emu");
    let got = f32s(&y);
    let err = max_abs(&got, &want);
    assert!(err <= 1e-5, "dsp-emu vs tinygrad: max abs {err}");
    assert!(
        want.iter().any(|&v| v > 0.0) && want.contains(&0.0),
        "the ReLU is exercised"
    );
}

/// Writes a small ONNX model to `argv[1]`: MatMul with seeded weights, then ReLU (x: float32 [4, 16] -> [4, 8]).
const DENSE_ONNX: &str = "import sys, numpy as np, onnx\nfrom onnx import helper, numpy_helper, TensorProto as T\n\
                          w = numpy_helper.from_array(np.random.default_rng(7).standard_normal((16, 8)).astype(np.float32), 'w')\n\
                          g = helper.make_graph([helper.make_node('MatMul', ['x', 'w'], ['m']), helper.make_node('Relu', ['m'], ['y'])],\n\
                          'dense', [helper.make_tensor_value_info('x', T.FLOAT, [4, 16])],\n\
                          [helper.make_tensor_value_info('y', T.FLOAT, [4, 8])], [w])\n\
                          m = helper.make_model(g, opset_imports=[helper.make_opsetid('', 17)])\nm.ir_version = 8\n\
                          onnx.save(m, sys.argv[1])\n";

/// Writes a compile3-style pickle of ONNX `argv[1]` captured on tinygrad's DSP device (its mock, which runs the
/// kernels under qemu-hexagon) to `argv[2]`, with `argv[2].in.npz` and tinygrad's own outputs in `argv[2].out.npy`.
/// The exporter's `prepare` first builds the helper object tinygrad's DSP compiles link against.
const DSP_PICKLE: &str = "import os, sys\n\
                          os.environ.update(DEV='DSP', MOCKDSP='1', PARALLEL='0')\n\
                          from mrt import dsp as mrt_dsp\nmrt_dsp.prepare(os.path.dirname(sys.argv[2]))\n\
                          from tools import make_test_pickle\nmake_test_pickle.make_pickle(sys.argv[1], sys.argv[2], False)\n";

/// `cargo xtask convert` of a DSP pickle builds the DSP model library too: the bundle runs on `--device dsp-emu`
/// and gives tinygrad's own outputs for the pickle's inputs.
#[test]
fn dsp_pickle_converts_to_a_hexagon_bundle_that_runs_like_tinygrad() {
    let Some(py) = tools() else { return };
    let d = dir().join("pickle");
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    let onnx = d.join("dense.onnx");
    let ok = Command::new(&py)
        .args(["-c", DENSE_ONNX])
        .arg(&onnx)
        .status()
        .unwrap()
        .success();
    assert!(ok, "writing the ONNX model failed");
    let pkl = d.join("dsp.pkl");
    let ok = xtask::exporter_python::command(&py)
        .args(["-c", DSP_PICKLE])
        .arg(&onnx)
        .arg(&pkl)
        .status()
        .unwrap()
        .success();
    assert!(ok, "capturing the DSP pickle failed");
    let mut args = ExportArgs::pickle(PathBuf::new(), PathBuf::new());
    args.source = Source::Pickle(pkl.clone());
    let out = d.join("dsp.mrt");
    xtask::compile::compile(&py, args, &out).expect("convert of a DSP pickle");
    let bytes = std::fs::read(&out).unwrap();
    let bundle = Bundle::parse(&bytes).unwrap();
    // the pickle's inputs and tinygrad's outputs as raw bytes
    let dump = "import numpy as np, sys\nz = np.load(sys.argv[1])\nassert len(z.files) == 1\n\
                np.ascontiguousarray(z[z.files[0]]).tofile(sys.argv[3])\n\
                np.ascontiguousarray(np.load(sys.argv[2])).astype(np.float32).tofile(sys.argv[4])\n";
    let (x_path, want_path) = (d.join("x.bin"), d.join("want.bin"));
    let ok = Command::new(&py)
        .args(["-c", dump])
        .arg(format!("{}.in.npz", pkl.display()))
        .arg(format!("{}.out.npy", pkl.display()))
        .arg(&x_path)
        .arg(&want_path)
        .status()
        .unwrap()
        .success();
    assert!(ok, "reading the pickle's inputs and outputs failed");
    let (x, want) = (
        std::fs::read(&x_path).unwrap(),
        std::fs::read(&want_path).unwrap(),
    );
    let mut m = load(
        bundle.clone(),
        LoadOptions::on(modelrt_targets::runner::device("dsp-emu").unwrap()),
    )
    .expect("the converted hexagon bundle loads on dsp-emu");
    let mut y = vec![0u8; want.len()];
    m.run(&[&x], &mut [&mut y]).expect("runs on dsp-emu");
    let err = max_abs(&f32s(&y), &f32s(&want));
    assert!(err <= 1e-5, "dsp-emu vs tinygrad's DSP run: max abs {err}");
}
