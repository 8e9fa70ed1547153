//! The `modelrt` command-line tool: run, inspect, verify and benchmark model bundles, and talk to
//! USB-attached GPUs and comma-device accelerators.
#![forbid(unsafe_code)]
use std::path::PathBuf;

use clap::{Parser, Subcommand};

mod cli;

#[derive(Parser)]
#[command(
    name = "modelrt",
    version,
    about = "Run precompiled neural-network model bundles (.mrt)",
    after_help = "Bundles come from `cargo xtask compile MODEL.onnx --target ...`. The CPU backend runs here; \
the Adreno (qcom) and USB-bridge paths are verified against emulators and tinygrad's own command streams, \
not on real hardware. `--device qcom-emu` validates Adreno command streams without a GPU and computes the outputs with an IR3 interpreter."
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run the embedded demo model and verify it against its onnxruntime reference.
    Demo {
        #[command(flatten)]
        device: cli::model::DeviceArgs,
    },
    /// Describe a bundle: format, target, producer, arena, kernels, inputs and outputs.
    Info {
        /// The bundle (.mrt).
        bundle: PathBuf,
        /// Also list every kernel.
        #[arg(short, long)]
        verbose: bool,
    },
    /// Run a bundle on .npy inputs and print (and optionally save) its outputs.
    Run {
        /// The bundle (.mrt).
        bundle: PathBuf,
        /// An input as NAME=FILE.npy (repeat for each input).
        #[arg(short, long = "input", value_name = "NAME=FILE.npy")]
        inputs: Vec<String>,
        /// Write each output to DIR/NAME.npy.
        #[arg(short, long, value_name = "DIR")]
        output_dir: Option<PathBuf>,
        #[command(flatten)]
        device: cli::model::DeviceArgs,
    },
    /// Run the bundle's embedded reference inputs and compare with its expected outputs.
    Verify {
        /// The bundle (.mrt), compiled with `--reference`.
        bundle: PathBuf,
        #[command(flatten)]
        device: cli::model::DeviceArgs,
    },
    /// Time repeated runs: min/median/max of step, enqueue and device time.
    Bench {
        /// The bundle (.mrt).
        bundle: PathBuf,
        /// Timed iterations.
        #[arg(long, default_value_t = 100)]
        iters: usize,
        /// Untimed warm-up iterations.
        #[arg(long, default_value_t = 10)]
        warmup: usize,
        /// Print one JSON object (step samples, stats, load time, peak RSS) instead of the summary.
        #[arg(long)]
        json: bool,
        /// Also write a Chrome trace-event JSON (Perfetto) of one step-by-step run (CPU backend).
        #[arg(long, value_name = "FILE.json")]
        trace: Option<PathBuf>,
        #[command(flatten)]
        device: cli::model::DeviceArgs,
    },
    /// ASM24 USB-to-PCIe bridge tools (list bridges, PCIe topology, copy benchmark).
    #[command(subcommand)]
    Usb(cli::usb::UsbCmd),
    /// Qualcomm Adreno / KGSL tools for comma devices.
    #[command(subcommand)]
    Qcom(cli::qcom::QcomCmd),
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.cmd {
        Cmd::Demo { device } => cli::demo::run(device),
        Cmd::Info { bundle, verbose } => cli::model::info(&bundle, verbose),
        Cmd::Run {
            bundle,
            inputs,
            output_dir,
            device,
        } => cli::model::run(&bundle, &inputs, output_dir.as_deref(), device),
        Cmd::Verify { bundle, device } => cli::model::read_bundle_file(&bundle)
            .and_then(|bytes| cli::model::verify_bytes(&bytes, &bundle, device, false)),
        Cmd::Bench {
            bundle,
            iters,
            warmup,
            json,
            trace,
            device,
        } => cli::model::bench(
            &bundle,
            iters,
            warmup,
            device,
            cli::model::BenchOutput {
                json,
                trace: trace.as_deref(),
            },
        ),
        Cmd::Usb(cmd) => cli::usb::run(cmd),
        Cmd::Qcom(cmd) => cli::qcom::run(cmd),
    };
    if let Err(err) = result {
        eprintln!("error: {err:#}");
        std::process::exit(1);
    }
}
