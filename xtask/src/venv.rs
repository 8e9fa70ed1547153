//! Bootstraps the exporter's pinned Python environment (`target/modelrt-venv`) from
//! `xtask/exporter/requirements.txt`, once: a stamp file holding the requirements hash makes later calls instant.

use anyhow::{bail, Context, Result};
use sha2::{Digest, Sha256};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::child_wait::wait_or_kill;

/// Venv location relative to the workspace root.
pub const VENV_DIR: &str = "target/modelrt-venv";
/// Requirements file relative to the workspace root.
pub const REQUIREMENTS: &str = "xtask/exporter/requirements.txt";
const STAMP: &str = ".modelrt-requirements.sha256";
/// Upper bound for `python3 -m venv`.
const VENV_TIMEOUT: Duration = Duration::from_secs(300);
/// Upper bound for the whole pip install (large wheels over a slow link).
const PIP_TIMEOUT: Duration = Duration::from_secs(1800);

/// Hex sha256 of the requirements text; the stamp content.
pub fn requirements_hash(text: &[u8]) -> String {
    Sha256::digest(text)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn venv_python(venv: &Path) -> PathBuf {
    venv.join("bin").join("python")
}

/// True when `venv` holds a python and a stamp equal to `hash`.
pub fn is_current(venv: &Path, hash: &str) -> bool {
    venv_python(venv).is_file()
        && std::fs::read_to_string(venv.join(STAMP)).is_ok_and(|s| s.trim() == hash)
}

/// Run `cmd` to completion, killing it after `timeout`. Output goes where `cmd` says. Returns the exit status.
pub fn run_bounded(cmd: &mut Command, timeout: Duration) -> Result<std::process::ExitStatus> {
    let mut child = cmd.spawn()?;
    match wait_or_kill(&mut child, timeout)? {
        Some(status) => Ok(status),
        None => bail!("timed out after {} s", timeout.as_secs()),
    }
}

fn shell_line(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for a in cmd.get_args() {
        s.push(' ');
        s.push_str(&a.to_string_lossy());
    }
    s
}

/// Ensure the exporter venv exists and matches `xtask/exporter/requirements.txt`; returns its python interpreter.
pub fn ensure_venv(workspace_root: &Path) -> Result<PathBuf> {
    ensure_venv_with(workspace_root, "python3")
}

/// [`ensure_venv`] with an explicit base interpreter (tests use a missing one).
pub fn ensure_venv_with(workspace_root: &Path, base_python: &str) -> Result<PathBuf> {
    ensure_venv_at(workspace_root, VENV_DIR, REQUIREMENTS, base_python)
}

/// Ensure the venv `venv_dir` (relative to the workspace root) exists and matches the pinned `requirements` file
/// (relative too); returns its python interpreter. The exporter's venv is one, the wheel tools' another
/// (`crate::wheel`).
pub fn ensure_venv_at(
    workspace_root: &Path,
    venv_dir: &str,
    requirements: &str,
    base_python: &str,
) -> Result<PathBuf> {
    let req = workspace_root.join(requirements);
    let text = std::fs::read(&req).with_context(|| format!("cannot read {}", req.display()))?;
    let hash = requirements_hash(&text);
    let venv = workspace_root.join(venv_dir);
    if is_current(&venv, &hash) {
        return Ok(venv_python(&venv));
    }

    let probe = Command::new(base_python)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    if !probe.is_ok_and(|s| s.success()) {
        bail!("{base_python} not found: install it with `sudo apt-get install python3 python3-venv python3-pip`");
    }
    if !venv_python(&venv).is_file() {
        eprintln!("xtask: creating Python venv {}", venv.display());
        let mut cmd = Command::new(base_python);
        cmd.args(["-m", "venv"]).arg(&venv).stdout(Stdio::null());
        let status = run_bounded(&mut cmd, VENV_TIMEOUT)
            .with_context(|| format!("`{}` failed", shell_line(&cmd)))?;
        if !status.success() {
            bail!(
                "`{}` failed ({status}); on Debian/Ubuntu install venv support with `sudo apt-get install python3-venv`",
                shell_line(&cmd)
            );
        }
    }
    // the stamp goes away first so an interrupted install is redone next time
    let _ = std::fs::remove_file(venv.join(STAMP));
    let mut cmd = Command::new(venv_python(&venv));
    cmd.args([
        "-m",
        "pip",
        "install",
        "--disable-pip-version-check",
        "--timeout",
        "60",
        "-r",
    ])
    .arg(&req);
    eprintln!("xtask: installing the pinned Python packages of {requirements} into {venv_dir} — this can take a few minutes...");
    let _ = std::io::stderr().flush();
    let status = run_bounded(
        cmd.stdout(Stdio::inherit()).stderr(Stdio::inherit()),
        PIP_TIMEOUT,
    );
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => bail!(
            "pip install failed ({s}); run it by hand to see why: {}",
            shell_line(&cmd)
        ),
        Err(e) => bail!(
            "pip install failed ({e}); run it by hand to see why: {}",
            shell_line(&cmd)
        ),
    }
    std::fs::write(venv.join(STAMP), format!("{hash}\n"))
        .with_context(|| format!("cannot write stamp in {}", venv.display()))?;
    eprintln!("xtask: Python environment {venv_dir} ready");
    Ok(venv_python(&venv))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    struct TempDir(PathBuf);
    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn temp_root(tag: &str) -> TempDir {
        let d =
            std::env::temp_dir().join(format!("modelrt-venv-test-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("xtask/exporter")).unwrap();
        TempDir(d)
    }

    /// A venv in `root` with a (fake) python and the stamp of the requirements text `stamped`.
    fn stamped_venv(root: &TempDir, stamped: &[u8]) -> PathBuf {
        let venv = root.0.join(VENV_DIR);
        std::fs::create_dir_all(venv.join("bin")).unwrap();
        std::fs::write(venv.join("bin/python"), b"").unwrap();
        std::fs::write(
            venv.join(STAMP),
            format!("{}\n", requirements_hash(stamped)),
        )
        .unwrap();
        venv
    }

    #[test]
    fn hash_is_sha256_hex() {
        // sha256("abc") from FIPS 180-2 appendix B.1
        assert_eq!(
            requirements_hash(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn current_stamp_makes_ensure_instant_and_skips_python() {
        let root = temp_root("stamp");
        std::fs::write(root.0.join(REQUIREMENTS), b"tinygrad==0.14.0\n").unwrap();
        let venv = stamped_venv(&root, b"tinygrad==0.14.0\n");
        // a nonexistent base interpreter proves nothing was (re)installed
        let py = ensure_venv_with(&root.0, "/nonexistent/python3").unwrap();
        assert_eq!(py, venv.join("bin/python"));
    }

    #[test]
    fn changed_requirements_invalidate_stamp_and_missing_python_is_reported() {
        let root = temp_root("changed");
        std::fs::write(root.0.join(REQUIREMENTS), b"tinygrad==0.14.0\nnumpy\n").unwrap();
        let venv = stamped_venv(&root, b"tinygrad==0.14.0\n");
        assert!(!is_current(
            &venv,
            &requirements_hash(b"tinygrad==0.14.0\nnumpy\n")
        ));
        let e = ensure_venv_with(&root.0, "/nonexistent/python3")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("not found") && e.contains("apt-get install python3"),
            "{e}"
        );
    }

    #[test]
    fn missing_requirements_file_is_a_clear_error() {
        let root = temp_root("noreq");
        let e = ensure_venv_with(&root.0, "python3")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("cannot read") && e.contains("requirements.txt"),
            "{e}"
        );
    }

    #[test]
    fn run_bounded_kills_on_timeout() {
        let start = Instant::now();
        let e =
            run_bounded(Command::new("sleep").arg("5"), Duration::from_millis(300)).unwrap_err();
        assert!(e.to_string().contains("timed out"));
        assert!(start.elapsed() < Duration::from_secs(4));
    }
}
