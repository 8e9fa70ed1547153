//! Device names the C API accepts: exactly the CLI's `--device` values, from the registry (`NULL` means `auto`).
use modelrt_targets::registry::REGISTRY;
use modelrt_targets::runner::DeviceChoice;

use crate::error::CError;

/// The device called `name` (the CLI's `--device` spelling: `auto` or a registered device).
pub fn parse(name: Option<&str>) -> Result<DeviceChoice, CError> {
    let Some(name) = name else {
        return Ok(DeviceChoice::Auto);
    };
    REGISTRY.parse(name).map_err(|_| {
        CError::invalid(format!(
            "unknown device \"{name}\": use one of {} (or NULL for auto)",
            REGISTRY.names().join(", ")
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_clis() {
        assert_eq!(
            parse(Some("usb-emu")).unwrap(),
            modelrt_targets::runner::device("usb-emu").unwrap()
        );
        assert_eq!(
            parse(Some("qcom-emu")).unwrap(),
            modelrt_targets::runner::device("qcom-emu").unwrap()
        );
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
