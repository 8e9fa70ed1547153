//! Shared helpers of the hexagon tests (`tests/tests/hexagon_kernels.rs`, `hexagon_models.rs`, `hexagon_fastrpc.rs`):
//! the tool check (Python, clang-19, qemu-hexagon), the exporter's test nets, compiling a hexagon-v65 bundle with the
//! real exporter, tinygrad's own CPU result as a reference, and a launch-by-launch run under the qemu harness.
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use modelrt_core::bundle::Bundle;
use modelrt_hexagon::emu::harness;
use xtask::exporter::ExportArgs;

use crate::{python, root, skip};

/// Python, clang-19 and qemu >= 8, or a reported skip.
pub fn tools() -> Option<PathBuf> {
    let py = python()?;
    let qemu = harness::qemu::check_qemu().and_then(|_| harness::qemu::harness());
    skip::require(
        qemu.err().map_or(Some(()), |e| {
            eprintln!("{e}");
            None
        }),
        "qemu-hexagon-static >= 8 and clang-19 (cargo xtask setup)",
    )?;
    Some(py)
}

/// The scratch directory of the hexagon tests (`target/e2e/hexagon`).
pub fn dir() -> PathBuf {
    let d = root().join("target/e2e/hexagon");
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The small QDQ and float32 nets (`xtask/exporter/tools/dsp_models.py --res 64`), built once per test process.
pub fn models(py: &Path) -> &'static (PathBuf, PathBuf) {
    static M: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    M.get_or_init(|| {
        let out = dir().join("small");
        let ok = xtask::exporter_python::command(py)
            .arg(xtask::exporter_python::tool("dsp_models.py"))
            .args(["--out"])
            .arg(&out)
            .args(["--res", "64"])
            .status()
            .unwrap()
            .success();
        assert!(ok, "tools/dsp_models.py failed");
        (out.join("qdq.onnx"), out.join("float.onnx"))
    })
}

/// Export `onnx` for hexagon-v65 with `env` (fixture recording, test switches) and build the bundle bytes.
pub fn compile(
    py: &Path,
    onnx: &Path,
    tag: &str,
    env: &[(&str, &Path)],
    quantised: bool,
) -> Vec<u8> {
    let out = dir().join(format!("export-{tag}"));
    let mut args = ExportArgs::onnx(onnx, "hexagon-v65", &out);
    args.reference = true;
    let mut cmd = Command::new(py);
    cmd.arg(xtask::exporter::script_path()).args(args.to_argv());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let st = cmd.status().unwrap();
    assert!(st.success(), "exporter failed on {}", onnx.display());
    let man = xtask::manifest::Manifest::load(&out).unwrap();
    // no --trust-tinygrad: a QDQ graph is cross-checked with onnxruntime in quantisation steps, and the bundle says so
    assert_eq!(
        man.producer.flags.contains_key("ORT_TOLERANCE"),
        quantised,
        "quantised cross-check flag of {}",
        onnx.display()
    );
    assert!(!man.producer.flags.contains_key("TRUST_TINYGRAD"));
    xtask::bundle_build::build(&man).unwrap()
}

/// Little-endian f32 values of `b`.
pub fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// Largest absolute difference of two equally long vectors.
pub fn max_abs(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

/// tinygrad's own result for `onnx` on the host CPU (`DEV=CPU`), for the input bytes `x` of shape `shape`.
pub fn tinygrad_cpu(py: &Path, onnx: &Path, x: &[u8], shape: &[usize]) -> Vec<u8> {
    let d = onnx.parent().unwrap(); // one model per directory: parallel tests never share these files
    let (inp, outp) = (d.join("tg_in.bin"), d.join("tg_out.bin"));
    std::fs::write(&inp, x).unwrap();
    let script = "import sys, numpy as np\nfrom tinygrad import Tensor\nfrom tinygrad.nn.onnx import OnnxRunner\n\
                  x = np.fromfile(sys.argv[2], np.float32).reshape([int(s) for s in sys.argv[4].split(',')])\n\
                  out = list(OnnxRunner(sys.argv[1])({'input': Tensor(x)}).values())[0]\n\
                  out.numpy().astype(np.float32).tofile(sys.argv[3])\n";
    let dims: Vec<String> = shape.iter().map(ToString::to_string).collect();
    let st = Command::new(py)
        .args(["-c", script])
        .arg(onnx)
        .arg(&inp)
        .arg(&outp)
        .arg(dims.join(","))
        .env("DEV", "CPU")
        .status()
        .unwrap();
    assert!(st.success(), "tinygrad CPU run failed");
    std::fs::read(&outp).unwrap()
}

/// Run a hexagon bundle launch by launch under the qemu harness (`modelrt_targets::dsp::emu`).
pub fn run(bundle: &[u8], inputs: &[Vec<u8>]) -> modelrt_targets::dsp::emu::DspRun {
    let b = Bundle::parse(bundle).expect("hexagon bundle parses and validates");
    let ins: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
    modelrt_targets::dsp::emu::run_bundle(&b, &ins).expect("bundle runs under qemu-hexagon")
}

/// The small QDQ model: bundle + the mock's per-launch fixture.
pub fn small_qdq(py: &Path) -> &'static (Vec<u8>, PathBuf) {
    static B: OnceLock<(Vec<u8>, PathBuf)> = OnceLock::new();
    B.get_or_init(|| {
        let fixture = dir().join("fixture-qdq");
        let _ = std::fs::remove_dir_all(&fixture);
        let bytes = compile(
            py,
            &models(py).0,
            "qdq",
            &[("MODELRT_DSP_FIXTURE", &fixture)],
            true,
        );
        (bytes, fixture)
    })
}
