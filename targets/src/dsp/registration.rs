//! The Hexagon devices as the platform registry lists them: [`DSP`] (FastRPC device nodes; never run on a
//! DSP) and [`DSP_EMU`] (the FastRPC model, the model library under qemu-hexagon), both [`DspModel`].
use modelrt_core::bundle::Bundle;
use modelrt_platform::device::{always, serves_all};
use modelrt_platform::{DeviceSpec, LoadedModel, OpenRequest};

use super::model::{Backend, DspModel};

/// Hexagon cDSP through FastRPC.
pub static DSP: DeviceSpec = DeviceSpec {
    name: "dsp",
    help:
        "Hexagon cDSP through FastRPC (comma devices; never run on hardware): one invoke per step",
    family: Some("hexagon"),
    emulated: None,
    hidden: false,
    serves: serves_all,
    available: || std::path::Path::new("/dev/adsprpc-smd").exists(),
    open: open_device,
};

/// The FastRPC model.
pub static DSP_EMU: DeviceSpec = DeviceSpec {
    name: "dsp-emu",
    help: "The same FastRPC engine against the FastRPC model, whose DSP side runs the bundle's model library under qemu-hexagon, so outputs are computed (no DSP involved)",
    family: Some("hexagon"),
    emulated: Some("the FastRPC model's (device time from qemu-hexagon's instruction count)"),
    hidden: false,
    serves: serves_all,
    available: always,
    open: open_model,
};

fn open_device<'b>(
    bundle: Bundle<'b>,
    _: &OpenRequest<'_>,
) -> anyhow::Result<Box<dyn LoadedModel<'b> + 'b>> {
    Ok(Box::new(DspModel::new(bundle, Backend::Device)?))
}

fn open_model<'b>(
    bundle: Bundle<'b>,
    _: &OpenRequest<'_>,
) -> anyhow::Result<Box<dyn LoadedModel<'b> + 'b>> {
    Ok(Box::new(DspModel::new(bundle, Backend::Emulated)?))
}
