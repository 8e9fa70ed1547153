//! `cargo xtask pickle`: its arguments and what it runs.
use std::path::PathBuf;

use anyhow::Result;

/// Write a compile_modeld-style tinygrad pickle from a tinygrad script, for `cargo xtask convert`.
///
/// SCRIPT.py:FN is a `--tinygrad` build function (xtask/models/modeld_pipeline.py:build is openpilot-shaped). Its
/// function is captured with TinyJit over 3 steps on this host's CPU (x86-64 CLANG kernels), its queues passed in as
/// inputs as openpilot's compile_modeld.py does, and pickled; each queue's initial contents are written next to the
/// pickle as OUT.state_NAME.npy (for `convert --state-init NAME=FILE`).
#[derive(clap::Args)]
pub struct Args {
    /// The tinygrad script and its build function.
    #[arg(value_name = "SCRIPT.py:FN")]
    pub script: String,
    /// Output pickle (.pkl).
    #[arg(short, long)]
    pub output: PathBuf,
    /// Replace an existing output file.
    #[arg(long)]
    pub yes: bool,
}

impl Args {
    pub fn run(self) -> Result<()> {
        let python = xtask::venv::ensure_venv(&xtask::setup::workspace_root())?;
        let w =
            xtask::pipeline::pickle::write_pickle(&python, &self.script, &self.output, self.yes)?;
        println!("wrote {} ({} bytes)", w.pickle.display(), w.bytes);
        for (name, path) in &w.states {
            println!(
                "wrote {} (initial contents of queue {name})",
                path.display()
            );
        }
        Ok(())
    }
}
