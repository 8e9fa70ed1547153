//! The pipeline's row for openpilot's USB-GPU layout: the same script compiled with `--target warp=adreno-a630
//! --target model=amd-gfx1100` into one bundle spanning both devices, run frame by frame on `qcom-emu,usb-emu` (the
//! KGSL model for the warp and the frame queue, the AM driver over the bridge emulator for the vision and policy nets
//! and their queues) against tinygrad's replay, like every other row (docs/pipeline.md, "Device roles").
use std::path::Path;

use anyhow::Result;
use modelrt_core::Bundle;
use modelrt_hal::target::TargetName;
use modelrt_targets::runner::{device, LoadOptions};

use super::{compare_run_on, script_spec, Row};
use crate::exporter::{ExportArgs, Source};

/// The roles of the split compile, in `--target` order.
pub const ROLES: [(&str, TargetName); 2] = [
    ("warp", TargetName::AdrenoA630),
    ("model", TargetName::AmdGfx1100),
];

/// The devices the split bundle runs on, one per role.
pub const DEVICES: [&str; 2] = ["qcom-emu", "usb-emu"];

/// Load options for the split bundle on [`DEVICES`].
pub fn options() -> Result<LoadOptions> {
    let roles = DEVICES
        .iter()
        .map(|d| device(d))
        .collect::<Result<Vec<_>>>()?;
    Ok(LoadOptions {
        device: roles[0],
        roles,
        ..LoadOptions::default()
    })
}

/// Compile the split bundle of `SCRIPT:build` into `out`. Without the pre-write checks: the pipeline's fp32 warp
/// fails them by design (the GPUs divide with a reciprocal, README "stateful programs"); the row compares every frame
/// with tinygrad's replay instead.
pub fn compile(python: &Path, spec: String, out: &Path) -> Result<Vec<u8>> {
    let mut args = ExportArgs::onnx(std::path::PathBuf::new(), TargetName::host_cpu(), "");
    args.source = Source::Tinygrad(spec);
    args.emu_check = false;
    let roles: Vec<(String, TargetName)> = ROLES.iter().map(|(r, t)| (r.to_string(), *t)).collect();
    crate::compile_multi::compile_multi(python, args, &roles, out, None)?;
    Ok(std::fs::read(out)?)
}

/// The section of docs/pipeline.md this row is written to.
pub const SECTION: &str = "pipeline-split-table";

/// Compile the split pipeline and compare `frames` frames with tinygrad's replay (`cargo xtask pipeline`).
pub fn run(frames: usize) -> Result<Row> {
    let root = crate::setup::workspace_root();
    let python = crate::venv::ensure_venv(&root)?;
    let dir = root.join("target/pipeline-split");
    std::fs::create_dir_all(&dir)?;
    let gold = super::golden(&python, &dir, frames, super::SEED, super::SEED + 1)?;
    row(&python, &dir, &gold)
}

/// Compile and run the split pipeline for the frames of `gold`.
pub fn row(python: &Path, dir: &Path, gold: &Path) -> Result<Row> {
    let out = dir.join("modeld-split.mrt");
    eprintln!("pipeline: compiling the split bundle (warp=adreno-a630, model=amd-gfx1100)");
    let bytes = compile(python, script_spec(), &out)?;
    let bundle = Bundle::parse(&bytes).map_err(|e| anyhow::anyhow!("{}: {e}", out.display()))?;
    eprintln!(
        "pipeline: running the split bundle on {}",
        DEVICES.join(",")
    );
    crate::emu_check::amd_firmware()?;
    let run = compare_run_on(&bundle, options()?, gold)?;
    Ok(Row {
        target: "warp=adreno-a630 model=amd-gfx1100".into(),
        device: DEVICES.join(","),
        run,
    })
}
