//! `cargo xtask bench`: its arguments and what it runs.

use anyhow::Result;

/// Benchmark modelrt vs tinygrad's Python runtime vs onnxruntime (writes target/bench/results.{json,md}).
#[derive(clap::Args)]
pub struct Args {
    /// `usb-big`: a model at the big driving model's scale compiled for amd-gfx1100 and loaded on
    /// usb-emu, against tinygrad's copy-in protocol (the `usb-big` section of docs/bench.md;
    /// minutes and several GB of memory). Without it: the CPU benchmark.
    #[arg(value_parser = ["usb-big"])]
    pub suite: Option<String>,
    /// usb-big: width of the model's matrix products (12288: 1.16 GB of float16 weights).
    #[arg(long, default_value_t = 12288)]
    pub hidden: usize,
    /// usb-big: use the release `modelrt` binary.
    #[arg(long)]
    pub release: bool,
    /// CI smoke mode: policy only, one round, few iterations (checks the harness runs).
    #[arg(long)]
    pub quick: bool,
    /// Only these models (policy, policy_op — openpilot driving_policy's shape —, dmonitor,
    /// dmonitor085 — openpilot 0.8.5's real driver-monitoring net —, vision, squeezenet, resnet50,
    /// and the stateful modeld_pipeline, timed frame by frame); repeatable.
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
            suite,
            hidden,
            release,
            quick,
            models,
            rounds,
            iters,
            threads,
            write_doc,
            report,
        } = self;
        if suite.as_deref() == Some("usb-big") {
            let o = xtask::bench::usb_big::UsbBigOptions {
                hidden,
                release,
                write_doc,
            };
            let md = xtask::bench::usb_big::run(&xtask::setup::workspace_root(), &o)?;
            print!("{md}");
            return Ok(());
        }
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
