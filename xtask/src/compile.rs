//! `cargo xtask compile` / `convert`: run the exporter into a scratch directory under `target/`, build
//! the bundle from its manifest and write it atomically (temp file + rename), so a failed compile never
//! leaves a half-written bundle behind.
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};

use crate::exporter::{export, ExportArgs, Source};
use crate::manifest::Manifest;

/// What a compile produced.
#[derive(Debug, Clone)]
pub struct CompileReport {
    pub out: PathBuf,
    pub bytes: usize,
    pub kernels: usize,
    pub launches: usize,
    pub seconds: f64,
}

/// Scratch directory for one export, inside the workspace's `target/`.
fn scratch_dir(root: &Path, out: &Path, target: &str) -> PathBuf {
    let stem = out
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "model".into());
    root.join("target")
        .join("modelrt-export")
        .join(format!("{stem}-{target}"))
}

/// Export `args.source` and write the bundle to `out`.
pub fn compile(python: &Path, mut args: ExportArgs, out: &Path) -> Result<CompileReport> {
    let start = Instant::now();
    let file = args.source.file();
    if !file.exists() {
        match args.source {
            Source::Tinygrad(_) => anyhow::bail!("script not found: {}", file.display()),
            _ => anyhow::bail!("model not found: {}", file.display()),
        }
    }
    if matches!(args.source, Source::Onnx(_) | Source::Tinygrad(_)) {
        crate::prereq::check(&args.target)?;
    }
    let scratch = scratch_dir(&crate::setup::workspace_root(), out, &args.target);
    if scratch.exists() {
        std::fs::remove_dir_all(&scratch)
            .with_context(|| format!("cannot clear {}", scratch.display()))?;
    }
    std::fs::create_dir_all(&scratch)
        .with_context(|| format!("cannot create {}", scratch.display()))?;
    args.out = scratch.clone();
    let dir = export(python, &args)?;
    let manifest = Manifest::load(&dir)?;
    let bytes = crate::bundle_build::build(&manifest)?;
    let launches = manifest
        .ops
        .iter()
        .filter(|o| matches!(o.body, crate::manifest::OpBody::Kernel { .. }))
        .count();
    if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    let tmp = out.with_extension("mrt.tmp");
    std::fs::write(&tmp, &bytes).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, out).with_context(|| format!("cannot write {}", out.display()))?;
    Ok(CompileReport {
        out: out.to_path_buf(),
        bytes: bytes.len(),
        kernels: manifest.kernels.len(),
        launches,
        seconds: start.elapsed().as_secs_f64(),
    })
}
