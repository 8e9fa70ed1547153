//! `cargo xtask bench`: its arguments and what it runs.

use anyhow::Result;

/// Benchmark modelrt vs tinygrad's Python runtime vs onnxruntime (writes target/bench/results.{json,md}).
#[derive(clap::Args)]
pub struct Args {
    /// CI smoke mode: policy only, one round, few iterations (checks the harness runs).
    #[arg(long)]
    pub quick: bool,
    /// Only these models (policy, dmonitor, vision, squeezenet, resnet50, and the stateful
    /// modeld_pipeline, timed frame by frame); repeatable.
    #[arg(long = "model")]
    pub models: Vec<String>,
    /// Fresh-process rounds per runtime.
    #[arg(long)]
    pub rounds: Option<usize>,
    /// Timed steps per process (modeld_pipeline: consecutive frames, at least 20).
    #[arg(long)]
    pub iters: Option<usize>,
    /// Thread counts, comma-separated, each for every runtime and all measured in the same rounds (0 = all
    /// cores; default 1,2 capped at the host's cores).
    #[arg(long, value_delimiter = ',')]
    pub threads: Vec<usize>,
    /// Replace the generated section of docs/bench.md with the report.
    #[arg(long)]
    pub write_doc: bool,
    /// Only regenerate the Markdown report (tables and prose) from a results JSON file (with --write-doc: into
    /// docs/bench.md too); runs nothing.
    #[arg(long, value_name = "RESULTS.json")]
    pub report: Option<std::path::PathBuf>,
}

impl Args {
    pub fn run(self) -> Result<()> {
        let Self {
            quick,
            models,
            rounds,
            iters,
            threads,
            write_doc,
            report,
        } = self;
        if let Some(path) = report {
            let md = xtask::bench::report_from_json(&path)?;
            print!("{md}");
            if write_doc {
                xtask::bench::write_doc(&md)?;
            }
            return Ok(());
        }
        let mut o = if quick {
            xtask::bench::BenchOptions::quick()
        } else {
            xtask::bench::BenchOptions::full()
        };
        if !models.is_empty() {
            o.models = models;
        }
        o.rounds = rounds.unwrap_or(o.rounds);
        o.iters = iters.unwrap_or(o.iters);
        if !threads.is_empty() {
            o.threads = threads;
        }
        o.write_doc = write_doc;
        xtask::bench::run(&o).map(|_| ())
    }
}
