//! Running maturin (from the wheel tools' venv) on `targets/python`: one abi3 wheel per target triple, and the sdist.
//! Each build writes into a fresh directory first, so the file it made is known without parsing maturin's output.
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::setup::workspace_root;

/// The one `.whl` (or `.tar.gz`) file in `dir`.
fn only_file(dir: &Path, ext: &str) -> Result<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(ext))
        .collect();
    match (found.pop(), found.is_empty()) {
        (Some(p), true) => Ok(p),
        (None, _) => bail!("maturin wrote no {ext} into {}", dir.display()),
        (Some(_), false) => bail!("more than one {ext} in {}", dir.display()),
    }
}

/// The one wheel in `dir`.
pub fn only_wheel(dir: &Path) -> Result<PathBuf> {
    only_file(dir, ".whl")
}

/// Run `cmd` (maturin) in the workspace root, whose `.cargo/config.toml` names the cross linker.
fn run(mut cmd: Command, what: &str) -> Result<()> {
    cmd.current_dir(workspace_root());
    eprintln!("[wheel] {cmd:?}");
    if !cmd.status().context("cannot run maturin")?.success() {
        bail!("maturin failed building {what}");
    }
    Ok(())
}

/// Move the one `ext` file maturin wrote into `scratch` to `out` (replacing an older build of the same name).
fn keep(scratch: &Path, ext: &str, out: &Path) -> Result<PathBuf> {
    let built = only_file(scratch, ext)?;
    let dst = out.join(built.file_name().unwrap_or_default());
    std::fs::rename(&built, &dst)
        .with_context(|| format!("cannot move it to {}", dst.display()))?;
    let _ = std::fs::remove_dir_all(scratch);
    Ok(dst)
}

/// A fresh scratch directory `out/.NAME`.
fn scratch(out: &Path, name: &str) -> Result<PathBuf> {
    let dir = out.join(format!(".{name}"));
    if dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("cannot clear {}", dir.display()))?;
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    Ok(dir)
}

/// Build the abi3 wheel for `triple` into `out`. maturin derives the lowest manylinux tag the extension's glibc
/// symbol versions allow and (`--auditwheel check`) refuses a wheel that links libraries outside the manylinux
/// policy. `python` (given for the host build) is the interpreter PyO3's build script checks, and the host build
/// names no `--target`, so it shares `target/{debug,release}` with the workspace's own builds; a cross build of an
/// abi3 module needs no interpreter.
pub fn build_wheel(
    bin: &Path,
    triple: &str,
    release: bool,
    python: Option<&Path>,
    out: &Path,
) -> Result<PathBuf> {
    let dir = scratch(out, triple)?;
    let mut cmd = Command::new(bin.join("maturin"));
    cmd.args(["build", "--manifest-path"])
        .arg(Path::new(super::PROJECT).join("Cargo.toml"))
        .args(["--auditwheel", "check"])
        .args(if release {
            ["--release", "--strip"].as_slice()
        } else {
            ["--profile", "dev"].as_slice()
        })
        .arg("--out")
        .arg(&dir);
    match python {
        Some(py) => {
            cmd.arg("--interpreter").arg(py).env("PYO3_PYTHON", py);
        }
        None => {
            cmd.args(["--target", triple]).env_remove("PYO3_PYTHON");
        }
    }
    run(cmd, &format!("the {triple} wheel"))?;
    keep(&dir, ".whl", out)
}

/// Build the sdist into `out`.
pub fn build_sdist(bin: &Path, out: &Path) -> Result<PathBuf> {
    let dir = scratch(out, "sdist")?;
    let mut cmd = Command::new(bin.join("maturin"));
    cmd.args(["sdist", "--manifest-path"])
        .arg(Path::new(super::PROJECT).join("Cargo.toml"))
        .arg("--out")
        .arg(&dir);
    run(cmd, "the sdist")?;
    keep(&dir, ".tar.gz", out)
}
