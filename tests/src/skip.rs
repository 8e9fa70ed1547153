//! The one way a test says it could not run: a missing prerequisite (the exporter's Python, the aarch64
//! `modelrt`, qemu, LLVM tools) goes through [`skip`], never a bare early `return`.
//!
//! A skip is always visible: it prints `SKIPPED <test>: <reason>` on stderr (past libtest's capture) and, when `MODELRT_SKIP_LOG`
//! names a file, appends the same line there (`cargo xtask ci` sets it and prints the count and reasons
//! after the test step, failing if there are any). When skips are not allowed — `CI` is set (to anything
//! but `false`/`0`/empty) or `MODELRT_REQUIRE_PYTHON=1` — the skip is recorded and then the test fails.
//!
//! This file is also compiled into test binaries of crates that cannot depend on `modelrt-tests`
//! (`#[path]`-included), so it uses only `std`.
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};

/// Environment variable naming the skip log file.
pub const SKIP_LOG_ENV: &str = "MODELRT_SKIP_LOG";

/// Whether a skip is reported and tolerated, or reported and then a failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// Report the skip; the test passes.
    Allow,
    /// Report the skip, then fail the test.
    Fail,
}

impl Policy {
    /// The policy the environment asks for (see the module doc).
    pub fn from_env() -> Policy {
        let ci = std::env::var("CI").unwrap_or_default();
        let ci = !matches!(ci.trim(), "" | "0" | "false" | "FALSE" | "False");
        let require = std::env::var("MODELRT_REQUIRE_PYTHON").as_deref() == Ok("1");
        if ci || require {
            Policy::Fail
        } else {
            Policy::Allow
        }
    }
}

/// The running test as `binary::test` (libtest names each test's thread after the test).
pub fn current_test() -> String {
    let bin = std::env::current_exe()
        .ok()
        .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .map(|s| match s.rsplit_once('-') {
            // cargo appends `-<16 hex digit hash>` to test binaries
            Some((name, hash))
                if hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit()) =>
            {
                name.to_string()
            }
            _ => s,
        })
        .unwrap_or_else(|| "?".into());
    let thread = std::thread::current();
    format!("{bin}::{}", thread.name().unwrap_or("?"))
}

/// Report that the current test cannot run because of `reason`, under the environment's policy and log.
/// Returns (so the caller can `return`) only when skips are allowed.
pub fn skip(reason: &str) {
    let log = std::env::var_os(SKIP_LOG_ENV).map(PathBuf::from);
    record(Policy::from_env(), log.as_deref(), &current_test(), reason);
}

/// The exporter's Python (`MODELRT_PYTHON`, else the xtask venv `target/modelrt-venv`), or `None`
/// after a reported [`skip`]. Every crate including this file sits one level below the workspace root.
pub fn exporter_python() -> Option<PathBuf> {
    let p = std::env::var_os("MODELRT_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target/modelrt-venv/bin/python"));
    require(
        p.exists().then_some(p),
        "no Python (set MODELRT_PYTHON or create target/modelrt-venv with `cargo xtask setup`)",
    )
}

/// The workspace root: the ancestor of the including crate's folder that holds `Cargo.lock` (crates
/// sit one or two folders deep: `tests/`, `usbgpu/amd/`).
pub fn workspace_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest
        .ancestors()
        .find(|d| d.join("Cargo.lock").exists())
        .unwrap_or(manifest)
        .to_path_buf()
}

/// `value`, or a [`skip`] with `reason` when it is `None`.
pub fn require<T>(value: Option<T>, reason: &str) -> Option<T> {
    if value.is_none() {
        skip(reason);
    }
    value
}

/// Report the skip of `test` for `reason`: stderr, then the log file (if any), then a panic under
/// [`Policy::Fail`].
pub fn record(policy: Policy, log: Option<&Path>, test: &str, reason: &str) {
    let line = format!("SKIPPED {test}: {reason}\n");
    // Straight to the stderr handle: libtest captures `eprint!` of passing tests, not this.
    let _ = std::io::stderr().write_all(line.as_bytes());
    if let Some(log) = log {
        // One write of one line in append mode, so concurrent tests do not interleave.
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .and_then(|mut f| f.write_all(line.as_bytes()));
        if let Err(e) = written {
            panic!("cannot append to the skip log {}: {e}", log.display());
        }
    }
    if policy == Policy::Fail {
        panic!(
            "{test} cannot run: {reason} (skips are failures when CI is set or MODELRT_REQUIRE_PYTHON=1)"
        );
    }
}
