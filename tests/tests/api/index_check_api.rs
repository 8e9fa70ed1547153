//! Index-input range checks through the C and Python APIs: the Gather bundle of
//! `xtask/exporter/tools/make_index_models.py` (a 50-row table; the CLI and Rust paths are tested in
//! `tests/tests/cpu/index_inputs.rs`) is run with onnxruntime's refused index values (1000000 at element 1) and
//! with its accepted ones. `mrt_model_run` must return `MRT_ERR_RUN` with `mrt_last_error` naming the input, the
//! element and the range, and `modelrt.load(...).run({...})` must raise `modelrt.Error` saying the same; the
//! in-range values must give onnxruntime's outputs on both.
use std::ffi::{c_void, CStr, CString};
use std::path::{Path, PathBuf};
use std::process::Command;

use modelrt::error::{MRT_ERR_RUN, MRT_OK};
use modelrt::ffi::*;
use modelrt_targets::npy;
use modelrt_tests::{compile, python, root};

/// The start of the refusal for `gather.bad_idx.npy`, the same on every path.
const REFUSAL: &str =
    "input 'idx' element 1 is 1000000, outside the valid range -50..=49 (indices of Gather 'g0'";

/// The models and onnxruntime's answers in `target/e2e/index-api/`, and the Gather bundle compiled for the host.
fn gather_bundle(py: &Path) -> (PathBuf, PathBuf) {
    let dir = root().join("target/e2e/index-api");
    let o = Command::new(py)
        .arg(root().join("xtask/exporter/tools/make_index_models.py"))
        .arg(&dir)
        .output()
        .expect("python runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let target = format!("cpu-{}", std::env::consts::ARCH);
    let bundle = compile(py, &dir.join("gather.onnx"), &target, false, "-index-api");
    (dir, bundle)
}

fn npy_data(p: &Path) -> Vec<u8> {
    npy::parse(&std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display())))
        .unwrap()
        .data
        .to_vec()
}

fn last_error() -> String {
    // SAFETY: mrt_last_error never returns NULL; the string lives until the next API call on this thread.
    unsafe { CStr::from_ptr(mrt_last_error()) }
        .to_string_lossy()
        .into_owned()
}

/// `mrt_model_run` of the one-input, one-output bundle `m` on `idx`; the status and the output bytes.
fn c_run(m: *mut MrtModel, idx: &[u8]) -> (i32, Vec<u8>) {
    let mut y = vec![0u8; 3 * 4 * 4];
    let ins = [idx.as_ptr().cast::<c_void>()];
    let in_sizes = [idx.len()];
    let outs = [y.as_mut_ptr().cast::<c_void>()];
    let out_sizes = [y.len()];
    // SAFETY: `m` is a live handle; one input and one output array of the model's counts, pointing at live
    // buffers of the sizes given.
    let rc = unsafe {
        mrt_model_run(
            m,
            ins.as_ptr(),
            in_sizes.as_ptr(),
            outs.as_ptr(),
            out_sizes.as_ptr(),
        )
    };
    (rc, y)
}

#[test]
fn c_api_refuses_an_out_of_range_index_naming_input_element_and_range() {
    let Some(py) = python() else { return };
    let (dir, bundle) = gather_bundle(&py);
    let path = CString::new(bundle.to_str().unwrap()).unwrap();
    let device = CString::new("cpu").unwrap();
    let mut m = std::ptr::null_mut();
    // SAFETY: valid C strings and a writable handle slot.
    let rc = unsafe { mrt_model_load(path.as_ptr(), device.as_ptr(), &mut m) };
    assert_eq!(rc, MRT_OK, "{}", last_error());

    let (rc, y) = c_run(m, &npy_data(&dir.join("gather.bad_idx.npy")));
    let msg = last_error();
    assert_eq!(rc, MRT_ERR_RUN, "{msg}");
    assert!(msg.contains(REFUSAL), "{msg}");
    assert!(y.iter().all(|&b| b == 0), "a refused run wrote its output");

    // The same handle still runs in-range values (both ends, a negative index): onnxruntime's output.
    let (rc, y) = c_run(m, &npy_data(&dir.join("gather.ok_idx.npy")));
    assert_eq!(rc, MRT_OK, "{}", last_error());
    assert_eq!(y, npy_data(&dir.join("gather.ort_y.npy")));
    // SAFETY: live handle, freed once.
    unsafe { mrt_model_free(m) };
}

/// Run from the installed wheel: the refusal is `modelrt.Error` with the message, and in-range values equal
/// onnxruntime's output.
const FROM_PYTHON: &str = r#"
import sys
from pathlib import Path
import numpy as np
import modelrt
d, bundle, want = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
m = modelrt.load(bundle, device="cpu")
try:
  m.run({"idx": np.load(d / "gather.bad_idx.npy")})
  raise SystemExit("an out-of-range index was accepted")
except modelrt.Error as e:
  assert want in str(e), str(e)
  print(f"refused: {e}")
y = m.run({"idx": np.load(d / "gather.ok_idx.npy")})["y"]
ref = np.load(d / "gather.ort_y.npy")
assert y.dtype == ref.dtype and y.shape == ref.shape and y.tobytes() == ref.tobytes(), (y, ref)
"#;

#[test]
#[ignore = "heavy: run by `cargo xtask ci --full` (docs/testing.md)"]
fn python_api_raises_modelrt_error_naming_input_element_and_range() {
    let Some(py) = python() else { return };
    let (dir, bundle) = gather_bundle(&py);
    let wheel = xtask::wheel::build(false, Some(&py)).expect("cargo xtask wheel builds");
    let site = root().join("target/python-test-index/site");
    let _ = std::fs::remove_dir_all(&site);
    let o = Command::new(&py)
        .args([
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--no-index",
            "--quiet",
            "--target",
        ])
        .arg(&site)
        .arg(&wheel)
        .output()
        .expect("pip runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = Command::new(&py)
        .args(["-c", FROM_PYTHON])
        .arg(&dir)
        .arg(&bundle)
        .arg(REFUSAL)
        .env("PYTHONPATH", &site)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("python runs");
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert!(o.status.success(), "{out}\n{err}");
    assert!(out.contains(REFUSAL), "{out}");
}
