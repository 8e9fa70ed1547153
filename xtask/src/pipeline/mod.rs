//! `cargo xtask pipeline`: the openpilot-shaped reference pipeline (`xtask/models/modeld_pipeline.py`) compiled from
//! its tinygrad script for every target that computes here — cpu-x86_64 on the CPU backend, adreno-a630 (fp32 and
//! `--image`) on the KGSL model (`qcom-emu`: streams validated, IR3 kernels interpreted), and split across two devices
//! (`--target warp=adreno-a630 --target model=amd-gfx1100` on `qcom-emu,usb-emu`, [`split`]) — and run for N consecutive
//! frames against tinygrad's own replay of the pickled JIT (`xtask/exporter/tools/pipeline_golden.py`). Writes the table
//! of docs/pipeline.md. CI runs the CPU part of this as `tests/tests/cpu/modeld_pipeline.rs` (bit-exact); the Adreno runs
//! take minutes on two cores, so they live here.
pub mod pickle;
pub mod split;
pub mod steps;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use modelrt_core::bundle::BufferKind;
use modelrt_core::Bundle;
use modelrt_hal::target::{DType, TargetName};
use modelrt_targets::runner::{device, load, DeviceChoice, LoadOptions};

use crate::exporter::{ExportArgs, Source};
use crate::setup::workspace_root;

/// Seed of the golden replay's inputs.
pub const SEED: u64 = 7;

/// One target's run: the largest deviation from tinygrad's replay per output and per state buffer.
#[derive(Debug, Clone)]
pub struct Row {
    pub target: String,
    pub device: String,
    pub run: Comparison,
}

/// A bundle's frames against tinygrad's replay.
#[derive(Debug, Clone)]
pub struct Comparison {
    pub frames: usize,
    /// (output name, max abs error over all frames)
    pub outputs: Vec<(String, f64)>,
    /// (state label, max abs error for float state / "n of m bytes differ" for byte state)
    pub states: Vec<(String, String)>,
    pub ms_per_frame: f64,
}

/// `SCRIPT.py:build` of the reference pipeline.
pub fn script_spec() -> String {
    format!(
        "{}:build",
        workspace_root()
            .join("xtask/models/modeld_pipeline.py")
            .display()
    )
}

/// Run `python args..`, failing with its stderr.
fn run_py(python: &Path, args: &[String]) -> Result<()> {
    let out = crate::exporter_python::command(python)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot start {}", python.display()))?;
    if !out.status.success() {
        bail!(
            "{args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// tinygrad's side: pickle the pipeline's JIT into `dir/modeld.pkl` and replay it for `frames` frames of inputs drawn
/// with `seed` into `dir/gold/`, plus 3 frames of inputs drawn with `alt_seed` (`alt_in_*.npy`).
pub fn golden(
    python: &Path,
    dir: &Path,
    frames: usize,
    seed: u64,
    alt_seed: u64,
) -> Result<PathBuf> {
    golden_for(python, dir, &script_spec(), frames, seed, alt_seed)
}

/// [`golden`] of another `SCRIPT.py:FN` (the multi-device tests' second script).
pub fn golden_for(
    python: &Path,
    dir: &Path,
    spec: &str,
    frames: usize,
    seed: u64,
    alt_seed: u64,
) -> Result<PathBuf> {
    let tool = crate::exporter_python::tool("pipeline_golden.py")
        .display()
        .to_string();
    let pkl = dir.join("modeld.pkl").display().to_string();
    let gold = dir.join("gold");
    run_py(
        python,
        &[tool.clone(), "pickle".into(), spec.to_string(), pkl.clone()],
    )?;
    run_py(
        python,
        &[
            tool,
            "replay".into(),
            spec.to_string(),
            pkl,
            "--frames".into(),
            frames.to_string(),
            "--seed".into(),
            seed.to_string(),
            "--out".into(),
            gold.display().to_string(),
            "--alt-seed".into(),
            alt_seed.to_string(),
        ],
    )?;
    Ok(gold)
}

/// Run `bundle` for every frame of `gold` on `device` and compare outputs and final state with tinygrad's replay.
pub fn compare_run(bundle: &Bundle<'_>, device: DeviceChoice, gold: &Path) -> Result<Comparison> {
    compare_run_on(
        bundle,
        LoadOptions {
            device,
            threads: 0,
            ..Default::default()
        },
        gold,
    )
}

/// [`compare_run`] loaded with `opts` (a multi-device bundle: one device per role in `opts.roles`).
pub fn compare_run_on(bundle: &Bundle<'_>, opts: LoadOptions, gold: &Path) -> Result<Comparison> {
    let inputs = steps::step_inputs(bundle, gold, "")?;
    let mut model = load(bundle.clone(), opts)?;
    let t = Instant::now();
    let got = steps::run_steps(model.as_mut(), &inputs)?;
    let ms = t.elapsed().as_secs_f64() * 1e3 / inputs.len().max(1) as f64;
    let mut outputs = Vec::new();
    for (k, t) in bundle.body().outputs.iter().enumerate() {
        let t = t.map_err(|e| anyhow::anyhow!("{e}"))?;
        let want = steps::read_npy(&gold.join(format!("out_{}.npy", t.name)))?;
        let got: Vec<u8> = got.iter().flat_map(|s| s[k].iter().copied()).collect();
        outputs.push((t.name.to_string(), steps::max_abs_f32(&got, &want.data)));
    }
    let mut states = Vec::new();
    for info in model.states() {
        let name = info.label.strip_prefix("state:").unwrap_or(info.label);
        let want = steps::read_npy(&gold.join(format!("state_{name}.npy")))?;
        let got = model.read_state(info.index)?;
        let how = if info.dtype == DType::F32 {
            format!("{:.2e}", steps::max_abs_f32(&got, &want.data))
        } else {
            let n = got.iter().zip(&want.data).filter(|(a, b)| a != b).count();
            format!("{n} of {} bytes differ", want.data.len())
        };
        states.push((info.label.to_string(), how));
    }
    Ok(Comparison {
        frames: inputs.len(),
        outputs,
        states,
        ms_per_frame: ms,
    })
}

/// Compile the pipeline for every target that computes here and compare `frames` frames with tinygrad's replay.
pub fn run(frames: usize) -> Result<Vec<Row>> {
    let root = workspace_root();
    let python = crate::venv::ensure_venv(&root)?;
    let dir = root.join("target/pipeline");
    std::fs::create_dir_all(&dir)?;
    let gold = golden(&python, &dir, frames, SEED, SEED + 1)?;
    let mut rows = Vec::new();
    for (target, image, device, dev_name) in [
        (TargetName::CpuX86_64, false, device("cpu")?, "cpu"),
        (
            TargetName::AdrenoA630,
            false,
            device("qcom-emu")?,
            "qcom-emu",
        ),
        (
            TargetName::AdrenoA630,
            true,
            device("qcom-emu")?,
            "qcom-emu",
        ),
    ] {
        let mut args = ExportArgs::onnx(PathBuf::new(), target, PathBuf::new());
        args.source = Source::Tinygrad(script_spec());
        args.image = image;
        args.float16 = image;
        // this command compares every frame with tinygrad's replay itself (the table below), differences and all
        args.emu_check = false;
        let label = format!("{target}{}", if image { " --image" } else { "" });
        let out = dir.join(format!(
            "modeld-{target}{}.mrt",
            if image { "-image" } else { "" }
        ));
        eprintln!("pipeline: compiling for {label}");
        crate::compile::compile(&python, args, &out)?;
        let bytes = std::fs::read(&out)?;
        let bundle =
            Bundle::parse(&bytes).map_err(|e| anyhow::anyhow!("{}: {e}", out.display()))?;
        let n_state = bundle
            .body()
            .buffers
            .iter()
            .filter(|b| matches!(b, Ok(b) if b.kind == BufferKind::State))
            .count();
        eprintln!(
            "pipeline: running {frames} frames of {label} on {dev_name} ({n_state} state buffers)"
        );
        let run = compare_run(&bundle, device, &gold)?;
        rows.push(Row {
            target: label,
            device: dev_name.to_string(),
            run,
        });
    }
    Ok(rows)
}

/// The docs/pipeline.md table.
pub fn markdown(rows: &[Row]) -> String {
    let mut s = String::from("| bundle | device | frames | outputs: max abs error vs tinygrad | state after the last frame vs tinygrad | time / frame |\n|---|---|---:|---|---|---:|\n");
    for r in rows {
        let outs: Vec<String> = r
            .run
            .outputs
            .iter()
            .map(|(n, e)| format!("{n} {e:.2e}"))
            .collect();
        let st: Vec<String> = r
            .run
            .states
            .iter()
            .map(|(n, e)| format!("{n} {e}"))
            .collect();
        s += &format!(
            "| {} | {} | {} | {} | {} | {:.1} ms |\n",
            r.target,
            r.device,
            r.run.frames,
            outs.join(", "),
            st.join(", "),
            r.run.ms_per_frame
        );
    }
    s
}

/// Replace the table between `<!-- pipeline-table -->` markers in docs/pipeline.md; returns the path.
pub fn write_doc(table: &str) -> Result<PathBuf> {
    let doc = workspace_root().join("docs/pipeline.md");
    crate::doc_section::write(&doc, "pipeline-table", table)?;
    Ok(doc)
}
