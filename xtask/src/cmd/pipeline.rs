//! `cargo xtask pipeline`: its arguments and what it runs.
use anyhow::Result;

/// The openpilot-shaped reference pipeline (xtask/models/modeld_pipeline.py) compiled from its tinygrad script for
/// cpu-x86_64 and adreno-a630 (fp32, --image), run for N frames on the CPU and the KGSL model (qcom-emu) and
/// compared, outputs and state, with tinygrad's replay of the pickled JIT; writes the table of docs/pipeline.md.
/// Slow: minutes (the IR3 interpreter).
#[derive(clap::Args)]
pub struct Args {
    /// Frames to run.
    #[arg(long, default_value_t = 20)]
    pub frames: usize,
}

impl Args {
    pub fn run(self) -> Result<()> {
        let Self { frames } = self;
        let rows = xtask::pipeline::run(frames)?;
        let table = xtask::pipeline::markdown(&rows);
        println!("{table}");
        println!("updated {}", xtask::pipeline::write_doc(&table)?.display());
        Ok(())
    }
}
