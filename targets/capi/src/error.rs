//! Status codes of the C API and the thread-local last-error message behind `mrt_last_error`.
use std::cell::RefCell;
use std::ffi::{c_char, CString};

/// Success.
pub const MRT_OK: i32 = 0;
/// A NULL pointer, a bad index, a wrong count or size, a bad string (never undefined behaviour).
pub const MRT_ERR_INVALID_ARGUMENT: i32 = 1;
/// The bundle file or the device could not be opened or loaded.
pub const MRT_ERR_LOAD: i32 = 2;
/// The device failed to run the model or reset its state.
pub const MRT_ERR_RUN: i32 = 3;
/// A bug inside modelrt (a Rust panic), caught at the boundary.
pub const MRT_ERR_PANIC: i32 = 4;
/// A trust store is set and the bundle is unsigned, signed by another key or changed after signing:
/// refused before any of its code was mapped or run (docs/signing.md).
pub const MRT_ERR_UNTRUSTED: i32 = 5;

thread_local! {
    static LAST: RefCell<CString> = RefCell::new(CString::default());
}

/// An error of the C API: its status code and message.
#[derive(Debug)]
pub struct CError {
    pub code: i32,
    pub message: String,
}

impl CError {
    pub fn invalid(message: impl Into<String>) -> Self {
        CError {
            code: MRT_ERR_INVALID_ARGUMENT,
            message: message.into(),
        }
    }
}

/// Record `message` as this thread's last error (interior NULs become spaces).
pub fn set_last(message: &str) {
    let c = CString::new(message.replace('\0', " ")).unwrap_or_default();
    LAST.with(|l| *l.borrow_mut() = c);
}

/// Clear this thread's last error (a call that succeeds leaves an empty message).
pub fn clear_last() {
    LAST.with(|l| {
        if !l.borrow().as_bytes().is_empty() {
            *l.borrow_mut() = CString::default();
        }
    });
}

/// This thread's last error message; the pointer stays valid until the next C API call on this
/// thread that sets or clears it.
pub fn last_ptr() -> *const c_char {
    LAST.with(|l| l.borrow().as_ptr())
}

/// This thread's last error message, as a Rust string (for tests).
pub fn last() -> String {
    LAST.with(|l| l.borrow().to_string_lossy().into_owned())
}
