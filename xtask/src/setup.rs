//! Machine set-up for `cargo xtask ci` and friends: Debian packages, rustup targets and components,
//! and the exporter's Python venv. Installs what is missing when it can (root for apt), otherwise
//! fails with the exact command to run.
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

/// Debian packages the build and tests need, with why.
pub const APT_PACKAGES: &[(&str, &str)] = &[
    (
        "clang",
        "compiles C test fixtures and tinygrad's CPU kernels",
    ),
    ("lld", "links kernels"),
    (
        "libllvm19",
        "tinygrad's AMD offline compiler (AMDLLVM needs LLVM >= 18)",
    ),
    ("lld-19", "links AMD code objects"),
    (
        "llvm-19",
        "llc-19 and llvm-readelf-19 check the AMDGPU e_flags table (tests/tests/amd/amdgpu_mach.rs)",
    ),
    (
        "gcc-aarch64-linux-gnu",
        "cross-links modelrt for comma devices (aarch64)",
    ),
    (
        "libc6-dev-arm64-cross",
        "aarch64 C runtime for the cross build",
    ),
    ("qemu-user", "runs the aarch64 build in tests"),
    (
        "debootstrap",
        "bootstraps the arm64 Debian root the aarch64 wheel is tested in (cargo xtask wheel --arm64-root)",
    ),
    (
        "valgrind",
        "checks the C API example for memory errors and leaks (tests/tests/api/capi.rs)",
    ),
    (
        "clang-19",
        "compiles Hexagon DSP kernels, the helper library and the qemu harness",
    ),
    ("python3-venv", "creates the exporter's Python venv"),
    (
        "strace",
        "checks gpuflash syncs and re-reads its backup before erasing (usbgpu/flash/tests/flash_cli.rs)",
    ),
    (
        "curl",
        "downloads Debian's AMD firmware package (cargo xtask firmware)",
    ),
];

/// Rust targets the build needs.
pub const RUST_TARGETS: &[&str] = &["aarch64-unknown-none", "aarch64-unknown-linux-gnu"];

fn dpkg_installed(pkg: &str) -> bool {
    Command::new("dpkg-query")
        .args(["-W", "-f=${Status}", pkg])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).contains("install ok installed"))
        .unwrap_or(false)
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

/// The python3 used to create the venv must be able to make venvs; Debian's needs python3-venv,
/// while a pyenv/other python has it built in.
fn python_has_venv() -> bool {
    Command::new("python3")
        .args(["-c", "import venv, ensurepip"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// Install missing Debian packages (as root) or fail with the command to run.
pub fn ensure_apt() -> Result<()> {
    let missing: Vec<&str> = APT_PACKAGES
        .iter()
        .map(|(p, _)| *p)
        .filter(|p| !(dpkg_installed(p) || (*p == "python3-venv" && python_has_venv())))
        .collect();
    if missing.is_empty() {
        return crate::backports::ensure_qemu(is_root());
    }
    let cmd = format!("apt-get update && apt-get install -y {}", missing.join(" "));
    if !is_root() {
        bail!(
            "missing system packages: {}. Run as root:\n  sudo sh -c '{cmd}'",
            missing.join(", ")
        );
    }
    eprintln!("[setup] installing {}", missing.join(" "));
    let ok = Command::new("sh")
        .args([
            "-c",
            &format!("DEBIAN_FRONTEND=noninteractive {cmd} >/dev/null"),
        ])
        .status()
        .context("cannot run apt-get")?
        .success();
    if !ok {
        bail!("apt-get failed; run by hand: {cmd}");
    }
    crate::backports::ensure_qemu(is_root())
}

/// Add missing rustup targets and the rustfmt/clippy components.
pub fn ensure_rust() -> Result<()> {
    let installed = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output()
        .context("rustup not found")?;
    let installed = String::from_utf8_lossy(&installed.stdout).to_string();
    let missing: Vec<&str> = RUST_TARGETS
        .iter()
        .copied()
        .filter(|t| !installed.lines().any(|l| l.trim() == *t))
        .collect();
    if !missing.is_empty() {
        eprintln!("[setup] rustup target add {}", missing.join(" "));
        let ok = Command::new("rustup")
            .args(["target", "add"])
            .args(&missing)
            .status()?
            .success();
        if !ok {
            bail!("rustup target add {} failed", missing.join(" "));
        }
    }
    for (comp, sub) in [("rustfmt", "fmt"), ("clippy", "clippy")] {
        let have = Command::new("cargo").args([sub, "--version"]).output();
        if !have.map(|o| o.status.success()).unwrap_or(false) {
            eprintln!("[setup] rustup component add {comp}");
            Command::new("rustup")
                .args(["component", "add", comp])
                .status()?;
        }
    }
    Ok(())
}

/// The workspace root (xtask lives one level below it).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// Everything: apt, rust, AMD firmware blobs, venv. Returns the venv's python.
pub fn ensure_all() -> Result<PathBuf> {
    ensure_apt()?;
    ensure_rust()?;
    crate::firmware::ensure()?;
    crate::venv::ensure_venv(&workspace_root())
}
