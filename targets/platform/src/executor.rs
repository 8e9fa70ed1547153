//! [`Loaded`]: the [`LoadedModel`] every backend returns — a `modelrt_core::Executor` over the
//! backend's `modelrt_hal::device::Device`, so I/O checks, states and timing are one code path for every
//! device. A backend sets how it runs frames and which reports it adds; nothing else differs.
use anyhow::Context;
use modelrt_core::bundle::Bundle;
use modelrt_core::{ExecError, Executor, InputSource, StateInfo, Timing};
use modelrt_hal::device::Device;

use crate::frame::{copy_frame, FrameInput, InputPath};
use crate::loaded::{LoadedModel, MemoryReport, PhaseCounts, UsbCounts, WeightBinding};

/// How a backend runs a frame (the CPU binds borrowed inputs in place; others copy).
pub type FrameFn<D> =
    for<'e, 'b, 'i, 'o, 'p, 'q> fn(
        &'e mut Executor<'b, D>,
        &'i mut [FrameInput<'p>],
        &'o mut [&'q mut [u8]],
        &'o mut [InputPath],
    ) -> Result<Timing, ExecError<<D as Device>::Error>>;

/// A run's error as one line; an index input out of range is named with what it indexes.
fn run_error<E: std::fmt::Display>(bundle: &Bundle<'_>, e: ExecError<E>) -> anyhow::Error {
    match e {
        ExecError::IndexRange(v) => anyhow::anyhow!("{}", v.describe(bundle)),
        ExecError::IndexUnreadable { input } => {
            let name = bundle.body().inputs.get(input as usize).map(|t| t.name);
            anyhow::anyhow!(
                "input '{}' is range-checked (it indexes a table) and must be passed as bytes, not bound in place",
                name.unwrap_or("?")
            )
        }
        e => anyhow::anyhow!("{e}"),
    }
}

/// How a backend reports its memory after load.
pub type MemoryFn<D> = fn(&mut D, &WeightBinding) -> MemoryReport;

/// A bundle loaded on a `modelrt_hal::device::Device` through `modelrt_core::Executor`.
pub struct Loaded<'b, D: Device> {
    exec: Executor<'b, D>,
    name: String,
    computes: bool,
    frame: FrameFn<D>,
    /// Reads the device's USB transfer counters (devices behind a USB bridge).
    usb: Option<fn(&mut D) -> UsbCounts>,
    /// Reports the device's memory (the CPU), with the weights it binds in place.
    memory: Option<(MemoryFn<D>, WeightBinding)>,
}

impl<'b, D: Device + 'b> Loaded<'b, D>
where
    D::Error: Send + Sync + 'static,
{
    /// Load `bundle` on `dev` (`Executor::load`: the init phase runs here), named `name` in
    /// messages; `computes` is false for a device that computes no outputs. Frames copy their
    /// inputs ([`copy_frame`]) unless [`with_frame`](Self::with_frame) says otherwise.
    pub fn new(bundle: Bundle<'b>, dev: D, name: String, computes: bool) -> anyhow::Result<Self> {
        let exec =
            Executor::load(bundle, dev).map_err(|e| anyhow::anyhow!("cannot load bundle: {e}"))?;
        Ok(Loaded {
            exec,
            name,
            computes,
            frame: copy_frame::<D>,
            usb: None,
            memory: None,
        })
    }

    /// Run frames with `frame` (a backend that reads borrowed inputs in place).
    pub fn with_frame(self, frame: FrameFn<D>) -> Self {
        Loaded { frame, ..self }
    }

    /// Report the device's USB transfer counters with `counts`.
    pub fn with_usb_counts(self, counts: fn(&mut D) -> UsbCounts) -> Self {
        Loaded {
            usb: Some(counts),
            ..self
        }
    }

    /// Report the device's memory with `report`, given the weights bound in place at load.
    pub fn with_memory(self, report: MemoryFn<D>, weights: WeightBinding) -> Self {
        Loaded {
            memory: Some((report, weights)),
            ..self
        }
    }

    /// The executor (a backend's own API on its device, e.g. binding a camera buffer).
    pub fn executor_mut(&mut self) -> &mut Executor<'b, D> {
        &mut self.exec
    }

    /// Box it as the device-independent [`LoadedModel`].
    pub fn boxed(self) -> Box<dyn LoadedModel<'b> + 'b> {
        Box::new(self)
    }
}

impl<'b, D: Device> LoadedModel<'b> for Loaded<'b, D>
where
    D::Error: Send + Sync + 'static,
{
    fn bundle(&self) -> &Bundle<'b> {
        self.exec.bundle()
    }
    fn run(&mut self, inputs: &[&[u8]], outputs: &mut [&mut [u8]]) -> anyhow::Result<Timing> {
        let r = self.exec.run(inputs, outputs);
        r.map_err(|e| run_error(self.exec.bundle(), e))
    }
    fn device_name(&self) -> String {
        self.name.clone()
    }
    fn computes_outputs(&self) -> bool {
        self.computes
    }
    fn states(&self) -> Vec<StateInfo<'b>> {
        (0..self.exec.state_count())
            .filter_map(|i| self.exec.state(i))
            .collect()
    }
    fn read_state(&mut self, i: usize) -> anyhow::Result<Vec<u8>> {
        let size = self
            .exec
            .state(i)
            .with_context(|| format!("no state buffer {i}"))?
            .size;
        let mut out = vec![0u8; usize::try_from(size)?];
        self.exec
            .read_state(i, &mut out)
            .map_err(|e| anyhow::anyhow!("cannot read state buffer {i}: {e}"))?;
        Ok(out)
    }
    fn reset_state(&mut self) -> anyhow::Result<()> {
        self.exec
            .reset_state()
            .map_err(|e| anyhow::anyhow!("cannot reset state: {e}"))
    }
    fn run_frame(
        &mut self,
        inputs: &mut [FrameInput<'_>],
        outputs: &mut [&mut [u8]],
        paths: &mut [InputPath],
    ) -> anyhow::Result<Timing> {
        let r = (self.frame)(&mut self.exec, inputs, outputs, paths);
        r.map_err(|e| run_error(self.exec.bundle(), e))
    }
    fn usb_counts(&mut self) -> Option<UsbCounts> {
        self.usb.map(|f| f(self.exec.device_mut()))
    }
    fn run_phased(
        &mut self,
        inputs: &[&[u8]],
        outputs: &mut [&mut [u8]],
    ) -> anyhow::Result<(Timing, Option<PhaseCounts>)> {
        let Some(counts) = self.usb else {
            return Ok((self.run(inputs, outputs)?, None));
        };
        // `run` is `run_with` of copied inputs and the device's own submit: the counters are read
        // around the submit, so uploads, launch and downloads fall apart. Without index checks
        // (which read copied inputs), the inputs are uploaded here one by one, each counted, and
        // passed on as bound — what `run` would have uploaded, in the same order.
        let c0 = counts(self.exec.device_mut());
        let mut per_input = Vec::new();
        let sources: Vec<InputSource<'_>> = if self.exec.bundle().index_checks().is_empty() {
            for (i, data) in inputs.iter().enumerate() {
                let range = self
                    .exec
                    .input_range(i)
                    .with_context(|| format!("no input {i} (the bundle has fewer)"))?;
                if range.len != data.len() as u64 {
                    anyhow::bail!("input {i} is {} bytes, expected {}", data.len(), range.len);
                }
                let d = self.exec.device_mut();
                let before = counts(d);
                d.upload(range.offset, data)
                    .map_err(|e| anyhow::anyhow!("cannot upload input {i}: {e}"))?;
                per_input.push(counts(d).since(&before));
            }
            vec![InputSource::Bound; inputs.len()]
        } else {
            inputs.iter().map(|d| InputSource::Copy(d)).collect()
        };
        let mut around = (c0, c0);
        let r = self.exec.run_with(&sources, outputs, |d, q| {
            let before = counts(d);
            let t = d.submit(q);
            around = (before, counts(d));
            t
        });
        let timing = r.map_err(|e| run_error(self.exec.bundle(), e))?;
        let c3 = counts(self.exec.device_mut());
        Ok((
            timing,
            Some(PhaseCounts {
                copy_in: around.0.since(&c0),
                launch: around.1.since(&around.0),
                copy_out: c3.since(&around.1),
                per_input,
            }),
        ))
    }
    fn memory(&mut self) -> Option<MemoryReport> {
        let (f, w) = self.memory.as_ref()?;
        Some(f(self.exec.device_mut(), w))
    }
}
