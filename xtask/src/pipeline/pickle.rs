//! `cargo xtask pickle`: write a compile_modeld-style tinygrad pickle from a `--tinygrad` script (such as
//! `xtask/models/modeld_pipeline.py:build`), so that `cargo xtask convert` has a pickle a user can make. The function is
//! captured with `TinyJit(prune=True)` over 3 steps with its queues passed in as inputs (openpilot's compile_modeld.py
//! layout) on this host's CPU (CLANG kernels for x86-64, as `--target cpu-x86_64` compiles them), and pickled with
//! `pickle.dump`; each queue's initial contents go next to it as `OUT.state_NAME.npy` (for `--state-init NAME=FILE`).
//! The Python side is `xtask/exporter/tools/pipeline_golden.py pickle`, the tool the pipeline golden test uses.
use std::path::{Path, PathBuf};

use anyhow::{bail, Result};

/// What [`write_pickle`] wrote.
#[derive(Debug)]
pub struct Written {
    pub pickle: PathBuf,
    pub bytes: u64,
    /// `(queue name, OUT.state_NAME.npy)` per queue the script declares.
    pub states: Vec<(String, PathBuf)>,
}

/// Capture `spec` (`SCRIPT.py:FN`) and pickle it to `out`; an existing `out` is replaced only with `replace`.
pub fn write_pickle(python: &Path, spec: &str, out: &Path, replace: bool) -> Result<Written> {
    if out.exists() && !replace {
        bail!("{} exists; pass --yes to replace it", out.display());
    }
    let (script, func) = spec.rsplit_once(':').unwrap_or((spec, ""));
    if func.is_empty() || !script.ends_with(".py") {
        bail!("expected SCRIPT.py:FUNCTION (e.g. xtask/models/modeld_pipeline.py:build), got '{spec}'");
    }
    if !Path::new(script).is_file() {
        bail!("script not found: {script}");
    }
    let tool = crate::exporter_python::tool("pipeline_golden.py")
        .display()
        .to_string();
    for old in state_files(out) {
        std::fs::remove_file(&old)?; // a replaced pickle's queues; the new script writes its own
    }
    super::run_py(
        python,
        &[
            tool,
            "pickle".into(),
            spec.into(),
            out.display().to_string(),
        ],
    )?;
    let bytes = std::fs::metadata(out)?.len();
    let mut states: Vec<(String, PathBuf)> = state_files(out)
        .into_iter()
        .filter_map(|p| {
            let name = p.file_name()?.to_str()?;
            let prefix = format!("{}.state_", out.file_name()?.to_str()?);
            let q = name
                .strip_prefix(&prefix)?
                .strip_suffix(".npy")?
                .to_string();
            Some((q, p))
        })
        .collect();
    states.sort();
    Ok(Written {
        pickle: out.to_path_buf(),
        bytes,
        states,
    })
}

/// The `OUT.state_*.npy` files next to `out`.
fn state_files(out: &Path) -> Vec<PathBuf> {
    let dir = match out.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let Some(stem) = out.file_name().and_then(|n| n.to_str()) else {
        return Vec::new();
    };
    let prefix = format!("{stem}.state_");
    std::fs::read_dir(&dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with(&prefix) && n.ends_with(".npy"))
                })
                .collect()
        })
        .unwrap_or_default()
}
