//! Checking the arrays a caller hands to `Model.run` against the model's tensors: a wrong type or
//! dtype is a `TypeError`, a wrong shape, a missing or an unknown name a `ValueError`, each naming
//! the tensor and what was expected. Every array is checked again ([`recheck`]) right before its
//! bytes are viewed, after the last Python-level call. Inputs that are not C-contiguous are copied
//! with numpy's C API (and reported);
//! caller-owned outputs must be C-contiguous and writeable. The checks of a good call allocate
//! nothing on the Rust side (names and shapes are compared with the model's cached Python objects);
//! only the error paths build messages.
use heapless::Vec as StackVec;
use modelrt_core::bundle::MAX_IO;
use numpy::{PyArrayDescrMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use crate::error::Error;
use crate::rawbuf;
use crate::tensor::{shape_text, TensorInfo};

/// Up to `MAX_IO` items, on the stack.
pub type Slots<T> = StackVec<T, MAX_IO>;

/// Push onto a [`Slots`] (the bundle's tables hold at most `MAX_IO` entries, checked at load).
pub fn push<T>(v: &mut Slots<T>, x: T) -> PyResult<()> {
    v.push(x)
        .map_err(|_| Error::new_err(format!("more than {MAX_IO} tensors")))
}

/// "float32 with shape (1, 8)".
fn expected(t: &TensorInfo) -> String {
    format!("{} with shape {}", t.dtype_str(), t.shape_text())
}

/// The values of `d` for each of `ts`, in order; `d` must hold exactly `ts`' names.
pub fn lookup<'py>(
    kind: &str,
    d: &Bound<'py, PyDict>,
    ts: &[Py<TensorInfo>],
) -> PyResult<Slots<Bound<'py, PyAny>>> {
    let py = d.py();
    let mut out = Slots::new();
    for t in ts {
        match d.get_item(t.get().name_obj(py))? {
            Some(v) => push(&mut out, v)?,
            None => return Err(names_error(kind, d, ts)),
        }
    }
    if d.len() != ts.len() {
        return Err(names_error(kind, d, ts));
    }
    Ok(out)
}

/// `feeds` as the dict `run` takes, or a TypeError that says what to pass: `{name: array}` with
/// the model's `kind` names (`run(array)` is the common mistake).
pub fn as_dict<'a, 'py>(
    kind: &str,
    feeds: &'a Bound<'py, PyAny>,
    ts: &[Py<TensorInfo>],
) -> PyResult<&'a Bound<'py, PyDict>> {
    feeds.cast::<PyDict>().map_err(|_| {
        let ty = feeds
            .get_type()
            .name()
            .map(|n| n.to_string())
            .unwrap_or_default();
        let example = ts
            .iter()
            .map(|t| format!("'{}': array", t.get().name_str()))
            .collect::<Vec<_>>()
            .join(", ");
        PyTypeError::new_err(format!(
            "{kind}s must be a dict mapping each {kind} name to a numpy array, e.g. {{{example}}}; got {ty}"
        ))
    })
}

/// Why `d`'s keys are not `ts`' names: a key that is not a str, an unknown name, a missing one.
fn names_error(kind: &str, d: &Bound<'_, PyDict>, ts: &[Py<TensorInfo>]) -> PyErr {
    let names = || {
        ts.iter()
            .map(|t| format!("'{}'", t.get().name_str()))
            .collect::<Vec<_>>()
            .join(", ")
    };
    for k in d.keys() {
        let Ok(k) = k.cast::<PyString>() else {
            let ty = k
                .get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default();
            return PyTypeError::new_err(format!(
                "{kind} names must be str; got {ty} (the model's {kind}s are {})",
                names()
            ));
        };
        let k = k.to_string_lossy();
        if !ts.iter().any(|t| t.get().name_str() == k) {
            return PyValueError::new_err(format!(
                "unknown {kind} '{k}': the model's {kind}s are {}",
                names()
            ));
        }
    }
    match ts
        .iter()
        .find(|t| !d.contains(t.get().name_obj(d.py())).unwrap_or(false))
    {
        Some(t) => PyValueError::new_err(format!(
            "missing {kind} '{}' ({})",
            t.get().name_str(),
            expected(t.get())
        )),
        None => PyValueError::new_err(format!("the {kind}s must be exactly {}", names())),
    }
}

/// `v` as a numpy array of `t`'s dtype and shape.
fn checked<'py>(
    kind: &str,
    t: &TensorInfo,
    v: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyUntypedArray>> {
    let py = v.py();
    let Ok(a) = v.cast::<PyUntypedArray>() else {
        return Err(PyTypeError::new_err(format!(
            "{kind} '{}' must be a numpy.ndarray ({}); got {}",
            t.name_str(),
            expected(t),
            v.get_type().name()?
        )));
    };
    if !a.dtype().is_equiv_to(t.dtype_obj(py)) {
        return Err(PyTypeError::new_err(format!(
            "{kind} '{}' has dtype {}; expected {}",
            t.name_str(),
            a.dtype(),
            expected(t)
        )));
    }
    let shape = a.shape();
    if !shape.iter().map(|&d| d as u64).eq(t.dims().iter().copied()) {
        let shape: Vec<u64> = shape.iter().map(|&d| d as u64).collect();
        return Err(PyValueError::new_err(format!(
            "{kind} '{}' has shape {}; expected {}",
            t.name_str(),
            shape_text(&shape),
            expected(t)
        )));
    }
    Ok(a.clone())
}

/// An input as a C-contiguous array, and how it reached the model (`None`: as given; `Some`:
/// copied, and why).
pub fn input<'py>(
    t: &TensorInfo,
    v: &Bound<'py, PyAny>,
) -> PyResult<(Bound<'py, PyUntypedArray>, Option<&'static str>)> {
    let a = checked("input", t, v)?;
    if a.is_c_contiguous() {
        return Ok((a, None));
    }
    Ok((copied(&a)?, Some("copied: not C-contiguous")))
}

/// A fresh C-contiguous copy of `a` (for an input that cannot be lent as it is), made by numpy's
/// C API: an `ndarray` subclass's own `copy()` never decides what the run reads.
pub fn copied<'py>(a: &Bound<'py, PyUntypedArray>) -> PyResult<Bound<'py, PyUntypedArray>> {
    rawbuf::c_copy(a)
}

/// The check right before `a`'s bytes are viewed for a run (after the last Python-level call and
/// with `a` pinned, `crate::pin`): still `t`'s dtype and shape, C-contiguous, exactly
/// `t.byte_len()` bytes with a data pointer, and writeable if `write`. Anything else means the
/// array changed during the call (a callback or another thread); the run is refused.
pub fn recheck(
    kind: &str,
    t: &TensorInfo,
    a: &Bound<'_, PyUntypedArray>,
    write: bool,
) -> PyResult<()> {
    let py = a.py();
    let bytes = a.len().checked_mul(a.dtype().itemsize());
    let ok = a.dtype().is_equiv_to(t.dtype_obj(py))
        && a.shape()
            .iter()
            .map(|&d| d as u64)
            .eq(t.dims().iter().copied())
        && a.is_c_contiguous()
        && bytes == Some(t.byte_len())
        && (t.byte_len() == 0 || rawbuf::has_data(a))
        && (!write || rawbuf::writeable(a));
    if ok {
        return Ok(());
    }
    Err(PyValueError::new_err(format!(
        "{kind} '{}' changed during the call (now {} with shape {}, {}C-contiguous{}); expected {}",
        t.name_str(),
        a.dtype(),
        shape_text(&a.shape().iter().map(|&d| d as u64).collect::<Vec<_>>()),
        if a.is_c_contiguous() { "" } else { "not " },
        if write && !rawbuf::writeable(a) {
            ", read-only"
        } else {
            ""
        },
        expected(t)
    )))
}

/// A caller-owned output array, checked to be C-contiguous and writeable.
pub fn output<'py>(t: &TensorInfo, v: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyUntypedArray>> {
    let a = checked("output", t, v)?;
    if !a.is_c_contiguous() {
        return Err(PyValueError::new_err(format!(
            "output '{}' is not C-contiguous: pass numpy.empty({}, dtype=numpy.{})",
            t.name_str(),
            t.shape_text(),
            t.dtype_str()
        )));
    }
    if !rawbuf::writeable(&a) {
        return Err(PyValueError::new_err(format!(
            "output '{}' is read-only",
            t.name_str()
        )));
    }
    Ok(a)
}

/// A new array for output `t`, made by `empty` (`numpy.empty`).
pub fn new_output<'py>(empty: &Bound<'py, PyAny>, t: &TensorInfo) -> PyResult<Bound<'py, PyAny>> {
    let py = empty.py();
    empty.call1((t.shape_obj(py), t.dtype_obj(py)))
}
