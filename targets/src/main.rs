//! The `modelrt` command-line tool: run, inspect, verify and benchmark model bundles, and talk to
//! USB-attached GPUs and comma-device accelerators.
#![forbid(unsafe_code)]
use std::path::PathBuf;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use modelrt_targets::registry::REGISTRY;

mod cli;

#[derive(Parser)]
#[command(
    name = "modelrt",
    version,
    about = "Run precompiled neural-network model bundles (.mrt)",
    // The device list in `after_help` comes from the registry (`device_list`).
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
    /// Describe a bundle: format, target, producer, signer, arena, kernels, inputs and outputs. Never
    /// maps or runs the bundle's code (it only reads and decodes the file).
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
    /// List the instructions of a bundle's GPU kernels (adreno-a630 IR3, amd-gfx1100 RDNA3), or
    /// decode raw instruction words (--isa a6xx|gfx1100 --hex WORD...). Never maps or runs the
    /// bundle's code (it only decodes it).
    Disasm(cli::disasm::DisasmArgs),
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

/// The top-level help's closing text: every registered device with its help.
fn device_list() -> String {
    let devices: Vec<String> = REGISTRY
        .devices()
        .iter()
        .filter(|d| !d.hidden)
        .map(|d| match d.family {
            Some(f) => format!("  {:<9} {} [{f} bundles]", d.name, d.help),
            None => format!("  {:<9} {}", d.name, d.help),
        })
        .collect();
    format!(
        "Bundles come from `cargo xtask compile MODEL.onnx --target ...`. Devices (--device of \
run/verify/bench/demo; auto picks the real device for the bundle's target):
{}
Only cpu has been run on real hardware; the emulated devices compute real outputs, and every time they report is labelled as modelled.
A closed standard output (e.g. `modelrt info X.mrt | head -1`) ends modelrt quietly with exit status 141.",
        devices.join("\n")
    )
}

fn main() {
    let matches = Cli::command().after_help(device_list()).get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let result = match cli.cmd {
        Cmd::Demo { device } => cli::demo::run(&device),
        Cmd::Info { bundle, verbose } => cli::model::info(&bundle, verbose),
        Cmd::Run(args) => cli::model::run(&args),
        Cmd::Verify { bundle, device } => cli::model::open_bundle_file(&bundle, !device.no_mmap)
            .and_then(|file| cli::model::verify_file(&file, &bundle, &device)),
        Cmd::Bench(args) => cli::model::bench(&args),
        Cmd::Disasm(args) => cli::disasm::run(&args),
        Cmd::Usb(cmd) => cli::usb::run(cmd),
        Cmd::Qcom(cmd) => cli::qcom::run(cmd),
        Cmd::Dsp(cmd) => cli::dsp::run(cmd),
    };
    if let Err(err) = result {
        if let Some(i) = err.downcast_ref::<cli::progress::Interrupted>() {
            eprintln!("interrupted: {i}");
            std::process::exit(modelrt_targets::interrupt::EXIT_STATUS);
        }
        eprintln!("error: {err:#}");
        std::process::exit(1);
    }
}
