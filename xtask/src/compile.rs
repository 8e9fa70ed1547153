//! `cargo xtask compile` / `convert`: run the exporter into a scratch directory under `target/`, build
//! the bundle from its manifest, sign it in memory with `--sign`, and write it atomically (temp file + rename),
//! so a failed compile never leaves a half-written or unsigned bundle behind. With `--beam N` the search cache the exporter wrote is moved next to the
//! bundle (or to `--beam-cache-out`) only once the bundle is written. Compiles for adreno-a630, amd-gfx1100
//! and hexagon-v65 first run the bundle on that target's executing model and refuse wrong outputs
//! ([`crate::emu_check`]): ONNX models against onnxruntime, `--tinygrad` programs against tinygrad's own
//! unjitted run of the script's first seeded step. When that check does not run, [`CompileReport::not_checked`]
//! says why, for the caller to print.
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};

use crate::emu_check::{self, EmuCheck};
use crate::exporter::{export_with, ExportArgs, Source};
use crate::manifest::Manifest;

/// What a compile produced.
#[derive(Debug, Clone)]
pub struct CompileReport {
    pub out: PathBuf,
    pub bytes: usize,
    pub kernels: usize,
    pub launches: usize,
    pub seconds: f64,
    /// The search cache a `--beam` compile wrote.
    pub beam_cache: Option<PathBuf>,
    /// The check on the target's executing model, when it ran.
    pub emu_check: Option<EmuCheck>,
    /// For a target with an executing model whose check did not run: that model's `--device` name and why.
    pub not_checked: Option<(&'static str, String)>,
    /// The signer's fingerprint, when the bundle was signed (`--sign`).
    pub signer: Option<String>,
}

/// Refuse flags that would only loosen the check: in tinygrad 0.14 FLOAT16 acts only through IMAGE's half
/// images (`--image` implies it), so `--float16` alone compiles the same kernels and would merely record the
/// half-precision tolerance.
pub fn check_flags(args: &ExportArgs) -> Result<()> {
    if args.float16 && !args.image {
        anyhow::bail!(
            "--float16 alone changes no kernel (tinygrad 0.14 applies FLOAT16 only to --image's half images) and would only loosen the check: it applies to adreno-a630 with --image, which implies it; drop --float16 for {}",
            args.target_label()
        );
    }
    Ok(())
}

/// Whether a manifest carries the DSP model library a hexagon bundle runs on dsp-emu with.
fn has_dsp_library(manifest: &Manifest) -> bool {
    manifest
        .kernels
        .iter()
        .any(|k| k.name == modelrt_hexagon::device::MODEL_LIBRARY)
}

/// Scratch directory for one export, inside the workspace's `target/`.
pub fn scratch_dir(root: &Path, out: &Path, target: &str) -> PathBuf {
    scratch_in(&root.join("target"), out, target)
}

/// Scratch directory for one export under `scratch_root`.
fn scratch_in(scratch_root: &Path, out: &Path, target: &str) -> PathBuf {
    let stem = out
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "model".into());
    scratch_root
        .join("modelrt-export")
        .join(format!("{stem}-{target}"))
}

/// Where a compile finds the exporter and keeps its scratch files: this repository's (`cargo xtask`,
/// [`Toolchain::repo`]) or an installed wheel's (the `modelrt` Python package ships the same exporter).
#[derive(Debug, Clone)]
pub struct Toolchain {
    /// The Python that runs the exporter (tinygrad, onnx, onnxruntime and numpy importable).
    pub python: PathBuf,
    /// The exporter's folder: `export.py` and the package `mrt/`.
    pub exporter_dir: PathBuf,
    /// Scratch exports go to `SCRATCH_ROOT/modelrt-export/`.
    pub scratch_root: PathBuf,
}

impl Toolchain {
    /// This repository's exporter with `python`, scratch files under the workspace's `target/`.
    pub fn repo(python: &Path) -> Self {
        Toolchain {
            python: python.to_path_buf(),
            exporter_dir: crate::exporter_python::exporter_dir(),
            scratch_root: crate::setup::workspace_root().join("target"),
        }
    }
}

/// Export `args.source` with this repository's exporter and write the bundle to `out`.
pub fn compile(python: &Path, args: ExportArgs, out: &Path) -> Result<CompileReport> {
    compile_with(&Toolchain::repo(python), args, out, None)
}

/// Export `args.source` with the exporter `tc` names and write the bundle to `out`, signing it with
/// `key` (`--sign`) before it is written: `out` never holds it unsigned
/// ([`crate::signing::write_bundle`]).
pub fn compile_with(
    tc: &Toolchain,
    mut args: ExportArgs,
    out: &Path,
    key: Option<&crate::signing::SigningKey>,
) -> Result<CompileReport> {
    let start = Instant::now();
    check_flags(&args)?;
    let file = args.source.file();
    if !file.exists() {
        match args.source {
            Source::Tinygrad(_) => anyhow::bail!("script not found: {}", file.display()),
            _ => anyhow::bail!("model not found: {}", file.display()),
        }
    }
    if let (Source::Onnx(_) | Source::Tinygrad(_), Some(target)) = (&args.source, args.target) {
        crate::prereq::check(target)?;
    }
    let scratch = scratch_in(&tc.scratch_root, out, args.target_label());
    if scratch.exists() {
        std::fs::remove_dir_all(&scratch)
            .with_context(|| format!("cannot clear {}", scratch.display()))?;
    }
    std::fs::create_dir_all(&scratch)
        .with_context(|| format!("cannot create {}", scratch.display()))?;
    args.out = scratch.clone();
    let beam_cache = match (args.beam, &args.beam_cache) {
        (Some(_), None) => {
            let dst = args
                .beam_cache_out
                .take()
                .unwrap_or_else(|| out.with_extension("beam.json"));
            args.beam_cache_out = Some(scratch.join("beam.json"));
            Some(dst)
        }
        _ => None,
    };
    // The emulated check needs reference outputs for seeded inputs (onnxruntime's, or tinygrad's own for a
    // --tinygrad program): the exporter writes them as usual, and the bundle embeds them only if --reference
    // asked for them.
    let device = args.target.and_then(emu_check::device_for);
    let mut not_checked = None;
    let mut check_on = match device {
        Some(dev) if !args.emu_check => {
            not_checked = Some((dev.1, "--no-emu-check".to_string()));
            None
        }
        d => d.filter(|_| matches!(args.source, Source::Onnx(_) | Source::Tinygrad(_))),
    };
    let against = match args.source {
        Source::Tinygrad(_) => "tinygrad's own run",
        _ => "onnxruntime",
    };
    let keep_reference = args.reference;
    if check_on.is_some() {
        args.reference = true;
    }
    let dir = export_with(&tc.python, &tc.exporter_dir, &args)?;
    let mut manifest = Manifest::load(&dir)?;
    if let Some(dev) = check_on.filter(|d| d.1 == "dsp-emu") {
        if !has_dsp_library(&manifest) {
            // dsp-emu runs a whole step through the bundle's model library; without one there is nothing it can run
            check_on = None;
            not_checked = Some((
                dev.1,
                "the bundle has no DSP model library to run there".into(),
            ));
        }
    }
    // the bundle keeps the reference only if --reference asked for it (also when the check was dropped above)
    let reference = if keep_reference {
        manifest.reference.clone()
    } else {
        manifest.reference.take()
    };
    let check_reference = check_on.and(reference);
    let bytes = crate::bundle_build::build(&manifest)?;
    let emu_check = match (check_on, &check_reference) {
        (Some(dev), Some(r)) => {
            let reference = crate::bundle_build::reference_spec(&manifest, r)?;
            eprintln!(
                "checking the bundle on {} before writing it (one emulated step; large models take minutes, --no-emu-check skips)",
                dev.1
            );
            // A spinner with the elapsed time on a terminal; nothing when stderr is not one.
            let spin =
                indicatif::ProgressBar::new_spinner().with_message(format!("running on {}", dev.1));
            spin.set_style(
                indicatif::ProgressStyle::with_template("{spinner} {msg} {elapsed}")
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
            );
            spin.enable_steady_tick(std::time::Duration::from_millis(250));
            let c = emu_check::check_against(&bytes, &reference, dev, against);
            spin.finish_and_clear();
            let c = c?;
            eprintln!(
                "checked on {}: outputs match {against} (max abs err {:.3e}) in {:.1} s",
                c.device, c.max_abs, c.seconds
            );
            Some(c)
        }
        (Some(_), None) => {
            anyhow::bail!("internal: the exporter wrote no reference for the pre-write check")
        }
        (None, _) => None,
    };
    let launches = manifest
        .ops
        .iter()
        .filter(|o| matches!(o.body, crate::manifest::OpBody::Kernel { .. }))
        .count();
    if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    let written = crate::signing::write_bundle(out, &bytes, key)?;
    if let Some(dst) = &beam_cache {
        let tmp = dst.with_extension("json.tmp");
        std::fs::copy(scratch.join("beam.json"), &tmp)
            .with_context(|| format!("cannot write {}", tmp.display()))?;
        std::fs::rename(&tmp, dst).with_context(|| format!("cannot write {}", dst.display()))?;
    }
    Ok(CompileReport {
        out: out.to_path_buf(),
        bytes: written,
        kernels: manifest.kernels.len(),
        launches,
        seconds: start.elapsed().as_secs_f64(),
        beam_cache,
        emu_check,
        not_checked,
        signer: key.map(|k| modelrt_platform::trust::fingerprint(&k.public())),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--float16` alone is refused on every target (tinygrad 0.14 reads FLOAT16 only in its IMAGE
    /// paths); with `--image` (which sets both, as `main` does) it is accepted.
    #[test]
    fn float16_alone_is_refused_and_image_is_not() {
        use modelrt_hal::target::TargetName;
        for target in [
            TargetName::CpuX86_64,
            TargetName::AdrenoA630,
            TargetName::AmdGfx1100,
            TargetName::HexagonV65,
        ] {
            let mut a = ExportArgs::onnx("m.onnx", target, "o");
            a.float16 = true;
            let msg = format!("{:#}", check_flags(&a).unwrap_err());
            assert!(
                msg.contains("--float16")
                    && msg.contains("--image")
                    && msg.contains(target.as_str()),
                "{msg}"
            );
            a.float16 = false;
            assert!(check_flags(&a).is_ok());
        }
        let mut a = ExportArgs::onnx("m.onnx", TargetName::AdrenoA630, "o");
        (a.float16, a.image) = (true, true);
        assert!(check_flags(&a).is_ok());
    }
}
