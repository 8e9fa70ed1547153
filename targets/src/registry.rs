//! The devices this build registers, one line each, in `--help` order. Adding a backend is its own crate
//! (a `modelrt_platform::DeviceSpec` per device it provides) plus a line here
//! (docs/architecture.md, "Adding a backend").
use modelrt_platform::{DeviceSpec, Registry};

static DEVICES: &[&DeviceSpec] = &[
    &modelrt_cpu::registration::CPU,
    &modelrt_qcom::platform::QCOM,
    &modelrt_qcom::platform::QCOM_EMU,
    &modelrt_hexagon::platform::DSP,
    &modelrt_hexagon::platform::DSP_EMU,
    &modelrt_amd::platform::USB,
    &modelrt_amd::platform::USB_EMU,
    &modelrt_null::NULL,
];

/// Every device of this build.
pub static REGISTRY: Registry = Registry::new(DEVICES);
