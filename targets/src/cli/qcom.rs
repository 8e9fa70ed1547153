//! `modelrt qcom …` subcommands (Adreno via KGSL).
use anyhow::{bail, Context};
use clap::Subcommand;
use modelrt_qcom::adreno::{AdrenoDevice, AdrenoOptions};
use modelrt_qcom::selftest;

#[derive(Subcommand)]
pub enum QcomCmd {
    /// Smoke-test the Adreno backend: open KGSL, run a tiny embedded kernel, check outputs, print timing.
    Selftest {
        /// KGSL device node, or `emu` for the built-in KGSL model (validates streams; runs shaders on its IR3 interpreter).
        #[arg(long, default_value = "/dev/kgsl-3d0")]
        kgsl: String,
        /// The built-in KGSL model instead of a GPU (the same as `--kgsl emu`; like `dsp selftest --emu`).
        #[arg(long, conflicts_with = "kgsl")]
        emu: bool,
        /// Replays of the recorded command stream.
        #[arg(long, default_value_t = 5)]
        iters: u32,
        /// Per-submission timeout in milliseconds.
        #[arg(long, default_value_t = 30_000)]
        timeout_ms: u32,
        /// With `--kgsl emu`: print the model's trace of every KGSL call and decoded submission.
        #[arg(long)]
        trace: bool,
    },
}

pub fn run(cmd: QcomCmd) -> anyhow::Result<()> {
    match cmd {
        QcomCmd::Selftest {
            kgsl,
            emu,
            iters,
            timeout_ms,
            trace,
        } => selftest_cmd(if emu { "emu" } else { &kgsl }, iters, timeout_ms, trace),
    }
}

fn selftest_cmd(kgsl: &str, iters: u32, timeout_ms: u32, trace: bool) -> anyhow::Result<()> {
    if iters == 0 {
        bail!("--iters must be at least 1");
    }
    let opts = AdrenoOptions {
        timeout_ms,
        ..AdrenoOptions::default()
    };
    let report = if kgsl == "emu" {
        outln!("KGSL: built-in model (no GPU): command streams are validated, shaders run on the IR3 interpreter");
        use modelrt_qcom::emu::kgsl::{KgslModel, ModelConfig};
        let model = KgslModel::new(ModelConfig {
            execute_shaders: true,
            ..ModelConfig::default()
        });
        let mut dev = AdrenoDevice::open(model, opts)?;
        let r = selftest::run(&mut dev, true, iters)?;
        if trace {
            dev.with_kgsl(|m| m.trace().iter().for_each(|l| outln!("trace: {l}")));
        }
        r
    } else {
        if trace {
            bail!("--trace is only available with --emu (or --kgsl emu)");
        }
        real(kgsl, opts, iters)?
    };
    for l in report.lines() {
        outln!("{l}");
    }
    if kgsl == "emu" {
        outln!("note: emulated: the times above are the KGSL model's (host time; device time modelled), not hardware measurements");
    }
    if !report.passed() {
        bail!(
            "selftest FAILED: {} of {} outputs wrong",
            report.mismatches,
            selftest::N
        );
    }
    outln!(
        "{}",
        if report.executed_on_gpu {
            "selftest PASSED"
        } else {
            "selftest (model only) PASSED"
        }
    );
    Ok(())
}

#[cfg(target_os = "linux")]
fn real(node: &str, opts: AdrenoOptions, iters: u32) -> anyhow::Result<selftest::Report> {
    use modelrt_qcom::kgsl::real::KgslNode;
    if !std::path::Path::new(node).exists() {
        bail!("{node} does not exist: this is not an Adreno/KGSL device (use --emu to exercise the KGSL model)");
    }
    outln!("KGSL: {node}");
    let mut dev =
        AdrenoDevice::open(KgslNode::open(node)?, opts).context("bringing up the Adreno device")?;
    Ok(selftest::run(&mut dev, true, iters)?)
}

#[cfg(not(target_os = "linux"))]
fn real(node: &str, _opts: AdrenoOptions, _iters: u32) -> anyhow::Result<selftest::Report> {
    bail!("{node}: KGSL is only available on Linux/Android")
}
