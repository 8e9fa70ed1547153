//! Bundle element types as numpy dtypes. numpy has no bfloat16, so a bfloat16 tensor is exposed as
//! `uint16` holding the raw bits.
use modelrt_hal::target::DType;
use pyo3::prelude::*;

/// The numpy dtype name for `d`.
pub fn numpy_name(d: DType) -> &'static str {
    match d {
        DType::BF16 => "uint16",
        d => d.name(),
    }
}

/// `numpy.dtype(...)` for `d`.
pub fn numpy_dtype<'py>(py: Python<'py>, d: DType) -> PyResult<Bound<'py, PyAny>> {
    py.import("numpy")?
        .getattr("dtype")?
        .call1((numpy_name(d),))
}
