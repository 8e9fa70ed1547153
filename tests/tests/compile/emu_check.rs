//! The compile-time check on the target's executing model (`xtask/src/emu_check.rs`): an ONNX compile for
//! adreno-a630 or amd-gfx1100 runs the bundle on qcom-emu / usb-emu (hexagon-v65 on dsp-emu: tests/tests/hexagon/hexagon_models.rs) on seeded inputs and compares it with
//! onnxruntime before writing it. Without `--reference` the written bundle carries no reference and is the
//! same bytes as a `--no-emu-check` compile; an output the model computes differently from onnxruntime is
//! refused with one line and nothing is written.
//! A float16 model passes at its outputs' own resolution; `--tinygrad` programs are checked too (against
//! tinygrad's own run of the script's first seeded step), or the compile says they were not.
use modelrt_hal::target::TargetName;
use std::path::{Path, PathBuf};

use modelrt_core::bundle::Bundle;
use modelrt_tests::{python, root};
use xtask::bundle_build::reference_spec;
use xtask::emu_check::{check, check_embedded, device_for};
use xtask::exporter::{ExportArgs, Source};
use xtask::manifest::Manifest;

fn out(name: &str) -> PathBuf {
    let d = root().join("target/e2e/emu-check");
    std::fs::create_dir_all(&d).unwrap();
    d.join(format!("{name}.mrt"))
}

fn policy(target: &str, emu_check: bool) -> ExportArgs {
    let mut a = ExportArgs::onnx(
        root().join("xtask/models/policy.onnx"),
        target.parse().expect("a target name"),
        "",
    );
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
        assert!(
            device_for(t.parse().expect("a target name")).is_none(),
            "{t}"
        );
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
    let dev = device_for(TargetName::AdrenoA630).unwrap();
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

/// A float16 MatMul+Add+Tanh model (xtask/exporter/tools/make_correctness_models.py) compiled for
/// adreno-a630 was refused by the pre-write check (max abs err 9.8e-4 against the float32 tolerance 1e-4): its float16
/// outputs are now compared at float16's own floor, and a --reference bundle verifies on qcom-emu the same way.
#[test]
fn a_float16_model_passes_the_adreno_check_at_its_own_resolution() {
    let Some(py) = python() else { return };
    let dir = root().join("target/e2e/emu-check/models");
    let st = xtask::exporter_python::command(&py)
        .arg(xtask::exporter_python::tool("make_correctness_models.py"))
        .arg(&dir)
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    let mut args = ExportArgs::onnx(
        dir.join("float16_matmul_tanh.onnx"),
        TargetName::AdrenoA630,
        "",
    );
    args.reference = true;
    let path = out("float16_matmul_tanh-adreno-a630");
    let r = xtask::compile::compile(&py, args, &path).unwrap_or_else(|e| panic!("{e:#}"));
    let c = r.emu_check.expect("the check ran");
    assert_eq!(c.device, "qcom-emu");
    assert!(c.max_abs > 0.0 && c.max_abs < 1e-2, "{c:?}");
    let bytes = std::fs::read(&path).unwrap();
    assert!(check_embedded(&bytes, device_for(TargetName::AdrenoA630).unwrap()).is_ok());
}

/// A small stateless tinygrad program (matmul, bias, tanh) in the `--tinygrad` contract (xtask/exporter/mrt/script.py).
fn tiny_script() -> String {
    let dir = root().join("target/e2e/emu-check");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("tiny_script.py");
    std::fs::write(
        &path,
        "import numpy as np\n\
         def build():\n  \
           from tinygrad import Tensor\n  \
           rng = np.random.default_rng(5)\n  \
           w = Tensor(rng.standard_normal((8, 6)).astype(np.float32))\n  \
           b = Tensor(rng.standard_normal(6).astype(np.float32))\n  \
           def fn(x): return ((x @ w) + b).tanh().contiguous()\n  \
           return {'fn': fn, 'inputs': {'x': np.zeros((3, 8), np.float32)}, 'outputs': ['y']}\n",
    )
    .unwrap();
    format!("{}:build", path.display())
}

fn script_args(target: &str) -> ExportArgs {
    let mut a = ExportArgs::onnx("", target.parse().expect("a target name"), "");
    a.source = Source::Tinygrad(tiny_script());
    a
}

/// A `--tinygrad` compile for adreno-a630 / amd-gfx1100 runs the same pre-write check as an ONNX
/// compile, with tinygrad's own run of the script's first seeded step as the reference; `--no-emu-check` and
/// hexagon bundles without a DSP model library say the outputs were NOT checked.
#[test]
fn tinygrad_programs_are_checked_on_the_target_model() {
    let Some(py) = python() else { return };
    for (target, device) in [("adreno-a630", "qcom-emu"), ("amd-gfx1100", "usb-emu")] {
        let mut args = script_args(target);
        args.reference = true;
        let path = out(&format!("tiny-script-{target}"));
        let r =
            xtask::compile::compile(&py, args, &path).unwrap_or_else(|e| panic!("{target}: {e:#}"));
        let c = r
            .emu_check
            .unwrap_or_else(|| panic!("{target}: not checked ({:?})", r.not_checked));
        assert_eq!(c.device, device);
        assert!(c.max_abs < 1e-4, "{target}: {c:?}");
        assert!(r.not_checked.is_none());
        // the embedded reference (tinygrad's run on the host CPU) is the one the check used
        let bytes = std::fs::read(&path).unwrap();
        assert!(
            check_embedded(
                &bytes,
                device_for(target.parse().expect("a target name")).unwrap()
            )
            .is_ok(),
            "{target}"
        );

        let mut args = script_args(target);
        args.emu_check = false;
        let r =
            xtask::compile::compile(&py, args, &out(&format!("tiny-script-{target}-unchecked")))
                .unwrap();
        assert!(r.emu_check.is_none());
        assert_eq!(r.not_checked, Some((device, "--no-emu-check".to_string())));
    }
}

/// A `--tinygrad` compile for hexagon-v65 carries the DSP model library, so its outputs are checked on dsp-emu
/// before the bundle is written.
#[test]
fn tinygrad_hexagon_bundles_are_checked_on_dsp_emu() {
    let Some(py) = python() else { return };
    let path = out("tiny-script-hexagon-v65");
    let r = xtask::compile::compile(&py, script_args("hexagon-v65"), &path)
        .unwrap_or_else(|e| panic!("{e:#}"));
    let bytes = std::fs::read(&path).unwrap();
    let b = Bundle::parse(&bytes).unwrap();
    let has_library = b
        .body()
        .kernels
        .iter()
        .any(|k| k.unwrap().name == modelrt_hexagon::device::MODEL_LIBRARY);
    // the reference the check needed is not kept: this compile did not ask for --reference
    assert!(b.body().reference.is_none());
    // every hexagon compile path builds the DSP model library, so the check runs on dsp-emu
    assert!(
        has_library,
        "a --tinygrad hexagon bundle without the DSP model library"
    );
    assert_eq!(r.emu_check.map(|c| c.device), Some("dsp-emu"));
    assert!(r.not_checked.is_none());
}
