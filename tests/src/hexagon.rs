//! Shared helpers of the hexagon tests (`tests/tests/hexagon/hexagon_kernels.rs`, `hexagon_models.rs`, `hexagon_fastrpc.rs`):
//! the tool check (Python, clang-19, qemu-hexagon), the exporter's test nets, compiling a hexagon-v65 bundle with the
//! real exporter, tinygrad's own CPU result as a reference, and a launch-by-launch run under the qemu harness.
//! The small QDQ net's export is shared by the test processes through [`shared_export`] (both hexagon_models and
//! hexagon_fastrpc use it; it is compiled once per change of its inputs, not once per file).
use modelrt_hal::target::TargetName;
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

/// Run the exporter on `onnx` for hexagon-v65 (`--reference`) into `out`, with `env`.
fn export(py: &Path, onnx: &Path, out: &Path, env: &[(&str, &Path)]) {
    let mut args = ExportArgs::onnx(onnx, TargetName::HexagonV65, out);
    args.reference = true;
    let mut cmd = Command::new(py);
    cmd.arg(xtask::exporter::script_path()).args(args.to_argv());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let st = cmd.status().unwrap();
    assert!(st.success(), "exporter failed on {}", onnx.display());
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
    export(py, onnx, &out, env);
    build(&out, onnx, quantised)
}

/// The bundle bytes of an export directory (built in-process, so Rust-side changes always apply), after checking
/// the producer flags of the quantised cross-check.
fn build(out: &Path, onnx: &Path, quantised: bool) -> Vec<u8> {
    let man = xtask::manifest::Manifest::load(out).unwrap();
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

/// Run a hexagon bundle launch by launch under the qemu harness (`modelrt_hexagon::bundle::emu`).
pub fn run(bundle: &[u8], inputs: &[Vec<u8>]) -> modelrt_hexagon::bundle::emu::DspRun {
    let b = Bundle::parse(bundle).expect("hexagon bundle parses and validates");
    let ins: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
    modelrt_hexagon::bundle::emu::run_bundle(&b, &ins).expect("bundle runs under qemu-hexagon")
}

/// Files whose contents decide what the exporter writes for a given model: its Python sources and the DSP C sources.
fn exporter_inputs(d: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(d).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            if p.file_name().is_some_and(|n| n != "__pycache__") {
                exporter_inputs(&p, out);
            }
        } else if p.extension().is_some_and(|x| x == "py" || x == "c") {
            out.push(p);
        }
    }
}

/// The hexagon-v65 export of `onnx` (`--reference`, the mock's launch fixture recorded into `<dir>/fixture`) in a
/// directory every test process shares: `target/e2e/hexagon/shared/<key>`, where the key is the SHA-256 of the
/// model, the interpreter's path and every exporter and DSP source file. A process that finds the directory uses
/// it; otherwise it exports into a private directory and renames it into place (a concurrent winner is kept).
pub fn shared_export(py: &Path, onnx: &Path) -> PathBuf {
    use sha2::{Digest, Sha256};
    let mut files = Vec::new();
    exporter_inputs(&root().join("xtask/exporter"), &mut files);
    exporter_inputs(&root().join("qcom/hexagon/dsp"), &mut files);
    files.sort();
    let mut h = Sha256::new();
    h.update(std::fs::read(onnx).unwrap());
    h.update(py.as_os_str().as_encoded_bytes());
    for f in &files {
        h.update(
            f.strip_prefix(root())
                .unwrap()
                .as_os_str()
                .as_encoded_bytes(),
        );
        h.update(std::fs::read(f).unwrap());
    }
    let key: String = h.finalize()[..12]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let shared = dir().join("shared");
    let done = shared.join(&key);
    if !done.join("manifest.json").exists() {
        let tmp = shared.join(format!("{key}.{}.tmp", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        std::fs::create_dir_all(&tmp).unwrap();
        export(
            py,
            onnx,
            &tmp,
            &[("MODELRT_DSP_FIXTURE", &tmp.join("fixture"))],
        );
        if std::fs::rename(&tmp, &done).is_err() {
            assert!(
                done.join("manifest.json").exists(),
                "cannot place {}",
                done.display()
            );
            let _ = std::fs::remove_dir_all(&tmp);
        }
    }
    done
}

/// The small QDQ model: bundle + the mock's per-launch fixture (one export shared by the test processes).
pub fn small_qdq(py: &Path) -> &'static (Vec<u8>, PathBuf) {
    static B: OnceLock<(Vec<u8>, PathBuf)> = OnceLock::new();
    B.get_or_init(|| {
        let onnx = &models(py).0;
        let out = shared_export(py, onnx);
        (build(&out, onnx, true), out.join("fixture"))
    })
}
