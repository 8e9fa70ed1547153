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
    /// Run a bundle on .npy inputs (one step, or --steps N of a stateful bundle) and print (and
    /// optionally save) its outputs.
    Run(cli::model::RunArgs),
    /// Run the bundle's embedded reference inputs and compare with its expected outputs.
    Verify {
        /// The bundle (.mrt), compiled with `--reference`.
        bundle: PathBuf,
        #[command(flatten)]
        device: cli::model::DeviceArgs,
    },
    /// Time repeated runs (or --steps N consecutive frames): min/median/max of step, enqueue and
    /// device time.
    Bench(cli::model::BenchArgs),
    /// ASM24 USB-to-PCIe bridge tools (list bridges, PCIe topology, copy benchmark).
    #[command(subcommand)]
    Usb(cli::usb::UsbCmd),
    /// Qualcomm Adreno / KGSL tools for comma devices.
    #[command(subcommand)]
    Qcom(cli::qcom::QcomCmd),
    /// Qualcomm Hexagon DSP (FastRPC) tools for comma devices (unverified on hardware).
    #[command(subcommand)]
    Dsp(cli::dsp::DspCmd),
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.cmd {
        Cmd::Demo { device } => cli::demo::run(device),
        Cmd::Info { bundle, verbose } => cli::model::info(&bundle, verbose),
        Cmd::Run(args) => cli::model::run(&args),
        Cmd::Verify { bundle, device } => cli::model::open_bundle_file(&bundle, !device.no_mmap)
            .and_then(|file| cli::model::verify_file(&file, &bundle, device)),
        Cmd::Bench(args) => cli::model::bench(&args),
        Cmd::Usb(cmd) => cli::usb::run(cmd),
        Cmd::Qcom(cmd) => cli::qcom::run(cmd),
        Cmd::Dsp(cmd) => cli::dsp::run(cmd),
    };
    if let Err(err) = result {
        eprintln!("error: {err:#}");
        std::process::exit(1);
    }
}
