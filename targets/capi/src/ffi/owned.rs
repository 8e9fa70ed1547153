//! A loaded model that owns the bundle file it was parsed from: the runner's `LoadedModel<'b>`
//! borrows the bundle bytes, and a C handle cannot carry a lifetime, so the model and the file it
//! borrows from live in one struct, the model dropped first.
use std::path::Path;

use anyhow::Context;
use modelrt_core::bundle::{Bundle, Table, TensorDesc, MAX_IO};
use modelrt_targets::bundle_file::BundleFile;
use modelrt_targets::runner::{load_with, DeviceChoice, LoadOptions, LoadedModel};

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
        let file = Box::new(BundleFile::open(path, true)?);
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
        let opts = LoadOptions { device, threads: 0 };
        let model = load_with(bundle, file.mapping(), opts, None)
            .with_context(|| format!("cannot load {} on {}", path.display(), device.name()))?;
        Ok(OwnedModel {
            model,
            inputs,
            outputs,
            _file: file,
        })
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
}
