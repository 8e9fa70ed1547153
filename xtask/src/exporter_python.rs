//! How every caller runs the exporter's Python (`xtask/exporter/`): its folder first on `PYTHONPATH`, so a script
//! anywhere (the entry points, `tools/`, `tests/`, the bench scripts, a `python -c` snippet) imports `export`, the
//! library package `mrt` and `tools` without editing `sys.path`, and no `__pycache__` written into the tree.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The exporter's folder: `export.py` and `conformance_worker.py` (entry points), the library package `mrt/`, its
/// unit tests `tests/` and the test-data and measurement scripts `tools/`.
pub fn exporter_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("exporter")
}

/// A test-data or measurement script of the exporter: `xtask/exporter/tools/NAME`.
pub fn tool(name: &str) -> PathBuf {
    exporter_dir().join("tools").join(name)
}

/// `python` ready to run exporter code: `PYTHONPATH` = the exporter folder, then whatever the caller's environment
/// had; `PYTHONDONTWRITEBYTECODE=1`.
pub fn command(python: &Path) -> Command {
    command_in(python, &exporter_dir())
}

/// [`command`] for the exporter folder `dir` (an installed `modelrt` wheel's `modelrt/_exporter`).
pub fn command_in(python: &Path, dir: &Path) -> Command {
    let mut cmd = Command::new(python);
    cmd.env(
        "PYTHONPATH",
        python_path_in(dir, std::env::var_os("PYTHONPATH").as_deref()),
    )
    .env("PYTHONDONTWRITEBYTECODE", "1");
    cmd
}

/// The exporter folder in front of an existing `PYTHONPATH` (kept, in order; empty entries dropped).
#[cfg(test)]
fn python_path(existing: Option<&std::ffi::OsStr>) -> OsString {
    python_path_in(&exporter_dir(), existing)
}

/// `dir` in front of an existing `PYTHONPATH`.
fn python_path_in(dir: &Path, existing: Option<&std::ffi::OsStr>) -> OsString {
    let mut dirs = vec![dir.to_path_buf()];
    dirs.extend(
        existing
            .into_iter()
            .flat_map(std::env::split_paths)
            .filter(|p| !p.as_os_str().is_empty()),
    );
    // join_paths fails only on an entry holding the separator itself; such an entry cannot be on the path anyway
    std::env::join_paths(&dirs).unwrap_or_else(|_| dir.as_os_str().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exporter_folder_comes_first_and_the_callers_path_is_kept() {
        let dir = exporter_dir();
        assert!(dir.join("export.py").is_file() && dir.join("mrt/__init__.py").is_file());
        assert_eq!(python_path(None), dir.clone().into_os_string());
        let joined = python_path(Some(std::ffi::OsStr::new("/a::/b")));
        let parts: Vec<PathBuf> = std::env::split_paths(&joined).collect();
        assert_eq!(parts, [dir, PathBuf::from("/a"), PathBuf::from("/b")]);
    }

    /// The import contract the layout promises, checked with the system python from an unrelated working directory:
    /// `mrt` (importing only its pure target table, no tinygrad), `export` and `tools` resolve, and nothing else is
    /// needed on `sys.path`.
    #[test]
    fn a_snippet_imports_the_exporter_modules_from_anywhere() {
        let Ok(out) = command(Path::new("python3"))
            .args([
                "-c",
                "import export, mrt.targets, tools, tests\n\
                 import os; here = os.path.dirname(export.__file__)\n\
                 assert os.path.dirname(os.path.dirname(mrt.targets.__file__)) == here, mrt.targets.__file__\n\
                 assert os.path.dirname(tools.__file__) == os.path.join(here, 'tools'), tools.__file__\n\
                 assert os.path.dirname(tests.__file__) == os.path.join(here, 'tests'), tests.__file__\n\
                 print(mrt.targets.TINYGRAD_VERSION)",
            ])
            .current_dir(std::env::temp_dir())
            .output()
        else {
            panic!("python3 is needed by the xtask tests (it runs the exporter)");
        };
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // the pin in requirements.txt is the independent record of the version mrt/targets.py states
        let pins = std::fs::read_to_string(exporter_dir().join("requirements.txt")).unwrap();
        let pinned = String::from_utf8_lossy(&out.stdout).trim().to_string();
        assert!(
            pins.lines().any(|l| l == format!("tinygrad=={pinned}")),
            "{pinned} vs {pins}"
        );
    }
}
