//! Compiling a case for a device's target and running a bundle on a device.
use std::path::{Path, PathBuf};

use modelrt_core::bundle::Bundle;
use modelrt_targets::runner::{load, LoadOptions, LoadedModel};
use xtask::exporter::{ExportArgs, Source};

use crate::devices::Dev;

/// The suite's ONNX cases, written once per process by the exporter's tool.
pub fn models(py: &Path) -> PathBuf {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let dir = modelrt_tests::root().join("target/e2e/cts");
        let st = std::process::Command::new(py)
            .arg(modelrt_tests::root().join("xtask/exporter/tools/make_cts_models.py"))
            .arg(&dir)
            .status()
            .expect("python runs");
        assert!(st.success(), "make_cts_models.py failed");
        dir
    })
    .clone()
}

/// `NAME.onnx` of the suite compiled for `dev`'s target with onnxruntime's reference embedded.
pub fn compile_onnx(py: &Path, name: &str, dev: &Dev) -> Vec<u8> {
    let onnx = models(py).join(format!("{name}.onnx"));
    let path = modelrt_tests::compile(py, &onnx, dev.target, true, "-cts");
    std::fs::read(path).unwrap()
}

fn script_args(script: &str, dev: &Dev) -> ExportArgs {
    let mut args = ExportArgs::onnx(
        PathBuf::new(),
        dev.target.parse().expect("a target name"),
        PathBuf::new(),
    );
    args.source = Source::Tinygrad(
        modelrt_tests::root()
            .join(script)
            .to_string_lossy()
            .into_owned(),
    );
    args
}

/// The suite's tinygrad `SCRIPT.py:FN` compiled for `dev`'s target.
pub fn compile_script(py: &Path, script: &str, dev: &Dev) -> Vec<u8> {
    let path = modelrt_tests::compile_args(py, script_args(script, dev), "-cts");
    std::fs::read(path).unwrap()
}

/// [`compile_script`] that returns the compile's error instead of panicking.
pub fn try_compile_script(py: &Path, script: &str, dev: &Dev) -> anyhow::Result<Vec<u8>> {
    let out = modelrt_tests::root()
        .join("target/e2e/cts")
        .join(format!("refused-{}.mrt", dev.target));
    xtask::compile::compile(py, script_args(script, dev), &out)?;
    Ok(std::fs::read(out)?)
}

/// Load `bytes` on `dev` (panics naming the device when it cannot).
pub fn open<'b>(bytes: &'b [u8], dev: &Dev) -> Box<dyn LoadedModel<'b> + 'b> {
    let bundle = Bundle::parse(bytes).unwrap_or_else(|e| panic!("{}: {e}", dev.target));
    load(bundle, LoadOptions::on(dev.device))
        .unwrap_or_else(|e| panic!("{}: cannot load: {e:#}", dev.device.name()))
}

/// Output buffers sized as the bundle declares.
pub fn outputs(model: &dyn LoadedModel<'_>) -> Vec<Vec<u8>> {
    model
        .bundle()
        .body()
        .outputs
        .iter()
        .map(|t| vec![0u8; t.unwrap().byte_len() as usize])
        .collect()
}

/// Run one step; returns the outputs.
pub fn step(model: &mut dyn LoadedModel<'_>, inputs: &[Vec<u8>]) -> anyhow::Result<Vec<Vec<u8>>> {
    let ins: Vec<&[u8]> = inputs.iter().map(|v| v.as_slice()).collect();
    let mut outs = outputs(model);
    let mut refs: Vec<&mut [u8]> = outs.iter_mut().map(|v| v.as_mut_slice()).collect();
    model.run(&ins, &mut refs)?;
    Ok(outs)
}

/// Little-endian f32 values.
pub fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// For a device that computes nothing (the null skeleton): true after checking that running `ins` is an error naming
/// the device's reason, never outputs; false for a device that computes (the caller checks its outputs).
pub fn refuses_to_compute(
    model: &mut dyn LoadedModel<'_>,
    ins: &[Vec<u8>],
    case: &str,
    dev: &Dev,
) -> bool {
    if model.computes_outputs() {
        return false;
    }
    let e = step(model, ins).expect_err("a device that computes nothing returned outputs");
    assert!(
        format!("{e:#}").contains("runs no kernels"),
        "{case} on {}: refused for another reason: {e:#}",
        dev.device.name()
    );
    eprintln!(
        "cts {case}: {} computes nothing and says so",
        dev.device.name()
    );
    true
}
