//! The devices the conformance suite runs on: every registered device (`modelrt_targets::registry`) that this machine
//! has — the host CPU, the device models, the null skeleton; real hardware where it is attached — with the target a
//! bundle must be compiled for to run there and what the suite needs from the machine. A backend that registers a
//! device gets every case.
use modelrt_targets::registry::REGISTRY;
use modelrt_targets::runner::DeviceChoice;
use std::path::PathBuf;

/// One device under test.
pub struct Dev {
    /// The `--device` it is opened as.
    pub device: DeviceChoice,
    /// The compile target of the bundles it runs.
    pub target: &'static str,
}

/// The compile target of the suite's bundles for a device of `family` (`None`: a device that runs any target, given
/// the host CPU's bundles). A family without one fails the suite until it is added here.
fn target_for(family: Option<&str>) -> &'static str {
    let host = if cfg!(target_arch = "aarch64") {
        "cpu-aarch64"
    } else {
        "cpu-x86_64"
    };
    match family {
        None | Some("cpu") => host,
        Some("adreno") => "adreno-a630",
        Some("amd") => "amd-gfx1100",
        Some("hexagon") => "hexagon-v65",
        Some(f) => panic!("the conformance suite has no compile target for the {f} family: add one to devices::target_for"),
    }
}

/// Every registered device this machine has, in registry order.
pub fn under_test() -> Vec<Dev> {
    REGISTRY
        .devices()
        .iter()
        .filter(|d| (d.available)())
        .map(|d| Dev {
            device: DeviceChoice::Device(d),
            target: target_for(d.family),
        })
        .collect()
}

#[test]
fn the_device_models_and_the_skeleton_are_under_test() {
    let names: Vec<&str> = under_test().iter().map(|d| d.device.name()).collect();
    for want in ["cpu", "qcom-emu", "usb-emu", "dsp-emu", "null"] {
        assert!(names.contains(&want), "{want} is not under test: {names:?}");
    }
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
        modelrt_amd::platform::set_fallback_firmware_dir(fw);
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
