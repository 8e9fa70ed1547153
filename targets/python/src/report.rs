//! The dicts `Model` reports: `last_timing` (seconds), `verify()` (one entry per output, as
//! `modelrt verify` prints them) and the tensor tables of `info()`.
use modelrt_capi::ffi::RefCheck;
use modelrt_core::exec::Timing;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use crate::error::Error;
use crate::tensor::TensorInfo;

/// {"step", "enqueue", "device", "upload", "download"} in seconds.
pub fn timing<'py>(py: Python<'py>, t: &Timing) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let s = |ns: u64| ns as f64 * 1e-9;
    d.set_item("step", s(t.total_ns))?;
    d.set_item("enqueue", s(t.enqueue_ns))?;
    d.set_item("device", s(t.device_ns))?;
    d.set_item("upload", s(t.upload_ns))?;
    d.set_item("download", s(t.download_ns))?;
    Ok(d)
}

/// {output: {"ok", "max_abs", "max_rel", "mismatches", "count", "atol", "rtol"}}, or
/// `modelrt.Error` naming every output outside tolerance.
pub fn verify<'py>(py: Python<'py>, checks: &[RefCheck]) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let mut bad = Vec::new();
    for c in checks {
        let e = PyDict::new(py);
        e.set_item("ok", c.ok)?;
        e.set_item("max_abs", c.max_abs)?;
        e.set_item("max_rel", c.max_rel)?;
        e.set_item("mismatches", c.mismatches)?;
        e.set_item("count", c.count)?;
        e.set_item("atol", c.atol)?;
        e.set_item("rtol", c.rtol)?;
        d.set_item(&c.name, e)?;
        if !c.ok {
            bad.push(format!(
                "{} ({} of {} outside tolerance, max abs err {:.3e})",
                c.name, c.mismatches, c.count, c.max_abs
            ));
        }
    }
    if !bad.is_empty() {
        return Err(Error::new_err(format!(
            "verify: FAILED against the bundle's embedded reference: {}",
            bad.join("; ")
        )));
    }
    Ok(d)
}

/// [{"name", "shape", "dtype"}] for `ts`.
pub fn table<'py>(py: Python<'py>, ts: &[Py<TensorInfo>]) -> PyResult<Bound<'py, PyList>> {
    let l = PyList::empty(py);
    for t in ts {
        let t = t.get();
        let e = PyDict::new(py);
        e.set_item("name", t.name_str())?;
        e.set_item("shape", PyTuple::new(py, t.dims())?)?;
        e.set_item("dtype", t.dtype_str())?;
        l.append(e)?;
    }
    Ok(l)
}
