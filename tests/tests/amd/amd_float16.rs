//! 16-bit models on amd-gfx1100, run on usb-emu (AM driver → bridge emulator → Navi31 GPU model → RDNA3
//! interpreter; docs/hw/rdna3-isa.md §7 for the 16-bit operations, §4 for the census):
//!
//! - a float16 subset (and three int8/int16 cases) of ONNX's own conformance cases (`cargo xtask conformance`'s cases, generated from the
//!   installed `onnx` package) compiled for amd-gfx1100 and run on usb-emu; the outputs must match ONNX's
//!   expected outputs under ONNX's runner tolerances — the reference is ONNX's, not ours — and every
//!   instruction of their kernels decodes to the listing `llvm-objdump-19 --mcpu=gfx1100` prints;
//! - the model that once stopped the compile's pre-write check at `v_mul_f16` (an unknown VOP2 opcode): a
//!   MatMul + Add + Tanh graph with float16 input, weights and output compiles for amd-gfx1100 with the
//!   device check on, and its usb-emu outputs agree with onnxruntime within float16 precision.
//!
//! Needs the exporter's Python, LLVM 19 tools and the Navi31 firmware; without them the tests are recorded skips, which
//! fail under CI (`tests/src/skip.rs`).
use super::rdna3_support;
use modelrt_hal::target::TargetName;

use std::path::{Path, PathBuf};
use std::process::Command;

use modelrt_amd::platform::{firmware_dir, set_fallback_firmware_dir, FIRMWARE_ENV};
use modelrt_core::bundle::Bundle;
use modelrt_core::verify::compare as compare_bytes;
use modelrt_hal::target::DType;
use modelrt_targets::runner::{load, LoadOptions};
use modelrt_tests::{python, reference, root, skip};
use rdna3_support::{check, objdump};
use xtask::conformance::cases::{cases_dir, ensure_generated, load_tensor, Case};
use xtask::conformance::compare::{compare, Tensor, Verdict};
use xtask::exporter::ExportArgs;

/// float16 conformance cases, a few per kind of kernel: conversions both ways, f16 arithmetic with
/// inline f16 constants (celu: exp, fma), IEEE min/max and f16 compares, fmod-free Mod (trunc, fma,
/// compares), class tests, and a quantised matmul (f16 rcp/trunc, f16 → i16 conversion); then three int8/int16
/// cases for the 16-bit integer kernels (packed add, 16-bit multiply, i16 compares).
const CASES: &[&str] = &[
    "test_cast_FLOAT_to_FLOAT16",
    "test_cast_FLOAT16_to_FLOAT",
    "test_celu_float16",
    "test_max_float16",
    "test_min_float16",
    "test_mod_mixed_sign_float16",
    "test_isinf_float16",
    "test_isnan_float16",
    "test_qlinearmatmul_2D_uint8_float16",
    "test_add_int16",
    "test_mul_int8",
    "test_less_int8",
];

/// The Navi31 firmware directory, or `None` after a recorded skip.
fn firmware() -> Option<()> {
    const PROBE: &str = "psp_13_0_0_sos.bin";
    if !firmware_dir().join(PROBE).exists() && std::env::var_os(FIRMWARE_ENV).is_none() {
        let ours = root().join("target/amdgpu-firmware");
        if ours.join(PROBE).exists() {
            set_fallback_firmware_dir(ours);
        }
    }
    skip::require(
        firmware_dir().join(PROBE).exists().then_some(()),
        "no Navi31 firmware (set MODELRT_AMD_FIRMWARE_DIR or run `cargo xtask firmware`)",
    )
}

fn out_dir() -> PathBuf {
    let d = root().join("target/e2e/amd-float16");
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Run `bundle` on usb-emu with `inputs` (in the bundle's input order); returns each output's bytes.
fn run_usb_emu(bundle: &[u8], inputs: &[&[u8]]) -> Vec<Vec<u8>> {
    let b = Bundle::parse(bundle).unwrap();
    let sizes: Vec<usize> = b
        .body()
        .outputs
        .iter()
        .map(|t| t.unwrap().byte_len() as usize)
        .collect();
    let mut model = load(
        b,
        LoadOptions::on(modelrt_targets::runner::device("usb-emu").unwrap()),
    )
    .unwrap();
    let mut got: Vec<Vec<u8>> = sizes.iter().map(|&n| vec![0u8; n]).collect();
    let mut refs: Vec<&mut [u8]> = got.iter_mut().map(Vec::as_mut_slice).collect();
    model.run(inputs, &mut refs).unwrap();
    got
}

fn run_case(py: &Path, name: &str) -> Result<f64, String> {
    let case = Case::load(&cases_dir(&root()).join(name)).map_err(|e| format!("{e:#}"))?;
    let out = out_dir().join(format!("{name}.mrt"));
    // The outputs are compared with ONNX's expected values below, on the same device the pre-write check
    // would use.
    let mut args = ExportArgs::onnx(case.model(), TargetName::AmdGfx1100, "");
    args.emu_check = false;
    xtask::compile::compile(py, args, &out).map_err(|e| format!("compile: {e:#}"))?;
    let bytes = std::fs::read(&out).unwrap();
    let b = Bundle::parse(&bytes).unwrap();
    for k in b.body().kernels.iter() {
        let k = k.unwrap();
        check::against_llvm(&out_dir(), &format!("{name}-{}", k.entry), k.binary)?;
    }
    let mut inputs = Vec::new();
    for d in b.body().inputs.iter() {
        let d = d.unwrap();
        let v = case
            .inputs
            .iter()
            .find(|v| v.name == d.name)
            .ok_or_else(|| format!("bundle input {} is not a case input", d.name))?;
        let t = load_tensor(&case.file(v).unwrap(), v.dtype.as_deref()).unwrap();
        inputs.push(t.data);
    }
    let ins: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
    let got = run_usb_emu(&bytes, &ins);
    let expected = case.expected().map_err(|e| format!("{e:#}"))?;
    let actual: Vec<Tensor> = got
        .into_iter()
        .zip(&expected)
        .map(|(data, e)| Tensor {
            dtype: e.dtype.clone(),
            shape: e.shape.clone(),
            data,
        })
        .collect();
    match compare(&actual, &expected, case.rtol, case.atol) {
        Verdict::Match { max_err } => Ok(max_err),
        Verdict::Mismatch { reason, .. } => Err(reason),
    }
}

#[test]
fn float16_and_16_bit_integer_conformance_subset_matches_onnx_on_usb_emu() {
    let Some(py) = python() else { return };
    let Some(()) = firmware() else { return };
    if !objdump::available() {
        skip::skip("llvm-objdump-19 not installed (Debian package llvm-19; `cargo xtask setup`)");
        return;
    }
    ensure_generated(&root(), &py).unwrap();
    let mut bad = Vec::new();
    for name in CASES {
        match run_case(&py, name) {
            Ok(err) => eprintln!("{name}: matches ONNX (max abs err {err:.3e})"),
            Err(why) => bad.push(format!("{name}: {why}")),
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// y = tanh(x · W + B), all float16: the shape of model a new user wrote.
const MATMUL_ADD_TANH: &str = r#"
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
rng = np.random.default_rng(0)
w = numpy_helper.from_array((rng.standard_normal((16, 10)) * 0.25).astype(np.float16), "W")
b = numpy_helper.from_array((rng.standard_normal(10) * 0.1).astype(np.float16), "B")
g = helper.make_graph(
    [helper.make_node("MatMul", ["x", "W"], ["m"]), helper.make_node("Add", ["m", "B"], ["a"]),
     helper.make_node("Tanh", ["a"], ["y"])],
    "matmul_add_tanh_f16", [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [2, 16])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [2, 10])], [w, b])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
m.ir_version = 8
onnx.checker.check_model(m)
onnx.save(m, sys.argv[1])
"#;

#[test]
fn float16_matmul_add_tanh_compiles_for_gfx1100_with_the_device_check() {
    let Some(py) = python() else { return };
    let Some(()) = firmware() else { return };
    let onnx = out_dir().join("matmul_add_tanh_f16.onnx");
    let st = Command::new(&py)
        .arg("-c")
        .arg(MATMUL_ADD_TANH)
        .arg(&onnx)
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );

    // The compile with the pre-write check on must get the bundle through usb-emu: before the 16-bit
    // operations existed it stopped at `unsupported instruction … (unknown VOP1/VOP2/VOPC opcode)`.
    let mut args = ExportArgs::onnx(&onnx, TargetName::AmdGfx1100, "");
    args.emu_check = true;
    let checked = out_dir().join("matmul_add_tanh_f16-checked.mrt");
    // Float16 outputs are compared at their own resolution (core/src/verify.rs), so the compile must
    // pass the check outright.
    let r = xtask::compile::compile(&py, args, &checked).unwrap_or_else(|e| panic!("{e:#}"));
    assert_eq!(r.emu_check.expect("the check ran").device, "usb-emu");

    // The same graph with the onnxruntime reference embedded, run on usb-emu: within float16 precision
    // (a few f16 ulps of outputs in (−1, 1): tinygrad computes tanh from exp in f16).
    let mut args = ExportArgs::onnx(&onnx, TargetName::AmdGfx1100, "");
    args.emu_check = false;
    args.reference = true;
    let with_ref = out_dir().join("matmul_add_tanh_f16-ref.mrt");
    xtask::compile::compile(&py, args, &with_ref).unwrap();
    let bytes = std::fs::read(&with_ref).unwrap();
    let (ins, want, _, _) = reference(&bytes);
    let ins: Vec<&[u8]> = ins.iter().map(Vec::as_slice).collect();
    let got = run_usb_emu(&bytes, &ins);
    let c = compare_bytes(DType::F16, &got[0], &want[0], 4e-3, 0.0);
    assert!(c.ok(), "{c:?}");
    assert!(got[0].iter().any(|&x| x != 0), "all-zero output");
}
