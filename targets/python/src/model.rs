//! `modelrt.Model`: a bundle loaded on a device. `run` checks the feeds, views every array as
//! bytes in place, releases the GIL and runs one step; stateful bundles step across calls exactly
//! like `modelrt run --steps`. The device-side state lives in an [`Owned`]: a Model is used from
//! the thread that loaded it, and any other thread gets `modelrt.Error` saying so. A call with
//! preallocated `outputs` allocates nothing on the Rust side (per-call bookkeeping lives in
//! fixed-size stack arrays; `targets/python/tests/test_modelrt.py` counts).
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;

use modelrt_capi::ffi::OwnedModel;
use modelrt_core::bundle::MAX_IO;
use modelrt_core::exec::Timing;
use modelrt_hal::target::DType;
use modelrt_targets::frame::{FrameInput, InputPath};
use modelrt_targets::runner::DeviceChoice;
use numpy::PyUntypedArray;
use pyo3::exceptions::{PyKeyError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

use crate::detach::Detached;
use crate::error::{guard, panicked, runtime, Error};
use crate::feeds::{self, push, Slots};
use crate::owner::Owned;
use crate::pin::Pins;
use crate::rawbuf::{self, overlaps};
use crate::report;
use crate::tensor::TensorInfo;

/// What a Model changes when it runs: the loaded model and what the last run reported.
struct Core {
    inner: OwnedModel,
    last_timing: Option<Timing>,
    /// Per input of the last run: how it reached the kernels, and why it was copied beforehand.
    last_paths: Slots<(InputPath, Option<&'static str>)>,
}

/// A bundle loaded on a device (from `modelrt.load`). Use it from the thread that loaded it.
#[pyclass(module = "modelrt")]
pub struct Model {
    core: Owned<Core>,
    path: PathBuf,
    choice: DeviceChoice,
    device: String,
    target: String,
    /// Whether the bundle file is memory-mapped (`load(mmap=True)`).
    mapped: bool,
    inputs: Vec<Py<TensorInfo>>,
    outputs: Vec<Py<TensorInfo>>,
    states: Vec<(Py<TensorInfo>, DType)>,
    /// `numpy.empty`, for new output arrays.
    empty: Py<PyAny>,
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
        if inputs.len() > MAX_IO || outputs.len() > MAX_IO {
            return Err(Error::new_err(format!(
                "the bundle has more than {MAX_IO} inputs or outputs"
            )));
        }
        let states = inner
            .states()
            .into_iter()
            .map(|(label, d, size)| {
                let n = size / d.size() as u64;
                Ok((Py::new(py, TensorInfo::new(py, &label, vec![n], d)?)?, d))
            })
            .collect::<PyResult<_>>()?;
        Ok(Model {
            device: inner.device_name(),
            target: inner.target(),
            mapped: inner.is_mapped(),
            core: Owned::new(Core {
                inner,
                last_timing: None,
                last_paths: Slots::new(),
            }),
            path,
            choice,
            inputs,
            outputs,
            states,
            empty: py.import("numpy")?.getattr("empty")?.unbind(),
        })
    }
}

/// How an input is lent to one run.
#[derive(Clone, Copy)]
enum Lend {
    /// Read in place if the device can (writeable, C-contiguous, shares no memory).
    Borrow,
    /// Copied into the device, for this reason.
    Copy(&'static str),
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

    /// The named parts of the outputs (bundle format 2.4, e.g. openpilot's output slices from
    /// `convert --metadata`): {name: (output name, start, stop)}, elements start:stop along that
    /// output's last dimension. Empty for a bundle without any.
    #[getter]
    fn output_slices<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let core = self.core.borrow("output_slices")?;
        let d = PyDict::new(py);
        for (name, output, start, stop) in core.inner.output_slices() {
            // The parse checked every slice's output index.
            let Some(t) = self.outputs.get(output) else {
                continue;
            };
            d.set_item(name, (t.get().name_obj(py), start, stop))?;
        }
        Ok(d)
    }

    /// The model checkpoint the output slices describe (bundle format 2.4), or None.
    #[getter]
    fn checkpoint(&self) -> PyResult<Option<String>> {
        Ok(self.core.borrow("checkpoint")?.inner.checkpoint())
    }

    /// The output slices of `outputs` (a dict as `run` returns): {slice name: view of
    /// outputs[output][..., start:stop]} (numpy views, no copies).
    fn split<'py>(
        &self,
        py: Python<'py>,
        outputs: &Bound<'py, PyDict>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let core = self.core.borrow("split")?;
        let d = PyDict::new(py);
        for (name, output, start, stop) in core.inner.output_slices() {
            let Some(t) = self.outputs.get(output) else {
                continue;
            };
            let out_name = t.get().name_obj(py);
            let arr = outputs.get_item(out_name)?.ok_or_else(|| {
                PyKeyError::new_err(format!(
                    "outputs has no '{out_name}', which slice '{name}' cuts"
                ))
            })?;
            let cut = pyo3::types::PySlice::new(py, start as isize, stop as isize, 1);
            d.set_item(name, arr.get_item((py.Ellipsis(), cut))?)?;
        }
        Ok(d)
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
        self.device.clone()
    }

    /// Timing of the last run, a dict of seconds: step, enqueue, device, upload, download
    /// (None before the first run).
    #[getter]
    fn last_timing<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let core = self.core.borrow("last_timing")?;
        core.last_timing.map(|t| report::timing(py, &t)).transpose()
    }

    /// How each input of the last run reached the model, {name: "zero-copy" | "copied" |
    /// "copied: why"}: the CPU reads a writeable, C-contiguous, 64-byte-aligned array in place;
    /// anything else is copied, and the reason is given.
    #[getter]
    fn last_input_paths<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let core = self.core.borrow("last_input_paths")?;
        let d = PyDict::new(py);
        for (t, (p, why)) in self.inputs.iter().zip(core.last_paths.iter()) {
            let how = match (p, why) {
                (InputPath::ZeroCopy, _) => "zero-copy".to_string(),
                (InputPath::CopiedInstead(r), _) => format!("copied: {r}"),
                (InputPath::Copied, Some(why)) => why.to_string(),
                (InputPath::Copied, None) => "copied".to_string(),
            };
            d.set_item(t.get().name_obj(py), how)?;
        }
        Ok(d)
    }

    /// Run one step. `feeds` maps every input name to a numpy array of its dtype and shape.
    /// Returns {output name: numpy array}. With `outputs` (a dict holding a C-contiguous,
    /// writeable array of the right dtype and shape for every output) the results are written
    /// into those arrays and that dict is returned; such a call allocates no memory in modelrt.
    /// The GIL is released while the device runs.
    ///
    /// Raises ValueError for a missing, unknown or mis-shaped array (or outputs that share
    /// memory), TypeError for a non-array or a wrong dtype, and modelrt.Error when the device
    /// fails or the Model is used from another thread than the one that loaded it.
    #[pyo3(signature = (feeds, outputs = None))]
    fn run<'py>(
        &self,
        py: Python<'py>,
        feeds: &Bound<'py, PyAny>,
        outputs: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let feeds = feeds::as_dict("input", feeds, &self.inputs)?;
        let outputs = match outputs {
            Some(o) => Some(feeds::as_dict("output", o, &self.outputs)?),
            None => None,
        };
        let mut core = self.core.borrow("run")?;
        let fed = feeds::lookup("input", feeds, &self.inputs)?;
        let (result, given) = match outputs {
            Some(o) => (o.clone(), feeds::lookup("output", o, &self.outputs)?),
            None => {
                let d = PyDict::new(py);
                let mut made = Slots::new();
                for t in &self.outputs {
                    let v = feeds::new_output(self.empty.bind(py), t.get())?;
                    d.set_item(t.get().name_obj(py), &v)?;
                    push(&mut made, v)?;
                }
                (d, made)
            }
        };
        // From here on no Python-level code runs until the run returns (numpy's C API only), and
        // every array is pinned (`pin`): neither a callback nor another thread can resize it.
        let mut pins = Pins::new();
        // Outputs: each a C-contiguous writeable array sharing memory with no other output.
        let mut outs: Slots<(Bound<'py, PyUntypedArray>, (usize, usize))> = Slots::new();
        for (t, v) in self.outputs.iter().zip(&given) {
            let t = t.get();
            let a = feeds::output(t, v)?;
            pins.pin(t.name_str(), &a)?;
            let r = rawbuf::range(&a, t.byte_len());
            if outs.iter().any(|(_, q)| overlaps(*q, r)) {
                return Err(PyValueError::new_err(format!(
                    "'{}' shares memory with another output",
                    t.name_str()
                )));
            }
            push(&mut outs, (a, r))?;
        }
        // Inputs: lent in place when they can be (writeable, C-contiguous, sharing memory with
        // no other input or output; the device then decides per input), else copied, with why.
        let mut ins: Slots<(Bound<'py, PyUntypedArray>, (usize, usize), Lend)> = Slots::new();
        for (t, v) in self.inputs.iter().zip(&fed) {
            let t = t.get();
            let (a, why) = feeds::input(t, v)?;
            pins.pin(t.name_str(), &a)?;
            let r = rawbuf::range(&a, t.byte_len());
            push(&mut ins, (a, r, why.map_or(Lend::Borrow, Lend::Copy)))?;
        }
        for i in 0..ins.len() {
            let r = ins[i].1;
            let shared = outs.iter().any(|(_, q)| overlaps(*q, r))
                || ins
                    .iter()
                    .enumerate()
                    .any(|(j, (_, q, _))| j != i && overlaps(*q, r));
            if shared {
                let c = feeds::copied(&ins[i].0)?;
                pins.pin(self.inputs[i].get().name_str(), &c)?;
                let len = r.1 - r.0;
                ins[i].1 = rawbuf::range(&c, len);
                ins[i].0 = c;
                ins[i].2 = Lend::Copy("copied: shares memory with another input or output");
            } else if matches!(ins[i].2, Lend::Borrow) && !rawbuf::writeable(&ins[i].0) {
                ins[i].2 = Lend::Copy("copied: read-only");
            }
        }
        // Right before the bytes are viewed: every array still is what was checked, where its
        // range was recorded.
        for (t, (a, r)) in self.outputs.iter().zip(outs.iter()) {
            feeds::recheck("output", t.get(), a, true)?;
            debug_assert_eq!(*r, rawbuf::range(a, t.get().byte_len()));
        }
        for (t, (a, r, lend)) in self.inputs.iter().zip(ins.iter()) {
            feeds::recheck("input", t.get(), a, matches!(lend, Lend::Borrow))?;
            debug_assert_eq!(*r, rawbuf::range(a, t.get().byte_len()));
        }
        let mut frame: Slots<FrameInput<'_>> = Slots::new();
        for (t, (a, _, lend)) in self.inputs.iter().zip(ins.iter()) {
            let n = t.get().byte_len();
            push(
                &mut frame,
                match lend {
                    // SAFETY: `a` is C-contiguous with `n` bytes and writeable (rechecked above,
                    // after the last Python-level call), its bytes overlap no other input or
                    // output (checked above); `ins` holds a reference to the array and `pins` a
                    // weak one (numpy then refuses to resize it) until the run returns.
                    Lend::Borrow => FrameInput::Borrow(unsafe { rawbuf::bytes_mut(a, n) }),
                    // SAFETY: C-contiguous with `n` bytes (rechecked above) and pinned; a range
                    // it shares with an output was replaced by a fresh copy above, so no mutable
                    // view overlaps it.
                    Lend::Copy(_) => FrameInput::Copy(unsafe { rawbuf::bytes(a, n) }),
                },
            )?;
        }
        let mut out_bytes: Slots<&mut [u8]> = Slots::new();
        for (t, (a, _)) in self.outputs.iter().zip(outs.iter()) {
            // SAFETY: C-contiguous and writeable with `byte_len` bytes (rechecked above), pinned
            // until the run returns, overlapping no other output or lent input (checked above).
            push(&mut out_bytes, unsafe {
                rawbuf::bytes_mut(a, t.get().byte_len())
            })?;
        }
        let mut paths = [InputPath::Copied; MAX_IO];
        let paths = &mut paths[..frame.len()];
        let model = Detached(&mut core.inner);
        // `pins` lives until after the run: lent arrays stay pinned while the GIL is released.
        let ran = py.detach(|| {
            let model = model;
            catch_unwind(AssertUnwindSafe(|| {
                model.0.run_frame(&mut frame, &mut out_bytes, paths)
            }))
        });
        let outcome = match ran {
            Ok(Ok(t)) => {
                core.last_timing = Some(t);
                core.last_paths.clear();
                for (p, (_, _, lend)) in paths.iter().zip(ins.iter()) {
                    let why = match lend {
                        Lend::Borrow => None,
                        Lend::Copy(why) => Some(*why),
                    };
                    push(&mut core.last_paths, (*p, why))?;
                }
                Ok(result)
            }
            Ok(Err(e)) => Err(runtime(&format!("run failed on {}", self.device), &e)),
            Err(p) => Err(panicked("run", p.as_ref())),
        };
        drop(pins);
        outcome
    }

    /// Put every state buffer back to its load-time contents (a new sequence starts).
    fn reset_state(&self) -> PyResult<()> {
        let mut core = self.core.borrow("reset_state")?;
        guard("reset_state", || {
            core.inner
                .reset_state()
                .map_err(|e| anyhow::anyhow!(e.message))
        })
    }

    /// The current contents of state buffer `name` (see `Model.states`), a flat numpy array.
    fn read_state<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
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
        let mut core = self.core.borrow("read_state")?;
        let bytes = guard("read_state", || core.inner.read_state(i))?;
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
    fn verify<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let mut core = self.core.borrow("verify")?;
        let checks = guard("verify", || core.inner.verify())?;
        report::verify(py, &checks)
    }

    /// What `modelrt info` reports, as a dict: path, device, device_choice, emulated, target,
    /// mapped (whether the bundle file is memory-mapped, see `load(mmap=...)`),
    /// inputs/outputs/states (lists of {"name", "shape", "dtype"}).
    fn info<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("path", self.path.display().to_string())?;
        d.set_item("device", &self.device)?;
        d.set_item("device_choice", self.choice.name())?;
        d.set_item("emulated", self.choice.is_emulated())?;
        d.set_item("target", &self.target)?;
        d.set_item("mapped", self.mapped)?;
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
            self.device,
            names(&self.inputs),
            names(&self.outputs)
        )
    }
}
