//! `cargo xtask wheel`: the `modelrt` Python distribution built by maturin (pinned, from
//! `targets/python/build-requirements.txt`, installed into `target/wheel-venv`) from `targets/python/pyproject.toml`:
//! abi3 (CPython >= 3.10) manylinux wheels for x86_64 and aarch64 (cross-built with Debian's
//! `gcc-aarch64-linux-gnu`, the linker `.cargo/config.toml` names) and an sdist, into `target/wheels/`. Every wheel's
//! tag is checked with auditwheel (pinned too): the manylinux tag in its name must be the one auditwheel derives from
//! the extension's symbol versions ([`audit`]). docs/python-wheel.md describes the layout and the install tests.
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::setup::workspace_root;

pub mod arm64_root;
pub mod audit;
mod maturin;

/// The distribution's version (the workspace's).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// The build tools' venv, relative to the workspace root.
pub const TOOLS_VENV: &str = "target/wheel-venv";
/// The build tools' pins, relative to the workspace root.
pub const TOOLS_REQUIREMENTS: &str = "targets/python/build-requirements.txt";
/// The Python project maturin builds, relative to the workspace root.
pub const PROJECT: &str = "targets/python";

/// The architectures wheels are built for: (wheel architecture, Rust target triple).
pub const ARCHES: &[(&str, &str)] = &[
    ("x86_64", "x86_64-unknown-linux-gnu"),
    ("aarch64", "aarch64-unknown-linux-gnu"),
];

/// One built wheel and the manylinux tag auditwheel gave it.
#[derive(Debug, Clone)]
pub struct Wheel {
    pub path: PathBuf,
    pub arch: &'static str,
    pub tag: String,
}

/// The target directory (`$CARGO_TARGET_DIR` or the workspace's `target/`).
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"))
}

/// The `bin/` of the tools' venv (maturin, auditwheel), installed on first use.
pub fn tools() -> Result<PathBuf> {
    let py =
        crate::venv::ensure_venv_at(&workspace_root(), TOOLS_VENV, TOOLS_REQUIREMENTS, "python3")?;
    Ok(py.parent().map(Path::to_path_buf).unwrap_or_default())
}

/// Build the wheel for `arch` (`x86_64` or `aarch64`; release or dev profile) into `target/wheels/`, check its tag
/// with auditwheel and return it. `python` is the interpreter maturin and PyO3's build look at for the host wheel
/// (abi3 needs only its version; default `$MODELRT_PYTHON`, else `python3`).
pub fn build_for(arch: &str, release: bool, python: Option<&Path>) -> Result<Wheel> {
    let Some(&(arch, triple)) = ARCHES.iter().find(|a| a.0 == arch) else {
        bail!("no wheel for architecture {arch}: x86_64 or aarch64");
    };
    // Tests of one process build the wheel from several threads: one build at a time, each into its own scratch
    // directory.
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let bin = tools()?;
    let out = target_dir().join("wheels");
    std::fs::create_dir_all(&out).with_context(|| format!("cannot create {}", out.display()))?;
    // ... and one build per target directory across processes (a test run and `cargo xtask wheel` at once would
    // share maturin's scratch files and each other's output directory).
    let _lock = lock(&out)?;
    let python = python
        .map(Path::to_path_buf)
        .or_else(|| std::env::var_os("MODELRT_PYTHON").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("python3"));
    let host = arch == std::env::consts::ARCH;
    let path = maturin::build_wheel(&bin, triple, release, host.then_some(&*python), &out)?;
    let tag = audit::check(&bin, &path, arch)?;
    Ok(Wheel { path, arch, tag })
}

/// An exclusive lock on `out/.lock`, held until the returned file is dropped (waits for another process's build).
fn lock(out: &Path) -> Result<std::fs::File> {
    let path = out.join(".lock");
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    if f.try_lock().is_err() {
        eprintln!(
            "[wheel] waiting for another wheel build in {}",
            out.display()
        );
        f.lock()
            .with_context(|| format!("cannot lock {}", path.display()))?;
    }
    Ok(f)
}

/// The wheel for this machine (tests and the bench install it).
pub fn build(release: bool, python: Option<&Path>) -> Result<PathBuf> {
    build_for(std::env::consts::ARCH, release, python).map(|w| w.path)
}

/// The sdist (`target/wheels/modelrt-VERSION.tar.gz`): this crate, the workspace crates it uses and the Python
/// package with the exporter; `pip install` of it builds the extension from source with cargo.
pub fn sdist() -> Result<PathBuf> {
    let bin = tools()?;
    let out = target_dir().join("wheels");
    std::fs::create_dir_all(&out).with_context(|| format!("cannot create {}", out.display()))?;
    let _lock = lock(&out)?;
    maturin::build_sdist(&bin, &out)
}

/// Check that the sdist builds: `pip wheel` of it (with maturin from the registry in pip's build isolation) into
/// `target/wheels/from-sdist/`, then audit that wheel too. pip's build is tagged `linux_<arch>` (maturin's default
/// as a PEP 517 backend; right for a local install from source); auditwheel must still find a manylinux tag for it,
/// which is returned. A whole release build from scratch: about 15 minutes here.
pub fn check_sdist(sdist: &Path) -> Result<Wheel> {
    let bin = tools()?;
    let dir = target_dir().join("wheels").join("from-sdist");
    if dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("cannot clear {}", dir.display()))?;
    }
    let mut cmd = Command::new(bin.join("python"));
    cmd.args([
        "-m",
        "pip",
        "wheel",
        "--no-deps",
        "--disable-pip-version-check",
        "-w",
    ])
    .arg(&dir)
    .arg(sdist)
    // the sdist's own target directory, not the workspace's: a build from source as a user's pip runs it
    .env_remove("CARGO_TARGET_DIR");
    eprintln!(
        "[wheel] building a wheel from {} (a full build)",
        sdist.display()
    );
    if !cmd.status().context("cannot run pip")?.success() {
        bail!("pip wheel {} failed", sdist.display());
    }
    let path = maturin::only_wheel(&dir)?;
    let arch = std::env::consts::ARCH;
    let tag = audit::manylinux_tag(&bin, &path, arch)?;
    let arch = ARCHES
        .iter()
        .find(|a| a.0 == arch)
        .map_or("x86_64", |a| a.0);
    Ok(Wheel { path, arch, tag })
}
