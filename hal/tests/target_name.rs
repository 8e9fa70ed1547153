//! `TargetName` prints and parses as one spelling: every name round-trips, anything else is refused with
//! a message listing the valid names, and each maps to a bundle `Target` and back.
use modelrt_hal::target::TargetName;
use proptest::prelude::*;

#[test]
fn every_name_round_trips_through_display_and_target() {
    for t in TargetName::ALL {
        assert_eq!(t.to_string().parse::<TargetName>(), Ok(t));
        assert_eq!(TargetName::of(&t.representative()), Some(t));
        assert_eq!(t.representative().family(), t.family());
    }
    assert_eq!(TargetName::host_cpu().family(), "cpu");
}

#[test]
fn the_refusal_lists_every_valid_name() {
    let e = "cpu".parse::<TargetName>().unwrap_err().to_string();
    for t in TargetName::ALL {
        assert!(e.contains(t.as_str()), "{e}");
    }
}

proptest! {
    #[test]
    fn parse_of_display_is_identity(i in 0..TargetName::ALL.len()) {
        let t = TargetName::ALL[i];
        prop_assert_eq!(format!("{t}").parse::<TargetName>(), Ok(t));
    }

    #[test]
    fn unknown_strings_are_refused(s in "\\PC{0,16}") {
        let known = TargetName::ALL.iter().any(|t| t.as_str() == s);
        prop_assert_eq!(s.parse::<TargetName>().is_ok(), known);
    }

    #[test]
    fn near_misses_are_refused(i in 0..TargetName::ALL.len(), extra in "[a-z0-9_-]{1,3}") {
        let name = TargetName::ALL[i].as_str();
        let longer = format!("{name}{extra}");
        prop_assert!(longer.parse::<TargetName>().is_err());
        prop_assert!(name[..name.len() - 1].parse::<TargetName>().is_err());
        prop_assert!(name.to_uppercase().parse::<TargetName>().is_err());
    }
}
