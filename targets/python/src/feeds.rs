//! Checking the arrays a caller hands to `Model.run` against the model's tensors, and viewing them
//! as bytes: a wrong type or dtype is a `TypeError`, a wrong shape, a missing or an unknown name a
//! `ValueError`, each naming the tensor and what was expected. Inputs that are not C-contiguous are
//! copied (and reported); caller-owned outputs must be C-contiguous and writeable.
use numpy::{PyArray1, PyArrayDescrMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use crate::tensor::{shape_text, TensorInfo};

/// "float32 with shape (1, 8)".
fn expected(t: &TensorInfo) -> String {
    format!("{} with shape {}", t.dtype_str(), t.shape_text())
}

/// Every key of `d` is one of `ts`' names, and every name is a key.
pub fn check_names(kind: &str, d: &Bound<'_, PyDict>, ts: &[&TensorInfo]) -> PyResult<()> {
    let names = || {
        ts.iter()
            .map(|t| format!("'{}'", t.name_str()))
            .collect::<Vec<_>>()
            .join(", ")
    };
    for k in d.keys() {
        let Ok(k) = k.cast::<PyString>() else {
            return Err(PyTypeError::new_err(format!(
                "{kind} names must be str; got {} (the model's {kind}s are {})",
                k.get_type().name()?,
                names()
            )));
        };
        let k = k.to_str()?;
        if !ts.iter().any(|t| t.name_str() == k) {
            return Err(PyValueError::new_err(format!(
                "unknown {kind} '{k}': the model's {kind}s are {}",
                names()
            )));
        }
    }
    for t in ts {
        if !d.contains(t.name_str())? {
            return Err(PyValueError::new_err(format!(
                "missing {kind} '{}' ({})",
                t.name_str(),
                expected(t)
            )));
        }
    }
    Ok(())
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
    let shape: Vec<u64> = a.shape().iter().map(|&d| d as u64).collect();
    if shape != t.dims() {
        return Err(PyValueError::new_err(format!(
            "{kind} '{}' has shape {}; expected {}",
            t.name_str(),
            shape_text(&shape),
            expected(t)
        )));
    }
    Ok(a.clone())
}

/// A flat `uint8` view of the C-contiguous array `a` (no copy).
fn bytes_of<'py>(a: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyArray1<u8>>> {
    let flat = a.call_method1("reshape", (-1,))?;
    let view = flat.call_method1("view", ("uint8",))?;
    Ok(view.cast_into::<PyArray1<u8>>()?)
}

/// An input, as a flat byte view, and how it reached the model (`None`: read as given; `Some`:
/// copied, and why).
pub fn input<'py>(
    t: &TensorInfo,
    v: &Bound<'py, PyAny>,
) -> PyResult<(Bound<'py, PyArray1<u8>>, Option<&'static str>)> {
    let a = checked("input", t, v)?;
    if a.is_c_contiguous() {
        return Ok((bytes_of(a.as_any())?, None));
    }
    let np = v.py().import("numpy")?;
    let c = np.getattr("ascontiguousarray")?.call1((a,))?;
    Ok((bytes_of(&c)?, Some("copied: not C-contiguous")))
}

/// A fresh copy of the byte view `a` (for an input that cannot be lent as it is).
pub fn copied<'py>(a: &Bound<'py, PyArray1<u8>>) -> PyResult<Bound<'py, PyArray1<u8>>> {
    Ok(a.call_method0("copy")?.cast_into::<PyArray1<u8>>()?)
}

/// A caller-owned output array, as a flat writeable byte view of its memory.
pub fn output<'py>(t: &TensorInfo, v: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyArray1<u8>>> {
    let a = checked("output", t, v)?;
    if !a.is_c_contiguous() {
        return Err(PyValueError::new_err(format!(
            "output '{}' is not C-contiguous: pass numpy.empty({}, dtype=numpy.{})",
            t.name_str(),
            t.shape_text(),
            t.dtype_str()
        )));
    }
    let writeable: bool = a.getattr("flags")?.getattr("writeable")?.extract()?;
    if !writeable {
        return Err(PyValueError::new_err(format!(
            "output '{}' is read-only",
            t.name_str()
        )));
    }
    bytes_of(a.as_any())
}

/// A new array for output `t`.
pub fn new_output<'py>(py: Python<'py>, t: &TensorInfo) -> PyResult<Bound<'py, PyAny>> {
    let shape = pyo3::types::PyTuple::new(py, t.dims())?;
    py.import("numpy")?
        .getattr("empty")?
        .call1((shape, t.dtype_obj(py)))
}
