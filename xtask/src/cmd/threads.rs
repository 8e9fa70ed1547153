//! `cargo xtask threads`: its arguments and what it runs.
use std::path::PathBuf;

use anyhow::Result;

/// Which CPU thread split (`compile --threads`) is fastest on this host: compile MODEL once per
/// candidate, time each bundle with `modelrt bench` in rotated rounds; writes target/bench/threads.md.
#[derive(clap::Args)]
pub struct Args {
    /// The ONNX model.
    #[arg(default_value = "xtask/models/vision.onnx")]
    pub model: PathBuf,
    /// Thread splits to compare [default: 1 up to this machine's cores].
    #[arg(long, value_delimiter = ',')]
    pub candidates: Vec<u32>,
    /// Fresh-process rounds per candidate.
    #[arg(long, default_value_t = 5)]
    pub rounds: usize,
    /// Timed steps per process.
    #[arg(long, default_value_t = 30)]
    pub iters: usize,
}

impl Args {
    pub fn run(self) -> Result<()> {
        let Self {
            model,
            candidates,
            rounds,
            iters,
        } = self;
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
        let candidates = if candidates.is_empty() {
            (1..=cores).collect()
        } else {
            candidates
        };
        let o = xtask::threads::ThreadsOptions {
            model: xtask::setup::workspace_root().join(model),
            candidates,
            rounds,
            iters,
        };
        xtask::threads::run(&o).map(|_| ())
    }
}
