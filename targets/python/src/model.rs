//! `modelrt.Model`: a bundle loaded on a device. `run` checks the feeds, views every array as
//! bytes, releases the GIL and runs one step; stateful bundles step across calls exactly like
//! `modelrt run --steps`. A Model is `unsendable`: PyO3 refuses its use from another thread.
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;

use modelrt_capi::ffi::OwnedModel;
use modelrt_core::exec::Timing;
use modelrt_hal::target::DType;
use modelrt_targets::frame::{FrameInput, InputPath};
use modelrt_targets::runner::DeviceChoice;
use numpy::{PyArrayMethods, PyReadonlyArray1, PyReadwriteArray1};
use pyo3::exceptions::{PyKeyError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

use crate::detach::Detached;
use crate::error::{guard, panicked, runtime, Error};
use crate::feeds;
use crate::report;
use crate::tensor::TensorInfo;

/// A bundle loaded on a device (from `modelrt.load`). Use it from one thread at a time.
#[pyclass(module = "modelrt", unsendable)]
pub struct Model {
    inner: OwnedModel,
    path: PathBuf,
    choice: DeviceChoice,
    inputs: Vec<Py<TensorInfo>>,
    outputs: Vec<Py<TensorInfo>>,
    states: Vec<(Py<TensorInfo>, DType)>,
    last_timing: Option<Timing>,
    last_paths: Vec<(String, String)>,
}

/// The TensorInfo objects of a tensor table.
fn tensors(
    py: Python<'_>,
    ts: &[modelrt_capi::info::TensorInfo],
    dtypes: &[DType],
) -> PyResult<Vec<Py<TensorInfo>>> {
    ts.iter()
        .zip(dtypes)
        .map(|(t, &d)| {
            let shape = t.dims.iter().map(|&x| x as u64).collect();
            Py::new(
                py,
                TensorInfo::new(py, &t.name.to_string_lossy(), shape, d)?,
            )
        })
        .collect()
}

impl Model {
    pub fn new(
        py: Python<'_>,
        inner: OwnedModel,
        path: PathBuf,
        choice: DeviceChoice,
    ) -> PyResult<Model> {
        let (di, dout) = inner.dtypes();
        let inputs = tensors(py, inner.inputs(), &di)?;
        let outputs = tensors(py, inner.outputs(), &dout)?;
        let states = inner
            .states()
            .into_iter()
            .map(|(label, d, size)| {
                let n = size / d.size() as u64;
                Ok((Py::new(py, TensorInfo::new(py, &label, vec![n], d)?)?, d))
            })
            .collect::<PyResult<_>>()?;
        Ok(Model {
            inner,
            path,
            choice,
            inputs,
            outputs,
            states,
            last_timing: None,
            last_paths: Vec::new(),
        })
    }
}

/// An input array lent to one run: read-only (copied into the device) or writeable (the device
/// may read it in place; `FrameInput::Borrow`).
enum Lent<'py> {
    Ro(PyReadonlyArray1<'py, u8>),
    Rw(PyReadwriteArray1<'py, u8>),
}

/// A list of TensorInfo.
fn info_list<'py>(py: Python<'py>, ts: &[Py<TensorInfo>]) -> PyResult<Bound<'py, PyList>> {
    PyList::new(py, ts.iter().map(|t| t.clone_ref(py)))
}

#[pymethods]
impl Model {
    /// The inputs, in the bundle's order: a list of TensorInfo (.name, .shape, .dtype).
    #[getter]
    fn inputs<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        info_list(py, &self.inputs)
    }

    /// The outputs, in the bundle's order: a list of TensorInfo.
    #[getter]
    fn outputs<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        info_list(py, &self.outputs)
    }

    /// The state buffers that persist across runs (empty for a stateless bundle), as TensorInfo
    /// with a flat shape.
    #[getter]
    fn states<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        PyList::new(py, self.states.iter().map(|(t, _)| t.clone_ref(py)))
    }

    /// The device the model runs on (its description, e.g. "cpu (x86_64, 2 threads)").
    #[getter]
    fn device(&self) -> String {
        self.inner.device_name()
    }

    /// Timing of the last run, a dict of seconds: step, enqueue, device, upload, download
    /// (None before the first run).
    #[getter]
    fn last_timing<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        self.last_timing.map(|t| report::timing(py, &t)).transpose()
    }

    /// How each input of the last run reached the model, {name: "zero-copy" | "copied" |
    /// "copied: why"}: the CPU reads a writeable, C-contiguous, 64-byte-aligned array in place;
    /// anything else is copied, and the reason is given.
    #[getter]
    fn last_input_paths<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (n, why) in &self.last_paths {
            d.set_item(n, why)?;
        }
        Ok(d)
    }

    /// Run one step. `feeds` maps every input name to a numpy array of its dtype and shape.
    /// Returns {output name: numpy array}. With `outputs` (a dict holding a C-contiguous,
    /// writeable array of the right dtype and shape for every output) the results are written
    /// into those arrays, which are returned. The GIL is released while the device runs.
    ///
    /// Raises ValueError for a missing, unknown or mis-shaped array, TypeError for a non-array
    /// or a wrong dtype, and modelrt.Error when the device fails.
    #[pyo3(signature = (feeds, outputs = None))]
    fn run<'py>(
        &mut self,
        py: Python<'py>,
        feeds: &Bound<'py, PyDict>,
        outputs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let ins: Vec<&TensorInfo> = self.inputs.iter().map(|t| t.get()).collect();
        let outs: Vec<&TensorInfo> = self.outputs.iter().map(|t| t.get()).collect();
        feeds::check_names("input", feeds, &ins)?;
        let overlap = |t: &TensorInfo| {
            PyValueError::new_err(format!(
                "'{}' shares memory with another output",
                t.name_str()
            ))
        };
        let result = PyDict::new(py);
        let mut out_arrays = Vec::with_capacity(outs.len());
        match outputs {
            Some(o) => {
                feeds::check_names("output", o, &outs)?;
                for t in &outs {
                    let v = o
                        .get_item(t.name_str())?
                        .ok_or_else(|| PyKeyError::new_err(t.name_str().to_string()))?;
                    out_arrays.push(feeds::output(t, &v)?);
                    result.set_item(t.name_str(), v)?;
                }
            }
            None => {
                for t in &outs {
                    let v = feeds::new_output(py, t)?;
                    out_arrays.push(feeds::output(t, &v)?);
                    result.set_item(t.name_str(), v)?;
                }
            }
        }
        // Each input is lent to the model in place when it can be (writeable, C-contiguous, not
        // lent twice; the CPU then decides per input), else copied; `why` says why it was copied.
        let mut lent: Vec<(Lent<'py>, Option<&'static str>)> = Vec::with_capacity(ins.len());
        for t in &ins {
            let v = feeds
                .get_item(t.name_str())?
                .ok_or_else(|| PyKeyError::new_err(t.name_str().to_string()))?;
            let (a, why) = feeds::input(t, &v)?;
            let writeable: bool = a.getattr("flags")?.getattr("writeable")?.extract()?;
            lent.push(match (why, writeable) {
                (None, true) => match a.try_readwrite() {
                    Ok(rw) => (Lent::Rw(rw), None),
                    Err(_) => (
                        Lent::Ro(feeds::copied(&a)?.try_readonly().map_err(|_| overlap(t))?),
                        Some("copied: shares memory with another input or output"),
                    ),
                },
                (None, false) => (
                    Lent::Ro(a.try_readonly().map_err(|_| overlap(t))?),
                    Some("copied: read-only"),
                ),
                (Some(why), _) => (
                    Lent::Ro(a.try_readonly().map_err(|_| overlap(t))?),
                    Some(why),
                ),
            });
        }
        let mut w: Vec<PyReadwriteArray1<'py, u8>> = Vec::with_capacity(outs.len());
        for (a, t) in out_arrays.iter().zip(&outs) {
            w.push(a.try_readwrite().map_err(|_| overlap(t))?);
        }
        let as_slice_err = |e: numpy::AsSliceError| Error::new_err(format!("run: {e}"));
        let mut frame: Vec<FrameInput<'_>> = Vec::with_capacity(ins.len());
        for (l, _) in lent.iter_mut() {
            frame.push(match l {
                Lent::Ro(a) => FrameInput::Copy(a.as_slice().map_err(as_slice_err)?),
                Lent::Rw(a) => FrameInput::Borrow(a.as_slice_mut().map_err(as_slice_err)?),
            });
        }
        let mut out_bytes: Vec<&mut [u8]> = w
            .iter_mut()
            .map(|a| a.as_slice_mut())
            .collect::<Result<_, _>>()
            .map_err(as_slice_err)?;
        let mut frame_paths = vec![InputPath::Copied; ins.len()];
        let model = Detached(&mut self.inner);
        let ran = py.detach(|| {
            let model = model;
            catch_unwind(AssertUnwindSafe(|| {
                model
                    .0
                    .run_frame(&mut frame, &mut out_bytes, &mut frame_paths)
            }))
        });
        let paths = ins
            .iter()
            .zip(&lent)
            .zip(&frame_paths)
            .map(|((t, (_, why)), p)| {
                let how = match (p, why) {
                    (InputPath::ZeroCopy, _) => "zero-copy".to_string(),
                    (InputPath::CopiedInstead(r), _) => format!("copied: {r}"),
                    (InputPath::Copied, Some(why)) => why.to_string(),
                    (InputPath::Copied, None) => "copied".to_string(),
                };
                (t.name_str().to_string(), how)
            })
            .collect();
        match ran {
            Ok(Ok(t)) => {
                self.last_timing = Some(t);
                self.last_paths = paths;
                Ok(result)
            }
            Ok(Err(e)) => Err(runtime(
                &format!("run failed on {}", self.inner.device_name()),
                &e,
            )),
            Err(p) => Err(panicked("run", p.as_ref())),
        }
    }

    /// Put every state buffer back to its load-time contents (a new sequence starts).
    fn reset_state(&mut self) -> PyResult<()> {
        guard("reset_state", || {
            self.inner
                .reset_state()
                .map_err(|e| anyhow::anyhow!(e.message))
        })
    }

    /// The current contents of state buffer `name` (see `Model.states`), a flat numpy array.
    fn read_state<'py>(&mut self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
        let Some(i) = self
            .states
            .iter()
            .position(|(t, _)| t.get().name_str() == name)
        else {
            let names: Vec<String> = self
                .states
                .iter()
                .map(|(t, _)| format!("'{}'", t.get().name_str()))
                .collect();
            return Err(PyKeyError::new_err(format!(
                "no state '{name}': the model's states are [{}]",
                names.join(", ")
            )));
        };
        let bytes = guard("read_state", || self.inner.read_state(i))?;
        let dtype = self.states[i].0.get().dtype_obj(py).clone();
        let b = PyBytes::new(py, &bytes);
        py.import("numpy")?
            .getattr("frombuffer")?
            .call1((b, dtype))?
            .call_method0("copy")
    }

    /// Run the bundle's embedded reference inputs and compare every output with the embedded
    /// onnxruntime outputs within the bundle's tolerances (as `modelrt verify`). Returns
    /// {output: {"ok", "max_abs", "max_rel", "mismatches", "count", "atol", "rtol"}}; raises
    /// modelrt.Error if any output is outside tolerance or the bundle has no reference.
    fn verify<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let checks = guard("verify", || self.inner.verify())?;
        report::verify(py, &checks)
    }

    /// What `modelrt info` reports, as a dict: path, device, device_choice, emulated, target,
    /// inputs/outputs/states (lists of {"name", "shape", "dtype"}).
    fn info<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("path", self.path.display().to_string())?;
        d.set_item("device", self.inner.device_name())?;
        d.set_item("device_choice", self.choice.name())?;
        d.set_item("emulated", self.choice.is_emulated())?;
        d.set_item("target", self.inner.target())?;
        d.set_item("inputs", report::table(py, &self.inputs)?)?;
        d.set_item("outputs", report::table(py, &self.outputs)?)?;
        let states: Vec<Py<TensorInfo>> =
            self.states.iter().map(|(t, _)| t.clone_ref(py)).collect();
        d.set_item("states", report::table(py, &states)?)?;
        Ok(d)
    }

    fn __repr__(&self) -> String {
        let names = |ts: &[Py<TensorInfo>]| {
            ts.iter()
                .map(|t| t.get().name_str().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        format!(
            "<modelrt.Model {} on {}: inputs [{}], outputs [{}]>",
            self.path.display(),
            self.inner.device_name(),
            names(&self.inputs),
            names(&self.outputs)
        )
    }
}
