//! Converted QCOM/IR3 compile3 pickles through the IR3 interpreter of the KGSL model.
//!
//! - fp32: a pickle made with tinygrad's real QCOM backend on the fake KGSL (`xtask/exporter/tools/make_qcom_pickle.py`)
//!   holds the model's weights byte for byte (no derived weights in fp32), so its converted bundle, run on
//!   `--device qcom-emu`, gives the outputs of the ONNX-compiled adreno-a630 bundle of the same model on the same
//!   inputs — which in turn match onnxruntime's (the ONNX bundle's embedded reference) within fp32's 1e-4.
//! - IMAGE=1 FLOAT16=1: tinygrad derives the half/image weights with GPU kernels the fake KGSL never runs, so those
//!   buffers hold zeros; `convert` must say so with one warning line instead of silently producing a bundle that
//!   computes wrong outputs, and must not warn for the fp32 pickle.
use modelrt_hal::target::TargetName;
use std::path::{Path, PathBuf};
use std::process::Command;

use modelrt_core::bundle::Bundle;
use modelrt_core::verify::compare;
use modelrt_hal::target::DType;
use modelrt_targets::runner::{load, LoadOptions};
use modelrt_tests::{compile_args, python, reference, root};
use xtask::exporter::{script_path, ExportArgs, Source};

const ATOL: f64 = 1e-4;

fn workdir(name: &str) -> PathBuf {
    let d = root().join("target/convert_pickle_ir3").join(name);
    if d.exists() {
        std::fs::remove_dir_all(&d).unwrap();
    }
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A QCOM/IR3 pickle of `xtask/models/{model}.onnx` (`--image`: IMAGE=1 FLOAT16=1).
fn qcom_pickle(py: &Path, model: &str, image: bool, dir: &Path) -> PathBuf {
    let pkl = dir.join(format!("{model}{}.pkl", if image { "-image" } else { "" }));
    let mut cmd = Command::new(py);
    cmd.arg(root().join("xtask/exporter/tools/make_qcom_pickle.py"))
        .arg(root().join(format!("xtask/models/{model}.onnx")))
        .arg(&pkl)
        .env("PYTHONDONTWRITEBYTECODE", "1");
    for k in ["DEV", "IMAGE", "FLOAT16", "CPU", "QCOM", "NULL"] {
        cmd.env_remove(k);
    }
    if image {
        cmd.arg("--image");
    }
    let out = cmd.output().expect("python runs");
    assert!(
        out.status.success(),
        "make_qcom_pickle.py {model}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    pkl
}

/// The exporter's stderr when converting `pkl` (what `cargo xtask convert` prints), after checking it succeeded.
fn convert_stderr(py: &Path, pkl: &Path, dir: &Path) -> String {
    let mut args = ExportArgs::pickle(pkl, dir.join("manifest"));
    args.source = Source::Pickle(pkl.to_path_buf());
    let out = Command::new(py)
        .arg(script_path())
        .args(args.to_argv())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("python runs");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "convert {}: {err}", pkl.display());
    err
}

/// Run `bytes` on `--device qcom-emu` with inputs given by name.
fn run_emu(bytes: &[u8], inputs: &[(String, Vec<u8>)]) -> Vec<(String, DType, Vec<u8>)> {
    let b = Bundle::parse(bytes).unwrap();
    let ins: Vec<Vec<u8>> = b
        .body()
        .inputs
        .iter()
        .map(|t| {
            let t = t.unwrap();
            let (_, d) = inputs
                .iter()
                .find(|(n, _)| n == t.name)
                .unwrap_or_else(|| panic!("no input '{}'", t.name));
            assert_eq!(d.len() as u64, t.byte_len(), "input '{}'", t.name);
            d.clone()
        })
        .collect();
    let outs: Vec<(String, DType, usize)> = b
        .body()
        .outputs
        .iter()
        .map(|t| {
            let t = t.unwrap();
            (t.name.to_string(), t.dtype, t.byte_len() as usize)
        })
        .collect();
    let mut m = load(
        b,
        LoadOptions::on(modelrt_targets::runner::device("qcom-emu").unwrap()),
    )
    .unwrap();
    assert!(m.computes_outputs());
    let mut bufs: Vec<Vec<u8>> = outs.iter().map(|(_, _, n)| vec![0u8; *n]).collect();
    let ins: Vec<&[u8]> = ins.iter().map(Vec::as_slice).collect();
    let mut refs: Vec<&mut [u8]> = bufs.iter_mut().map(Vec::as_mut_slice).collect();
    m.run(&ins, &mut refs).unwrap_or_else(|e| panic!("{e:#}"));
    outs.into_iter()
        .zip(bufs)
        .map(|((n, d, _), b)| (n, d, b))
        .collect()
}

#[test]
fn fp32_qcom_pickle_computes_the_same_outputs_as_its_onnx_compile() {
    let Some(py) = python() else { return };
    let dir = workdir("fp32");
    let pkl = qcom_pickle(&py, "policy", false, &dir);
    let err = convert_stderr(&py, &pkl, &dir);
    assert!(!err.contains("warning:"), "fp32 pickle: {err}");
    let conv = dir.join("policy-pickle.mrt");
    let mut args = ExportArgs::pickle(&pkl, "");
    args.source = Source::Pickle(pkl.clone());
    xtask::compile::compile(&py, args, &conv).unwrap();
    let conv = std::fs::read(conv).unwrap();

    let mut args = ExportArgs::onnx(
        root().join("xtask/models/policy.onnx"),
        TargetName::AdrenoA630,
        "",
    );
    args.reference = true;
    let onnx = std::fs::read(compile_args(&py, args, "-ir3")).unwrap();
    let (ref_in, ref_out, _, _) = reference(&onnx);
    let names: Vec<String> = Bundle::parse(&onnx)
        .unwrap()
        .body()
        .inputs
        .iter()
        .map(|t| t.unwrap().name.to_string())
        .collect();
    let inputs: Vec<(String, Vec<u8>)> = names.into_iter().zip(ref_in).collect();

    let from_onnx = run_emu(&onnx, &inputs);
    let from_pickle = run_emu(&conv, &inputs);
    assert_eq!(from_pickle.len(), 1, "the pickle returns one output");
    for ((name, dt, o), want) in from_onnx.iter().zip(&ref_out) {
        // make_test_pickle.py's jit returns the model's first output, under tinygrad's own name.
        let (_, pdt, p) = from_pickle
            .iter()
            .find(|(n, _, _)| n == name)
            .or(from_pickle.first().filter(|_| from_onnx.len() == 1))
            .unwrap_or_else(|| panic!("the pickle bundle has no output '{name}'"));
        assert_eq!(pdt, dt, "{name}: dtype");
        let c = compare(*dt, o, want, ATOL, ATOL);
        assert!(c.ok(), "ONNX bundle vs onnxruntime, {name}: {c:?}");
        let c = compare(*dt, p, o, ATOL, ATOL);
        assert!(c.ok(), "pickle bundle vs ONNX bundle, {name}: {c:?}");
        let c = compare(*dt, p, want, ATOL, ATOL);
        assert!(c.ok(), "pickle bundle vs onnxruntime, {name}: {c:?}");
        assert!(
            p.chunks_exact(4).any(|x| x != [0; 4]),
            "{name}: all-zero output"
        );
        println!(
            "policy pickle {name}: max abs err vs onnxruntime {:.3e}",
            c.max_abs
        );
    }
}

#[test]
fn image_qcom_pickle_with_zero_derived_weights_is_flagged() {
    let Some(py) = python() else { return };
    let dir = workdir("image");
    let pkl = qcom_pickle(&py, "policy", true, &dir);
    let err = convert_stderr(&py, &pkl, &dir);
    let warnings: Vec<&str> = err.lines().filter(|l| l.contains("warning:")).collect();
    assert_eq!(warnings.len(), 1, "one warning line: {err}");
    assert!(
        warnings[0].contains("hold only zeros") && warnings[0].contains("wrong outputs"),
        "{}",
        warnings[0]
    );
}
