//! Device names the C API accepts: exactly the CLI's `--device` values, from the registry (`NULL` means `auto`);
//! a multi-device bundle takes one per role, comma-separated (`qcom-emu,usb-emu`), as the CLI does.
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

/// [`parse`] of a device list: the first device and, for more than one, every device in role order
/// (`LoadOptions::device` and `LoadOptions::roles`).
pub fn parse_roles(name: Option<&str>) -> Result<(DeviceChoice, Vec<DeviceChoice>), CError> {
    match name {
        Some(list) if list.contains(',') => {
            let roles = list
                .split(',')
                .map(|n| parse(Some(n.trim())))
                .collect::<Result<Vec<_>, _>>()?;
            Ok((roles[0], roles))
        }
        one => Ok((parse(one)?, Vec::new())),
    }
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

    #[test]
    fn a_list_gives_one_device_per_role() {
        let (first, roles) = parse_roles(Some("qcom-emu,usb-emu")).unwrap();
        assert_eq!(first.name(), "qcom-emu");
        let names: Vec<&str> = roles.iter().map(|d| d.name()).collect();
        assert_eq!(names, ["qcom-emu", "usb-emu"]);
        assert!(parse_roles(Some("usb-emu")).unwrap().1.is_empty());
        assert!(parse_roles(Some("qcom-emu,gpu")).is_err());
    }
}
