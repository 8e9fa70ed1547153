//! The comma CPU architecture: the aarch64 `modelrt` from `cargo xtask dist`, run under `qemu-aarch64`
//! (Debian's qemu-user) on `cpu-aarch64` bundles, must match onnxruntime. `cargo xtask ci` builds the
//! binary and passes it in `MODELRT_AARCH64_BIN`.
use std::path::PathBuf;
use std::process::Command;

use modelrt_tests::{compile, python, root, skip};

fn aarch64_modelrt() -> Option<PathBuf> {
    let bin = std::env::var_os("MODELRT_AARCH64_BIN")
        .map(PathBuf::from)
        .filter(|p| p.exists());
    let bin = skip::require(
        bin,
        "no aarch64 modelrt (set MODELRT_AARCH64_BIN; `cargo xtask ci` builds it with `cargo xtask dist`)",
    )?;
    let has_qemu = Command::new("qemu-aarch64")
        .arg("--version")
        .output()
        .is_ok();
    skip::require(
        has_qemu.then_some(bin),
        "no qemu-aarch64 (Debian package qemu-user; `cargo xtask setup` installs it)",
    )
}

fn qemu(bin: &PathBuf, args: &[&str]) -> std::process::Output {
    Command::new("qemu-aarch64")
        .args(["-L", "/usr/aarch64-linux-gnu"])
        .arg(bin)
        .args(args)
        .output()
        .expect("qemu-aarch64 runs (Debian package qemu-user)")
}

#[test]
#[ignore = "heavy: run by `cargo xtask ci --full` (docs/testing.md)"]
fn aarch64_modelrt_matches_onnxruntime_under_qemu() {
    let Some(bin) = aarch64_modelrt() else { return };
    let Some(py) = python() else { return };
    for model in ["policy", "vision"] {
        let b = compile(
            &py,
            &root().join(format!("xtask/models/{model}.onnx")),
            "cpu-aarch64",
            true,
            "",
        );
        let o = qemu(&bin, &["verify", b.to_str().unwrap()]);
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success(),
            "{model}: {out}{}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(
            out.contains("verified    outputs match the embedded reference"),
            "{out}"
        );
    }
}

#[test]
fn aarch64_demo_runs_under_qemu() {
    let Some(bin) = aarch64_modelrt() else { return };
    let o = qemu(&bin, &["demo"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(out.contains("verify features: ok"), "{out}");
}
