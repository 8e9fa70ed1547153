//! Device names the C API accepts: exactly the CLI's `--device` values (`NULL` means `auto`).
use modelrt_targets::runner::DeviceChoice;

use crate::error::CError;

const ALL: [DeviceChoice; 8] = [
    DeviceChoice::Auto,
    DeviceChoice::Cpu,
    DeviceChoice::Qcom,
    DeviceChoice::QcomEmu,
    DeviceChoice::Dsp,
    DeviceChoice::DspEmu,
    DeviceChoice::Usb,
    DeviceChoice::UsbEmu,
];

/// The device called `name` (the CLI's `--device` spelling).
pub fn parse(name: Option<&str>) -> Result<DeviceChoice, CError> {
    let Some(name) = name else {
        return Ok(DeviceChoice::Auto);
    };
    ALL.into_iter().find(|d| d.name() == name).ok_or_else(|| {
        let names: Vec<&str> = ALL.iter().map(|d| d.name()).collect();
        CError::invalid(format!(
            "unknown device \"{name}\": use one of {} (or NULL for auto)",
            names.join(", ")
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_clis() {
        assert_eq!(parse(Some("usb-emu")).unwrap(), DeviceChoice::UsbEmu);
        assert_eq!(parse(Some("qcom-emu")).unwrap(), DeviceChoice::QcomEmu);
        assert_eq!(parse(None).unwrap(), DeviceChoice::Auto);
        let e = parse(Some("gpu")).unwrap_err();
        assert!(
            e.message.contains("unknown device \"gpu\""),
            "{}",
            e.message
        );
        assert!(e.message.contains("dsp-emu"), "{}", e.message);
    }
}
