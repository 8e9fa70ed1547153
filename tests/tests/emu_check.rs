//! The compile-time check on the target's executing model (`xtask/src/emu_check.rs`): an ONNX compile for
//! adreno-a630 or amd-gfx1100 runs the bundle on qcom-emu / usb-emu (hexagon-v65 on dsp-emu: tests/tests/hexagon_models.rs) on seeded inputs and compares it with
//! onnxruntime before writing it. Without `--reference` the written bundle carries no reference and is the
//! same bytes as a `--no-emu-check` compile; an output the model computes differently from onnxruntime is
//! refused with one line and nothing is written.
use std::path::{Path, PathBuf};

use modelrt_core::bundle::Bundle;
use modelrt_tests::{python, root};
use xtask::bundle_build::reference_spec;
use xtask::emu_check::{check, check_embedded, device_for};
use xtask::exporter::ExportArgs;
use xtask::manifest::Manifest;

fn out(name: &str) -> PathBuf {
    let d = root().join("target/e2e/emu-check");
    std::fs::create_dir_all(&d).unwrap();
    d.join(format!("{name}.mrt"))
}

fn policy(target: &str, emu_check: bool) -> ExportArgs {
    let mut a = ExportArgs::onnx(root().join("xtask/models/policy.onnx"), target, "");
    a.emu_check = emu_check;
    a
}

/// Compile policy for `target` with the check and without; both bundles must be identical and
/// reference-free, and the check must have run on `device` within the fp32 tolerance.
fn checked_equals_unchecked(py: &Path, target: &str, device: &str) {
    let checked = out(&format!("policy-{target}-checked"));
    let r = xtask::compile::compile(py, policy(target, true), &checked).unwrap();
    let c = r.emu_check.expect("the check ran");
    assert_eq!(c.device, device);
    assert!(c.max_abs <= 1e-4, "{target}: max abs err {:e}", c.max_abs);
    let unchecked = out(&format!("policy-{target}-unchecked"));
    let r = xtask::compile::compile(py, policy(target, false), &unchecked).unwrap();
    assert!(r.emu_check.is_none());
    let (a, b) = (
        std::fs::read(&checked).unwrap(),
        std::fs::read(&unchecked).unwrap(),
    );
    assert!(
        Bundle::parse(&a).unwrap().body().reference.is_none(),
        "{target}: the reference the check used was left in the bundle"
    );
    assert!(a == b, "{target}: the check changed the bundle's bytes");
}

#[test]
fn adreno_compile_is_checked_on_the_ir3_interpreter_and_writes_the_same_bundle() {
    let Some(py) = python() else { return };
    checked_equals_unchecked(&py, "adreno-a630", "qcom-emu");
}

#[test]
fn amd_compile_is_checked_on_the_rdna3_interpreter_and_writes_the_same_bundle() {
    let Some(py) = python() else { return };
    checked_equals_unchecked(&py, "amd-gfx1100", "usb-emu");
}

#[test]
fn targets_without_an_executing_model_are_not_checked() {
    for t in ["cpu-x86_64", "cpu-aarch64", "amd-gfx1201"] {
        assert!(device_for(t).is_none(), "{t}");
    }
}

/// Fault injection: the check compares the emulated outputs with onnxruntime's, so a program that computes
/// something else is refused — here onnxruntime's expected output in the exporter's manifest is moved by 0.5 in
/// one element (the same comparison a miscompiled kernel would fail).
#[test]
fn an_output_the_model_computes_differently_is_refused_in_one_line() {
    let Some(py) = python() else { return };
    let path = out("policy-adreno-a630-tamper");
    let mut args = policy("adreno-a630", false);
    args.reference = true;
    xtask::compile::compile(&py, args, &path).unwrap();
    // compile() exports into target/modelrt-export/<stem>-<target> and leaves the manifest there.
    let dir = root().join("target/modelrt-export/policy-adreno-a630-tamper-adreno-a630");
    let mut m = Manifest::load(&dir).unwrap();
    let dev = device_for("adreno-a630").unwrap();
    let r = m.reference.clone().unwrap();
    let bundle = xtask::bundle_build::build(&m).unwrap();
    let spec = reference_spec(&m, &r).unwrap();
    assert!(check(&bundle, &spec, dev).is_ok());
    assert!(check_embedded(&bundle, dev).is_ok());
    let blob = r.outputs.values().next().unwrap().clone();
    let bytes = m.blobs.get_mut(&blob).unwrap();
    let v = f32::from_le_bytes(bytes[4..8].try_into().unwrap()) + 0.5;
    bytes[4..8].copy_from_slice(&v.to_le_bytes());
    let spec = reference_spec(&m, &r).unwrap();
    let err = format!("{:#}", check(&bundle, &spec, dev).unwrap_err());
    assert!(!err.contains('\n'), "not one line: {err}");
    assert!(
        err.contains("wrong outputs on qcom-emu")
            && err.contains("1 of ")
            && err.contains("element 1"),
        "{err}"
    );
}
