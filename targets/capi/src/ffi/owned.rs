//! A loaded model that owns the bundle file it was parsed from: the runner's `LoadedModel<'b>`
//! borrows the bundle bytes, and a C handle cannot carry a lifetime, so the model and the file it
//! borrows from live in one struct, the model dropped first.
use std::path::Path;

use anyhow::Context;
use modelrt_core::bundle::{Bundle, Table, TensorDesc, MAX_IO};
use modelrt_core::exec::Timing;
use modelrt_core::verify::{compare_reference, reference_tolerance};
use modelrt_hal::target::DType;
use modelrt_targets::bundle_file::BundleFile;
use modelrt_targets::frame::{FrameInput, InputPath};
use modelrt_targets::runner::{load_mapped, DeviceChoice, LoadOptions, LoadedModel};

use crate::error::{CError, MRT_ERR_RUN};
use crate::info::TensorInfo;

/// The C-side descriptions of a tensor table.
fn infos(ts: Table<'_, TensorDesc<'_>>) -> anyhow::Result<Vec<TensorInfo>> {
    ts.iter().map(|t| TensorInfo::new(&t?)).collect()
}

/// A bundle loaded on a device, with the file its bytes come from.
pub struct OwnedModel {
    // Field order is drop order: `model` borrows from `_file`'s bytes and must go first.
    model: Box<dyn LoadedModel<'static> + 'static>,
    inputs: Vec<TensorInfo>,
    outputs: Vec<TensorInfo>,
    _file: Box<BundleFile>,
}

impl OwnedModel {
    /// Open `path` (mapped read-only, as the CLI does), parse it and load it on `device`.
    pub fn load(path: &Path, device: DeviceChoice) -> anyhow::Result<OwnedModel> {
        OwnedModel::load_with(path, LoadOptions::on(device))
    }

    /// [`load`](Self::load) with CPU threads and device options (as the CLI's `--threads` and, in
    /// `opts.options`, `--firmware-dir`).
    pub fn load_with(path: &Path, opts: LoadOptions) -> anyhow::Result<OwnedModel> {
        OwnedModel::open(path, opts, true)
    }

    /// [`load_with`](Self::load_with), mapping the file (`map`) or reading it into memory
    /// (`!map`: the model then does not depend on the file staying unchanged; see
    /// `modelrt_targets::bundle_file` for the mapping hazard).
    pub fn open(path: &Path, opts: LoadOptions, map: bool) -> anyhow::Result<OwnedModel> {
        let device = opts.device;
        let file = Box::new(BundleFile::open(path, map)?);
        // SAFETY: `bytes` points into the boxed `BundleFile` (its heap buffer or read-only
        // mapping), which is never moved out of its box, never mutated, and dropped only after
        // `model` (field order above); nothing with the `'static` lifetime escapes `OwnedModel`:
        // its methods hand out data borrowed from `&self` or owned copies.
        let bytes: &'static [u8] = unsafe { &*(file.bytes() as *const [u8]) };
        let bundle =
            Bundle::parse(bytes).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        let inputs = infos(bundle.body().inputs)?;
        let outputs = infos(bundle.body().outputs)?;
        anyhow::ensure!(
            inputs.len() <= MAX_IO && outputs.len() <= MAX_IO,
            "the bundle has more than {MAX_IO} inputs or outputs"
        );
        let model = load_mapped(bundle, file.mapping(), opts)
            .with_context(|| format!("cannot load {} on {}", path.display(), device.name()))?;
        Ok(OwnedModel {
            model,
            inputs,
            outputs,
            _file: file,
        })
    }

    /// Whether the bundle's bytes are a mapping of the file (else a copy read at load).
    pub fn is_mapped(&self) -> bool {
        self._file.mapping().is_some()
    }

    pub fn inputs(&self) -> &[TensorInfo] {
        &self.inputs
    }

    pub fn outputs(&self) -> &[TensorInfo] {
        &self.outputs
    }

    /// One step; sizes and counts were checked by the caller against [`inputs`](Self::inputs) /
    /// [`outputs`](Self::outputs) (the executor checks them again). Allocates nothing on success.
    pub fn run(&mut self, inputs: &[&[u8]], outputs: &mut [&mut [u8]]) -> Result<(), CError> {
        self.model
            .run(inputs, outputs)
            .map(|_| ())
            .map_err(|e| CError {
                code: MRT_ERR_RUN,
                message: format!("run failed on {}: {e:#}", self.model.device_name()),
            })
    }

    /// Put every state buffer back to its load-time contents.
    pub fn reset_state(&mut self) -> Result<(), CError> {
        self.model.reset_state().map_err(|e| CError {
            code: MRT_ERR_RUN,
            message: format!("{e:#}"),
        })
    }

    /// One step, with the device's timing (the error unformatted, for non-C callers).
    pub fn run_timed(
        &mut self,
        inputs: &[&[u8]],
        outputs: &mut [&mut [u8]],
    ) -> anyhow::Result<Timing> {
        self.model.run(inputs, outputs)
    }

    /// One step whose inputs may be read in place (`runner::LoadedModel::run_frame`); `paths[i]`
    /// reports how input `i` reached the kernels.
    pub fn run_frame(
        &mut self,
        inputs: &mut [FrameInput<'_>],
        outputs: &mut [&mut [u8]],
        paths: &mut [InputPath],
    ) -> anyhow::Result<Timing> {
        self.model.run_frame(inputs, outputs, paths)
    }

    /// Human-readable description of the device the model runs on.
    pub fn device_name(&self) -> String {
        self.model.device_name()
    }

    /// False when the device only models the hardware and computes no outputs.
    pub fn computes_outputs(&self) -> bool {
        self.model.computes_outputs()
    }

    /// The bundle's state buffers as (label, dtype, bytes), in table order.
    pub fn states(&self) -> Vec<(String, DType, u64)> {
        self.model
            .states()
            .iter()
            .map(|s| (s.label.to_string(), s.dtype, s.size))
            .collect()
    }

    /// Current bytes of state buffer `i` (an index into [`states`](Self::states)).
    pub fn read_state(&mut self, i: usize) -> anyhow::Result<Vec<u8>> {
        self.model.read_state(i)
    }

    /// The bundle's named output slices (format 2.4) as (name, output index, start, stop): elements
    /// `start..stop` along the output's last dimension; empty for a bundle without any.
    pub fn output_slices(&self) -> Vec<(String, usize, u64, u64)> {
        self.model
            .bundle()
            .output_slices()
            .iter()
            .filter_map(|s| {
                let s = s.ok()?;
                Some((s.name.to_string(), s.output as usize, s.start, s.stop))
            })
            .collect()
    }

    /// The model checkpoint the output slices describe (format 2.4), if the bundle names one.
    pub fn checkpoint(&self) -> Option<String> {
        self.model.bundle().checkpoint().map(str::to_string)
    }

    /// The element types of the inputs and the outputs, in table order.
    pub fn dtypes(&self) -> (Vec<DType>, Vec<DType>) {
        let body = self.model.bundle().body();
        let of =
            |ts: Table<'_, TensorDesc<'_>>| ts.iter().filter_map(|t| Some(t.ok()?.dtype)).collect();
        (of(body.inputs), of(body.outputs))
    }

    /// The bundle's target, as the CLI prints it.
    pub fn target(&self) -> String {
        format!("{:?}", self.model.bundle().body().target)
    }

    /// Run the bundle's embedded reference inputs and compare each output with the embedded
    /// expected output within the bundle's tolerances (as `modelrt verify`).
    pub fn verify(&mut self) -> anyhow::Result<Vec<RefCheck>> {
        let b = self.model.bundle();
        let r = b
            .body()
            .reference
            .context("the bundle has no embedded reference (compile it with --reference)")?;
        let inputs: Vec<Vec<u8>> = r
            .inputs
            .iter()
            .map(|t| Ok(t?.data.to_vec()))
            .collect::<anyhow::Result<_>>()?;
        let wants: Vec<Vec<u8>> = r
            .outputs
            .iter()
            .map(|t| Ok(t?.data.to_vec()))
            .collect::<anyhow::Result<_>>()?;
        let (atol, rtol) = (r.atol as f64, r.rtol as f64);
        let mut outs: Vec<Vec<u8>> = self.outputs.iter().map(|t| vec![0; t.nbytes]).collect();
        let ins: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
        let mut outs_ref: Vec<&mut [u8]> = outs.iter_mut().map(Vec::as_mut_slice).collect();
        self.model.run(&ins, &mut outs_ref)?;
        anyhow::ensure!(
            self.model.computes_outputs(),
            "{}: this device executes no kernels, so the outputs cannot be verified",
            self.model.device_name()
        );
        let mut checks = Vec::new();
        for ((t, want), got) in self
            .model
            .bundle()
            .body()
            .outputs
            .iter()
            .zip(&wants)
            .zip(&outs)
        {
            let t = t?;
            let c = compare_reference(t.dtype, got, want, atol, rtol);
            let (atol, rtol) = reference_tolerance(t.dtype, atol, rtol);
            checks.push(RefCheck {
                name: t.name.to_string(),
                ok: c.ok(),
                max_abs: c.max_abs,
                max_rel: c.max_rel,
                mismatches: c.mismatches,
                count: c.count,
                atol,
                rtol,
            });
        }
        Ok(checks)
    }
}

/// One output's comparison with the embedded reference ([`OwnedModel::verify`]).
#[derive(Clone, Debug)]
pub struct RefCheck {
    pub name: String,
    pub ok: bool,
    pub max_abs: f64,
    pub max_rel: f64,
    pub mismatches: u64,
    pub count: u64,
    pub atol: f64,
    pub rtol: f64,
}
