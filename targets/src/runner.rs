//! Loading a bundle on this machine: the [`REGISTRY`](crate::registry::REGISTRY) of devices resolves the
//! `--device` choice against the bundle's target (`auto` picks the device the target calls for) and the
//! chosen device's crate opens it; what comes back is a device-independent [`LoadedModel`].
use std::sync::Arc;

use modelrt_core::bundle::Bundle;
use modelrt_hal::target::Target;

pub use modelrt_cpu::{cpu_threads, cpu_threads_for};
pub use modelrt_platform::bundle_file::FileMap;
pub use modelrt_platform::trust::{fingerprint, is_refusal};
pub use modelrt_platform::{
    Caller, DeviceChoice, DeviceOptions, FrameReport, LoadOptions, LoadedModel, MemoryReport,
    PhaseCounts, TrustStore, UsbCounts,
};

use crate::registry::REGISTRY;

/// The device choice `name` names (`auto` or a registered device); the error lists them.
pub fn device(name: &str) -> anyhow::Result<DeviceChoice> {
    REGISTRY.parse(name)
}

/// The device `choice` resolves to for a bundle of `target`, refusing a device that cannot run the
/// bundle's target family (checked before any device is opened, so a mismatch is reported first).
pub fn resolve_device(choice: DeviceChoice, target: &Target<'_>) -> anyhow::Result<DeviceChoice> {
    REGISTRY.resolve(choice, target).map(DeviceChoice::Device)
}

/// The emulated device that runs bundles of `target` without their hardware (the pre-write check's
/// device for a compile), if this build has one.
pub fn emulated_device(target: &Target<'_>) -> Option<DeviceChoice> {
    REGISTRY.emulated_for(target).map(DeviceChoice::Device)
}

/// Load `bundle` on the device `opts` selects (weights are copied into the device's memory).
pub fn load<'b>(
    bundle: Bundle<'b>,
    opts: LoadOptions,
) -> anyhow::Result<Box<dyn LoadedModel<'b> + 'b>> {
    load_mapped(bundle, None, opts)
}

/// [`load`] of a bundle parsed from the bytes of `map` (a read-only mapping of the bundle file,
/// see `modelrt_platform::bundle_file`): the CPU backend reads the weights the bundle never writes in
/// place from it instead of copying them into the arena (`modelrt_cpu::weights`). Other backends copy.
pub fn load_mapped<'b>(
    bundle: Bundle<'b>,
    map: Option<&Arc<FileMap>>,
    opts: LoadOptions,
) -> anyhow::Result<Box<dyn LoadedModel<'b> + 'b>> {
    REGISTRY.load(bundle, map, &opts)
}
