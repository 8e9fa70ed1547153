//! `cargo xtask pipeline`: its arguments and what it runs.
use anyhow::Result;

/// The openpilot-shaped reference pipeline (xtask/models/modeld_pipeline.py) compiled from its tinygrad script for
/// cpu-x86_64 and adreno-a630 (fp32, --image) and split across warp=adreno-a630 model=amd-gfx1100, run for N frames
/// on the CPU, the KGSL model (qcom-emu) and qcom-emu,usb-emu, and
/// compared, outputs and state, with tinygrad's replay of the pickled JIT; writes the table of docs/pipeline.md.
/// Slow: minutes (the IR3 interpreter).
#[derive(clap::Args)]
pub struct Args {
    /// Frames to run.
    #[arg(long, default_value_t = 20)]
    pub frames: usize,
    /// Only the split bundle (warp=adreno-a630 model=amd-gfx1100 on qcom-emu,usb-emu): its table in
    /// docs/pipeline.md ("Device roles") is rewritten, the single-target table is kept.
    #[arg(long)]
    pub split_only: bool,
}

impl Args {
    pub fn run(self) -> Result<()> {
        let Self { frames, split_only } = self;
        if !split_only {
            let rows = xtask::pipeline::run(frames)?;
            let table = xtask::pipeline::markdown(&rows);
            println!("{table}");
            println!("updated {}", xtask::pipeline::write_doc(&table)?.display());
        }
        let split = xtask::pipeline::split::run(frames)?;
        let table = xtask::pipeline::markdown(&[split]);
        println!("{table}");
        let doc = xtask::setup::workspace_root().join("docs/pipeline.md");
        xtask::doc_section::write(&doc, xtask::pipeline::split::SECTION, &table)?;
        println!("updated {}", doc.display());
        Ok(())
    }
}
