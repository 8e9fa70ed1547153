//! The Hexagon devices as the platform registry lists them (feature `platform`): [`DSP`] (FastRPC device
//! nodes; never run on a DSP) and [`DSP_EMU`] (the FastRPC model, the model library under qemu-hexagon) —
//! the same [`HexagonDevice`](crate::device::HexagonDevice) over two transports, loaded through
//! `modelrt_core::Executor` like every other device, one FastRPC invoke per step.
use modelrt_core::bundle::Bundle;
use modelrt_platform::device::{always, serves_all};
use modelrt_platform::{DeviceSpec, Loaded, LoadedModel, OpenRequest};

use crate::device::{self, Transport};

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

fn open_on<'b>(
    bundle: Bundle<'b>,
    transport: Transport,
) -> anyhow::Result<Box<dyn LoadedModel<'b> + 'b>> {
    let (dev, _) =
        device::open(transport, &Default::default()).map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(Loaded::new(bundle, dev, transport.device_name().into(), true)?.boxed())
}

fn open_device<'b>(
    bundle: Bundle<'b>,
    _: &OpenRequest<'_>,
) -> anyhow::Result<Box<dyn LoadedModel<'b> + 'b>> {
    open_on(bundle, Transport::Device)
}

fn open_model<'b>(
    bundle: Bundle<'b>,
    _: &OpenRequest<'_>,
) -> anyhow::Result<Box<dyn LoadedModel<'b> + 'b>> {
    open_on(bundle, Transport::Emulated)
}
