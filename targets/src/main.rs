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
    after_help = "Bundles come from `cargo xtask compile MODEL.onnx --target ...`. Devices (--device of \
run/verify/bench/demo; auto picks the real device for the bundle's target):
  cpu       this machine's CPU (cpu-* bundles)
  qcom      Adreno GPU through KGSL on a comma device (adreno-a630 bundles)
  qcom-emu  emulated Adreno: the KGSL model validates the command streams, the IR3 interpreter computes the outputs
  dsp       Hexagon cDSP through FastRPC on a comma device (hexagon-v65 bundles; never run on hardware)
  dsp-emu   emulated DSP: the FastRPC model, the bundle's model library runs under qemu-hexagon
  usb       AMD gfx1100 GPU behind an ASM24 USB bridge, booted by the AM driver (amd-gfx1100 bundles; untested on hardware)
  usb-emu   emulated AMD GPU: the bridge emulator's Navi31 model, kernels on the RDNA3 interpreter (needs the amdgpu firmware)
Only cpu has been run on real hardware; the emulated devices compute real outputs, and every time they report is labelled as modelled.
A closed standard output (e.g. `modelrt info X.mrt | head -1`) ends modelrt quietly with exit status 141."
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
    /// List the instructions of a bundle's GPU kernels (adreno-a630 IR3, amd-gfx1100 RDNA3), or
    /// decode raw instruction words (--isa a6xx|gfx1100 --hex WORD...).
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

fn main() {
    let cli = Cli::parse();
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
        eprintln!("error: {err:#}");
        std::process::exit(1);
    }
}
