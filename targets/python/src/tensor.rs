//! `modelrt.TensorInfo`: one input, output or state of a model (name, shape tuple, numpy dtype).
use modelrt_hal::target::DType;
use numpy::PyArrayDescr;
use pyo3::prelude::*;
use pyo3::types::{PyString, PyTuple};

use crate::dtype::{numpy_dtype, numpy_name};

/// An input, output or state of a Model: `.name`, `.shape` (tuple of ints) and `.dtype` (numpy).
#[pyclass(module = "modelrt", frozen)]
pub struct TensorInfo {
    name: String,
    /// `name` and `shape` as Python objects, made once: `Model.run` looks feeds up by them.
    name_obj: Py<PyString>,
    shape_obj: Py<PyTuple>,
    shape: Vec<u64>,
    dtype: Py<PyArrayDescr>,
    dtype_name: &'static str,
    nbytes: usize,
}

impl TensorInfo {
    pub fn new(py: Python<'_>, name: &str, shape: Vec<u64>, dtype: DType) -> PyResult<Self> {
        let nbytes = shape.iter().product::<u64>() as usize * dtype.size();
        Ok(TensorInfo {
            name: name.to_string(),
            name_obj: PyString::new(py, name).unbind(),
            shape_obj: PyTuple::new(py, &shape)?.unbind(),
            shape,
            dtype: numpy_dtype(py, dtype)?
                .cast_into::<PyArrayDescr>()?
                .unbind(),
            dtype_name: numpy_name(dtype),
            nbytes,
        })
    }

    pub fn name_str(&self) -> &str {
        &self.name
    }

    /// The name as a Python str.
    pub fn name_obj<'py>(&self, py: Python<'py>) -> &Bound<'py, PyString> {
        self.name_obj.bind(py)
    }

    /// The shape as a Python tuple.
    pub fn shape_obj<'py>(&self, py: Python<'py>) -> &Bound<'py, PyTuple> {
        self.shape_obj.bind(py)
    }

    pub fn dims(&self) -> &[u64] {
        &self.shape
    }

    pub fn dtype_str(&self) -> &'static str {
        self.dtype_name
    }

    pub fn dtype_obj<'py>(&self, py: Python<'py>) -> &Bound<'py, PyArrayDescr> {
        self.dtype.bind(py)
    }

    pub fn byte_len(&self) -> usize {
        self.nbytes
    }

    /// The shape as Python writes it: `(1, 8)`, `(3,)`, `()`.
    pub fn shape_text(&self) -> String {
        shape_text(&self.shape)
    }
}

/// A shape as Python writes a tuple.
pub fn shape_text(s: &[u64]) -> String {
    match s {
        [one] => format!("({one},)"),
        s => format!(
            "({})",
            s.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")
        ),
    }
}

#[pymethods]
impl TensorInfo {
    /// The tensor's name in the bundle.
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    /// The shape, a tuple of ints.
    #[getter]
    fn shape(&self, py: Python<'_>) -> Py<PyTuple> {
        self.shape_obj.clone_ref(py)
    }

    /// The element type, a numpy.dtype.
    #[getter]
    fn dtype(&self, py: Python<'_>) -> Py<PyArrayDescr> {
        self.dtype.clone_ref(py)
    }

    /// Size in bytes.
    #[getter]
    fn nbytes(&self) -> usize {
        self.nbytes
    }

    fn __repr__(&self) -> String {
        format!(
            "TensorInfo(name={:?}, shape={}, dtype={})",
            self.name,
            self.shape_text(),
            self.dtype_name
        )
    }
}
