//! [`NULL`]: the null device as the registry lists it — hidden from `--help`, any target, computes nothing.
use modelrt_core::bundle::Bundle;
use modelrt_platform::device::{always, serves_all};
use modelrt_platform::{DeviceSpec, Loaded, LoadedModel, OpenRequest};

use crate::NullDevice;

/// The skeleton device.
pub static NULL: DeviceSpec = DeviceSpec {
    name: "null",
    help: "The skeleton backend: loads a bundle of any target, checks inputs and outputs and runs its copies, runs no kernels",
    family: None,
    emulated: None,
    hidden: true,
    serves: serves_all,
    available: always,
    open,
};

fn open<'b>(
    bundle: Bundle<'b>,
    _: &OpenRequest<'_>,
) -> anyhow::Result<Box<dyn LoadedModel<'b> + 'b>> {
    let name = "null (skeleton backend: runs no kernels)".to_string();
    Ok(Loaded::new(bundle, NullDevice::new(), name, false)?.boxed())
}
