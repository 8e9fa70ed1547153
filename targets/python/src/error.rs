//! `modelrt.Error` (a `RuntimeError`) and the guard that turns runtime failures and Rust panics
//! into it, so Python never sees a panic or an abort.
use std::panic::{catch_unwind, AssertUnwindSafe};

use pyo3::create_exception;
use pyo3::exceptions::PyRuntimeError;
use pyo3::PyErr;

create_exception!(
    modelrt,
    Error,
    PyRuntimeError,
    "A runtime or device fault in modelrt (a bundle that cannot load, a failed run)."
);

/// The message of a caught panic.
pub fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

/// A `modelrt.Error` for `what` that failed with `e`.
pub fn runtime(what: &str, e: &anyhow::Error) -> PyErr {
    Error::new_err(format!("{what}: {e:#}"))
}

/// A `modelrt.Error` for a panic caught during `what`.
pub fn panicked(what: &str, p: &(dyn std::any::Any + Send)) -> PyErr {
    Error::new_err(format!(
        "{what}: internal error (a bug in modelrt, please report it): {}",
        panic_message(p)
    ))
}

/// Run `f`; an error or a panic becomes `modelrt.Error` naming `what`.
pub fn guard<T>(what: &str, f: impl FnOnce() -> anyhow::Result<T>) -> Result<T, PyErr> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(runtime(what, &e)),
        Err(p) => Err(panicked(what, p.as_ref())),
    }
}
