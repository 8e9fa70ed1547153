//! The declared MSRV is honest and inherited: the root `Cargo.toml` sets `rust-version` under
//! `[workspace.package]`, every workspace member inherits it (`rust-version.workspace = true`, no
//! literal of its own), the out-of-workspace footprint probe repeats the same value, and the value is
//! the `major.minor` of the compiler this test suite is built and run with — the one toolchain CI
//! uses, so the only version the code is known to build with. When CI moves to a newer compiler,
//! this fails until someone decides: keep testing the old toolchain too, or raise the MSRV.
use std::path::Path;
use std::process::Command;

use modelrt_tests::root;

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The quoted value of `key = "..."` on a line of its own in `text`.
fn string_value(text: &str, key: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let rest = l.trim().strip_prefix(key)?.trim_start().strip_prefix('=')?;
        Some(
            rest.trim()
                .strip_prefix('"')?
                .split('"')
                .next()?
                .to_string(),
        )
    })
}

/// The workspace's declared MSRV and member directories.
fn workspace() -> (String, Vec<String>) {
    let text = read(&root().join("Cargo.toml"));
    let package = text
        .split("[workspace.package]")
        .nth(1)
        .expect("no [workspace.package] table")
        .split("\n[")
        .next()
        .unwrap();
    let msrv = string_value(package, "rust-version").expect("no workspace rust-version");
    let members = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("members"))
        .expect("no members list");
    let members = members
        .split('"')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect();
    (msrv, members)
}

#[test]
fn every_member_inherits_the_workspace_msrv() {
    let (_, members) = workspace();
    assert!(members.len() >= 7, "members: {members:?}");
    for m in &members {
        let text = read(&root().join(m).join("Cargo.toml"));
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        assert!(
            lines.contains(&"rust-version.workspace = true"),
            "{m}/Cargo.toml does not inherit rust-version from the workspace"
        );
        assert_eq!(
            string_value(&text, "rust-version"),
            None,
            "{m}/Cargo.toml sets its own rust-version"
        );
    }
}

#[test]
fn footprint_probe_repeats_the_msrv() {
    let (msrv, _) = workspace();
    let probe = read(&root().join("tests/footprint/Cargo.toml"));
    assert_eq!(string_value(&probe, "rust-version"), Some(msrv));
}

#[test]
fn msrv_is_the_compiler_ci_builds_with() {
    let (msrv, _) = workspace();
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let out = Command::new(&rustc)
        .arg("--version")
        .output()
        .expect("cannot run rustc --version");
    let text = String::from_utf8(out.stdout).unwrap();
    // "rustc 1.95.0 (59807616e 2026-03-21)"
    let version = text
        .split_whitespace()
        .nth(1)
        .expect("no version in rustc --version");
    let major_minor: Vec<&str> = version.split(['.', '-']).take(2).collect();
    assert_eq!(
        major_minor.join("."),
        msrv,
        "rust-version {msrv} is not the toolchain CI builds with ({text})"
    );
}
