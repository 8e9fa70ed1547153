//! The registered devices ([`Registry`]): which of them may run a bundle's target (checked before any
//! device is opened, so a mismatch is the error a user sees first), which one `auto` picks, the
//! emulated device that runs a bundle when its hardware is absent (named in the real device's errors),
//! and loading.
use std::sync::Arc;

use anyhow::bail;
use modelrt_core::bundle::Bundle;
use modelrt_hal::target::Target;

use crate::bundle_file::FileMap;
use crate::device::{DeviceChoice, DeviceSpec, OpenRequest};
use crate::loaded::LoadedModel;
use crate::options::{Caller, LoadOptions};

/// The devices a platform assembly registered, in `--help` order.
#[derive(Clone, Copy, Debug)]
pub struct Registry {
    devices: &'static [&'static DeviceSpec],
}

impl Registry {
    /// A registry of `devices` (names must be unique; `auto` is reserved).
    pub const fn new(devices: &'static [&'static DeviceSpec]) -> Registry {
        Registry { devices }
    }

    /// Every registered device.
    pub fn devices(&self) -> &'static [&'static DeviceSpec] {
        self.devices
    }

    /// The choice `name` names (`auto` or a registered device); the error lists the names.
    pub fn parse(&self, name: &str) -> anyhow::Result<DeviceChoice> {
        if name == "auto" {
            return Ok(DeviceChoice::Auto);
        }
        match self.devices.iter().find(|d| d.name == name) {
            Some(d) => Ok(DeviceChoice::Device(d)),
            None => bail!(
                "unknown device {name:?}: expected one of {}",
                self.names().join(", ")
            ),
        }
    }

    /// A comma-separated device list (`qcom-emu,usb-emu`: one device per role of a multi-device
    /// bundle, in role order); one name gives one choice.
    pub fn parse_list(&self, names: &str) -> anyhow::Result<Vec<DeviceChoice>> {
        names.split(',').map(|n| self.parse(n.trim())).collect()
    }

    /// `auto` and every device's name that `--help` shows.
    pub fn names(&self) -> Vec<&'static str> {
        std::iter::once("auto")
            .chain(self.devices.iter().filter(|d| !d.hidden).map(|d| d.name))
            .collect()
    }

    /// The real device that serves `target` and the emulated one that runs its bundles without it
    /// (the first registered of each).
    pub fn devices_for(
        &self,
        target: &Target<'_>,
    ) -> (Option<&'static DeviceSpec>, Option<&'static DeviceSpec>) {
        let family = target.family();
        let find = |emulated: bool| {
            self.devices.iter().copied().find(|d| {
                d.emulated.is_some() == emulated && d.family == Some(family) && (d.serves)(target)
            })
        };
        (find(false), find(true))
    }

    /// The emulated device that runs bundles of `target` without the hardware, if one is registered.
    pub fn emulated_for(&self, target: &Target<'_>) -> Option<&'static DeviceSpec> {
        self.devices_for(target).1
    }

    /// The device `choice` resolves to for a bundle of `target`, refusing a device that cannot run
    /// the bundle's target family (checked before any device is opened, so a mismatch is reported first).
    pub fn resolve(
        &self,
        choice: DeviceChoice,
        target: &Target<'_>,
    ) -> anyhow::Result<&'static DeviceSpec> {
        self.resolve_for(choice, target, Caller::Cli)
    }

    /// [`resolve`](Self::resolve), its suggestions worded for `caller`.
    pub fn resolve_for(
        &self,
        choice: DeviceChoice,
        target: &Target<'_>,
        caller: Caller,
    ) -> anyhow::Result<&'static DeviceSpec> {
        let (dev, alt) = (|n: &str| caller.device(n), |n: &str| caller.alternative(n));
        let family = target.family();
        let (real, emulated) = self.devices_for(target);
        match choice {
            DeviceChoice::Auto => match real.or(emulated) {
                Some(d) => Ok(d),
                None => bail!("no registered device runs {family} bundles"),
            },
            DeviceChoice::Device(d) => match d.family {
                None => Ok(d),
                Some(f) if f == family => Ok(d),
                Some(f) => {
                    if let Some(why) = crate::foreign_cpu::refusal(target) {
                        bail!("{why}; {} runs {f} bundles only", dev(d.name));
                    }
                    let others = match (real, emulated) {
                        (Some(r), Some(e)) => {
                            format!("{} (or {}, or {})", dev(r.name), alt(e.name), alt("auto"))
                        }
                        (Some(o), None) | (None, Some(o)) => {
                            format!("{} (or {})", dev(o.name), alt("auto"))
                        }
                        (None, None) => "another build: no registered device runs them".into(),
                    };
                    bail!(
                        "this is a {family} bundle; {} runs {f} bundles only: use {others}",
                        dev(d.name)
                    )
                }
            },
        }
    }

    /// Load `bundle` on the device `opts` selects. `map` is the read-only mapping the bundle was
    /// parsed from, when it was: a backend may read weights in place from it (the CPU does); the
    /// others copy them into their memory. A real device's open error names the emulated device
    /// that runs the bundle without it. With `opts.trusted_keys`, the bundle's signature is checked
    /// first (`crate::trust`).
    pub fn load<'b>(
        &self,
        bundle: Bundle<'b>,
        map: Option<&Arc<FileMap>>,
        opts: &LoadOptions,
    ) -> anyhow::Result<Box<dyn LoadedModel<'b> + 'b>> {
        // The trust check comes first: nothing of a refused bundle reaches a device.
        if let Some(store) = &opts.trusted_keys {
            store.check(bundle.bytes())?;
        }
        if bundle.multi().is_some() {
            return crate::multi::load_multi(self, bundle, map, opts);
        }
        if opts.roles.len() > 1 {
            anyhow::bail!(
                "this bundle has one target; {} devices were given (a device list is for multi-device bundles)",
                opts.roles.len()
            );
        }
        let caller = opts.options.get::<Caller>().copied().unwrap_or_default();
        let spec = self.resolve_for(opts.device, &bundle.body().target, caller)?;
        let emulated = self.emulated_for(&bundle.body().target);
        let req = OpenRequest {
            map,
            threads: opts.threads,
            options: &opts.options,
        };
        (spec.open)(bundle, &req).map_err(|e| match emulated {
            Some(emu) if spec.emulated.is_none() => anyhow::anyhow!(
                "{e:#} ({} runs this bundle on the emulated device instead)",
                caller.device(emu.name)
            ),
            _ => e,
        })
    }
}
