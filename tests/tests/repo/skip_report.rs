//! The skip helper every prerequisite gate goes through: a skip is printed and appended to the skip log,
//! and is a test failure whenever CI is set or `MODELRT_REQUIRE_PYTHON=1`.
use std::path::PathBuf;

use modelrt_tests::skip::{record, Policy};

fn log_file(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("modelrt-skip-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("skips.log");
    let _ = std::fs::remove_file(&f);
    f
}

#[test]
fn an_allowed_skip_is_logged_and_returns() {
    let log = log_file("allow");
    record(Policy::Allow, Some(&log), "bin::a", "no python");
    record(Policy::Allow, Some(&log), "bin::b", "no qemu");
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        "SKIPPED bin::a: no python\nSKIPPED bin::b: no qemu\n"
    );
}

#[test]
fn a_skip_under_ci_is_logged_then_fails() {
    let log = log_file("fail");
    let r = std::panic::catch_unwind(|| record(Policy::Fail, Some(&log), "bin::c", "no python"));
    let msg = r.expect_err("a skip under CI must fail the test");
    let msg = msg.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(msg.contains("bin::c cannot run: no python"), "{msg}");
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        "SKIPPED bin::c: no python\n"
    );
}

/// The only test in this binary that touches the environment, so nothing races with it.
#[test]
fn ci_or_require_python_makes_skips_fail() {
    let cases: [(Option<&str>, Option<&str>, Policy); 7] = [
        (None, None, Policy::Allow),
        (Some("true"), None, Policy::Fail),
        (Some("1"), None, Policy::Fail),
        (Some("false"), None, Policy::Allow),
        (Some(""), None, Policy::Allow),
        (None, Some("1"), Policy::Fail),
        (Some("false"), Some("1"), Policy::Fail),
    ];
    for (ci, require, want) in cases {
        match ci {
            Some(v) => std::env::set_var("CI", v),
            None => std::env::remove_var("CI"),
        }
        match require {
            Some(v) => std::env::set_var("MODELRT_REQUIRE_PYTHON", v),
            None => std::env::remove_var("MODELRT_REQUIRE_PYTHON"),
        }
        assert_eq!(Policy::from_env(), want, "CI={ci:?} REQUIRE={require:?}");
    }
}
