//! What a backend registers: a [`DeviceSpec`] per device it provides (`--device` name, help, the target
//! family it runs, whether it is a software model, its open function), and the [`DeviceChoice`] a user
//! makes among the registered devices.
use std::sync::Arc;

use modelrt_core::bundle::Bundle;
use modelrt_hal::target::Target;

use crate::bundle_file::FileMap;
use crate::loaded::LoadedModel;
use crate::options::DeviceOptions;

/// Opens the device and loads `bundle` on it (the bundle's target was already checked against the
/// spec's family by the registry).
pub type OpenFn =
    for<'b, 'r> fn(Bundle<'b>, &OpenRequest<'r>) -> anyhow::Result<Box<dyn LoadedModel<'b> + 'b>>;

/// One device a backend provides.
#[derive(Debug)]
pub struct DeviceSpec {
    /// The name `--device` (and the Python/C APIs) take, e.g. `qcom-emu`.
    pub name: &'static str,
    /// One sentence for `--help`: what the device is and how much of it is real.
    pub help: &'static str,
    /// The target family it runs (`modelrt_hal::target::Target::family`); `None` runs any (a device
    /// that computes nothing, like the null skeleton).
    pub family: Option<&'static str>,
    /// For a software model of the hardware (its times are modelled, not measured): whose times it
    /// reports, for the "emulated" note of `modelrt bench` (e.g. "the KGSL model's (kernels on the IR3
    /// interpreter)"). `None` for real devices.
    pub emulated: Option<&'static str>,
    /// Left out of `--help` (the null skeleton).
    pub hidden: bool,
    /// Whether this device is the one to offer for `target` — chosen by `auto` (real devices) or named
    /// as the alternative in a real device's errors (emulated ones). A device whose family matches but
    /// which does not serve a target can still be asked for by name.
    pub serves: fn(&Target<'_>) -> bool,
    /// Whether this machine has the device (the hardware's node or bridge is present; software
    /// models always are). Only a cheap presence check: opening may still fail.
    pub available: fn() -> bool,
    /// Opens it and loads a bundle.
    pub open: OpenFn,
}

/// Serves every target of the device's family.
pub fn serves_all(_: &Target<'_>) -> bool {
    true
}

/// Always available (the host CPU, software models).
pub fn always() -> bool {
    true
}

/// What a backend's [`OpenFn`] gets besides the bundle.
#[derive(Clone, Copy, Debug)]
pub struct OpenRequest<'a> {
    /// The read-only mapping the bundle was parsed from, when it was (a backend may read weights in
    /// place from it; the others copy).
    pub map: Option<&'a Arc<FileMap>>,
    /// Host worker threads asked for (0 = the backend's choice; backends without host threads ignore it).
    pub threads: usize,
    /// The per-family options (`DeviceOptions::get`).
    pub options: &'a DeviceOptions,
}

/// Which device to use: `auto` (the one the bundle's target calls for) or a registered device.
#[derive(Clone, Copy, Debug, Default)]
pub enum DeviceChoice {
    /// The device the bundle's target calls for.
    #[default]
    Auto,
    /// This registered device.
    Device(&'static DeviceSpec),
}

impl PartialEq for DeviceChoice {
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name()
    }
}

impl Eq for DeviceChoice {}

impl DeviceChoice {
    /// The name `--device` takes.
    pub fn name(self) -> &'static str {
        match self {
            DeviceChoice::Auto => "auto",
            DeviceChoice::Device(d) => d.name,
        }
    }

    /// Whether the device is a software model of the hardware: its times are modelled, not measured.
    pub fn is_emulated(self) -> bool {
        matches!(self, DeviceChoice::Device(d) if d.emulated.is_some())
    }

    /// The registered device, `None` for `auto`.
    pub fn spec(self) -> Option<&'static DeviceSpec> {
        match self {
            DeviceChoice::Auto => None,
            DeviceChoice::Device(d) => Some(d),
        }
    }
}

impl std::fmt::Display for DeviceChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
