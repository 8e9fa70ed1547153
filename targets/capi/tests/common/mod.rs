//! What the C API tests share: the demo bundle, its embedded reference, and calling the API from Rust
//! the way a C caller would.
#![allow(dead_code)]
use std::ffi::{c_void, CStr, CString};
use std::path::PathBuf;

use modelrt::ffi::*;
use modelrt::info::MrtTensorInfo;
use modelrt_core::bundle::Bundle;

/// The host's demo bundle (checked in; it embeds a reference).
pub fn demo() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../assets");
    root.join(format!("demo-{}.mrt", std::env::consts::ARCH))
}

/// The bundle's embedded reference: inputs, expected outputs, atol, rtol.
pub fn reference() -> (Vec<Vec<u8>>, Vec<Vec<u8>>, f32, f32) {
    let bytes = std::fs::read(demo()).unwrap();
    let b = Bundle::parse(&bytes).unwrap();
    let r = b
        .body()
        .reference
        .expect("the demo bundle embeds a reference");
    let ins = r.inputs.iter().map(|t| t.unwrap().data.to_vec()).collect();
    let outs = r.outputs.iter().map(|t| t.unwrap().data.to_vec()).collect();
    (ins, outs, r.atol, r.rtol)
}

pub fn last_error() -> String {
    // SAFETY: mrt_last_error never returns NULL and the string lives until the next call here.
    unsafe { CStr::from_ptr(mrt_last_error()) }
        .to_string_lossy()
        .into_owned()
}

/// Load `path` on `device`; the status and the handle (NULL on error).
pub fn load(path: &str, device: Option<&str>) -> (i32, *mut MrtModel) {
    let p = CString::new(path).unwrap();
    let d = device.map(|d| CString::new(d).unwrap());
    let mut m = std::ptr::null_mut();
    // SAFETY: valid C strings (or NULL) and a writable handle slot.
    let rc = unsafe {
        mrt_model_load(
            p.as_ptr(),
            d.as_ref().map_or(std::ptr::null(), |d| d.as_ptr()),
            &mut m,
        )
    };
    (rc, m)
}

/// `mrt_model_input_info` / `mrt_model_output_info` into a fresh struct.
///
/// # Safety
/// `m` is NULL or a live handle.
pub unsafe fn info(m: *const MrtModel, output: bool, i: usize) -> (i32, MrtTensorInfo) {
    let mut t = MrtTensorInfo::default();
    // SAFETY: `m` is NULL or a live handle (the caller's contract) and `t` is writable.
    let rc = unsafe {
        if output {
            mrt_model_output_info(m, i, &mut t)
        } else {
            mrt_model_input_info(m, i, &mut t)
        }
    };
    (rc, t)
}

/// Pointer and size arrays for `mrt_model_run`.
pub struct Io {
    pub ins: Vec<*const c_void>,
    pub in_sizes: Vec<usize>,
    pub outs: Vec<*mut c_void>,
    pub out_sizes: Vec<usize>,
}

impl Io {
    pub fn new(inputs: &[Vec<u8>], outputs: &mut [Vec<u8>]) -> Io {
        Io {
            ins: inputs.iter().map(|b| b.as_ptr().cast()).collect(),
            in_sizes: inputs.iter().map(Vec::len).collect(),
            outs: outputs.iter_mut().map(|b| b.as_mut_ptr().cast()).collect(),
            out_sizes: outputs.iter().map(Vec::len).collect(),
        }
    }

    /// `mrt_model_run` with these arrays.
    ///
    /// # Safety
    /// `m` is NULL or a live handle, and the buffers the arrays point at are still alive.
    pub unsafe fn run(&self, m: *mut MrtModel) -> i32 {
        // SAFETY: every array holds the model's count of elements pointing at live buffers of the
        // sizes given (or the test deliberately gives a wrong size, which is checked before use).
        unsafe {
            mrt_model_run(
                m,
                self.ins.as_ptr(),
                self.in_sizes.as_ptr(),
                self.outs.as_ptr(),
                self.out_sizes.as_ptr(),
            )
        }
    }
}
