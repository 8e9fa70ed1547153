//! Which device runs a bundle: the `--device` choices, which of them can run a bundle's target
//! (checked before any device is opened, so a mismatch is the error a user sees first), and the
//! emulated device that runs a bundle when its hardware is absent (named in the real device's error).
use anyhow::bail;
use modelrt_hal::target::Target;

/// Which backend to use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum DeviceChoice {
    /// The backend the bundle's target calls for.
    Auto,
    /// Host CPU (tinygrad CLANG kernels).
    Cpu,
    /// Qualcomm Adreno through KGSL (comma devices).
    Qcom,
    /// The KGSL model: validates every command stream an Adreno bundle submits and executes its
    /// kernels with the IR3 interpreter, so outputs are computed (for development without a comma device).
    QcomEmu,
    /// Hexagon cDSP through FastRPC (comma devices; never run on hardware): one invoke per step.
    Dsp,
    /// The same FastRPC engine against the FastRPC model, whose DSP side runs the bundle's model library
    /// under qemu-hexagon, so outputs are computed (no DSP involved).
    DspEmu,
    /// An AMD GPU (gfx1100) behind an ASM24 USB bridge, booted by the AM driver (untested on hardware here).
    Usb,
    /// The AM driver against the bridge emulator's Navi31 GPU model; kernels run on the RDNA3
    /// interpreter, so outputs are computed (timings are emulated).
    UsbEmu,
}

impl DeviceChoice {
    /// The name `--device` takes.
    pub fn name(self) -> &'static str {
        match self {
            DeviceChoice::Auto => "auto",
            DeviceChoice::Cpu => "cpu",
            DeviceChoice::Qcom => "qcom",
            DeviceChoice::QcomEmu => "qcom-emu",
            DeviceChoice::Dsp => "dsp",
            DeviceChoice::DspEmu => "dsp-emu",
            DeviceChoice::Usb => "usb",
            DeviceChoice::UsbEmu => "usb-emu",
        }
    }

    /// Whether the device is a software model of the hardware: its times are modelled, not measured.
    pub fn is_emulated(self) -> bool {
        matches!(
            self,
            DeviceChoice::QcomEmu | DeviceChoice::DspEmu | DeviceChoice::UsbEmu
        )
    }

    /// The emulated device that runs bundles of `target` without its hardware ([`devices_for`]'s second
    /// half; `None` where there is none). An associated function so that the existing re-export of
    /// `DeviceChoice` reaches it.
    pub fn emulated_device(target: &Target<'_>) -> Option<DeviceChoice> {
        devices_for(target).1
    }

    /// The target family this device runs (`None` for `auto`, which runs any).
    fn family(self) -> Option<&'static str> {
        match self {
            DeviceChoice::Auto => None,
            DeviceChoice::Cpu => Some("cpu"),
            DeviceChoice::Qcom | DeviceChoice::QcomEmu => Some("adreno"),
            DeviceChoice::Dsp | DeviceChoice::DspEmu => Some("hexagon"),
            DeviceChoice::Usb | DeviceChoice::UsbEmu => Some("amd"),
        }
    }
}

/// The real device for a target and the emulated one that runs its bundles without it (the
/// Navi31 GPU model is a gfx1100: other AMD targets have none).
pub(super) fn devices_for(target: &Target<'_>) -> (DeviceChoice, Option<DeviceChoice>) {
    match target {
        Target::Cpu { .. } => (DeviceChoice::Cpu, None),
        Target::Adreno { .. } => (DeviceChoice::Qcom, Some(DeviceChoice::QcomEmu)),
        Target::Hexagon { .. } => (DeviceChoice::Dsp, Some(DeviceChoice::DspEmu)),
        Target::Amd { gfx: 0x1100 } => (DeviceChoice::Usb, Some(DeviceChoice::UsbEmu)),
        Target::Amd { .. } => (DeviceChoice::Usb, None),
    }
}

/// The device `choice` resolves to for a bundle of `target`, refusing a device that cannot run the
/// bundle's target family (checked before any device is opened, so a mismatch is reported first).
pub fn resolve_device(choice: DeviceChoice, target: &Target<'_>) -> anyhow::Result<DeviceChoice> {
    let family = target.family();
    let (real, emulated) = devices_for(target);
    match choice.family() {
        None => Ok(real),
        Some(f) if f == family => Ok(choice),
        Some(f) => {
            let others = match emulated {
                Some(e) => format!("--device {} (or {}, or auto)", real.name(), e.name()),
                None => format!("--device {} (or auto)", real.name()),
            };
            bail!(
                "this is a {family} bundle; --device {} runs {f} bundles only: use {others}",
                choice.name()
            )
        }
    }
}

/// Add to a real device's open error which emulated device runs the bundle without it (`emu`,
/// when there is one).
pub(super) fn with_emulated_hint(e: anyhow::Error, emu: Option<DeviceChoice>) -> anyhow::Error {
    match emu {
        Some(emu) => anyhow::anyhow!(
            "{e:#} (--device {} runs this bundle on the emulated device instead)",
            emu.name()
        ),
        None => e,
    }
}
