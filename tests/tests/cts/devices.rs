//! The devices the conformance suite runs on: every device that computes outputs on this machine, with the target a
//! bundle must be compiled for to run there and what it needs from the machine.
use modelrt_targets::runner::DeviceChoice;
use std::path::PathBuf;

/// One device under test.
pub struct Dev {
    /// The `--device` it is opened as.
    pub device: DeviceChoice,
    /// The compile target of the bundles it runs.
    pub target: &'static str,
}

/// Every device that computes here: the host CPU and the three device models.
pub fn computing() -> Vec<Dev> {
    let host = if cfg!(target_arch = "aarch64") {
        "cpu-aarch64"
    } else {
        "cpu-x86_64"
    };
    vec![
        Dev {
            device: DeviceChoice::Cpu,
            target: host,
        },
        Dev {
            device: DeviceChoice::QcomEmu,
            target: "adreno-a630",
        },
        Dev {
            device: DeviceChoice::UsbEmu,
            target: "amd-gfx1100",
        },
        Dev {
            device: DeviceChoice::DspEmu,
            target: "hexagon-v65",
        },
    ]
}

/// What the machine must have for the suite: the exporter's Python, the AMD firmware (usb-emu) and qemu-hexagon
/// (dsp-emu); `None` after a reported skip (a failure under CI).
pub fn prerequisites() -> Option<PathBuf> {
    let py = modelrt_tests::hexagon::tools()?;
    let fw = modelrt_tests::root().join("target/amdgpu-firmware");
    modelrt_tests::skip::require(
        fw.join("psp_13_0_0_sos.bin").exists().then_some(()),
        "no AMD firmware in target/amdgpu-firmware (run `cargo xtask firmware`)",
    )?;
    if std::env::var_os("MODELRT_AMD_FIRMWARE_DIR").is_none() {
        modelrt_targets::amd_device::set_fallback_firmware_dir(fw);
    }
    Some(py)
}

/// Cases a device does not support yet, with the words of the refusal the suite expects instead (the compile's
/// pre-write check refuses the bundle): a gap is listed here and in docs/architecture.md, never skipped silently,
/// and the suite fails once the device supports the case so the entry is removed.
pub fn known_gap(dev: &Dev, case: &str) -> Option<&'static str> {
    // None today: every device runs every case.
    let _ = (dev.device, case);
    None
}
