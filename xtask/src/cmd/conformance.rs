//! `cargo xtask conformance`: its arguments and what it runs.
use anyhow::Result;

/// ONNX's backend node tests through the CPU compile path and `modelrt run`, next to tinygrad's own
/// results; prints the table, writes docs/conformance.md (full run) and fails on WRONG/CRASH or a
/// lost baseline PASS.
#[derive(clap::Args)]
pub struct Args {
    /// `ci`: one case per op tinygrad's ONNX frontend implements (what CI runs).
    #[arg(long)]
    pub subset: Option<String>,
    /// Only cases whose name contains this.
    #[arg(long)]
    pub filter: Option<String>,
    /// Record the results in xtask/conformance/baseline.json.
    #[arg(long)]
    pub update_baseline: bool,
    /// Time limit in seconds for each step of a case.
    #[arg(long, default_value_t = 120)]
    pub timeout: u64,
    /// Run with a release build of modelrt.
    #[arg(long)]
    pub release: bool,
}

impl Args {
    pub fn run(self) -> Result<()> {
        let Self {
            subset,
            filter,
            update_baseline,
            timeout,
            release,
        } = self;
        let selection = match subset.as_deref() {
            None => xtask::conformance::Selection::All,
            Some("ci") => xtask::conformance::Selection::Ci,
            Some(other) => anyhow::bail!("unknown --subset '{other}' (known: ci)"),
        };
        let o = xtask::conformance::Options {
            selection,
            filter,
            update_baseline,
            timeout: std::time::Duration::from_secs(timeout),
            release,
        };
        xtask::conformance::run(&o).map(|_| ())
    }
}
