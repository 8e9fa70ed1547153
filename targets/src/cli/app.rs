//! The `modelrt` command line: its arguments ([`command`]), and running one parsed command line
//! ([`run_matches`]) or a whole argv ([`main`]). The binary (`src/main.rs`) is [`main`]; the Python
//! wheel's `modelrt` command builds on [`command`] and [`run_matches`] (adding `compile` and `convert`).
use std::ffi::OsString;
use std::path::PathBuf;

use clap::{ArgMatches, CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::cli;
use crate::registry::REGISTRY;

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
        "Bundles come from `modelrt compile MODEL.onnx --target ...` (the Python wheel with its compile extra) or `cargo xtask compile`. Devices (--device of \
run/verify/bench/demo; auto picks the real device for the bundle's target):
{}
Only cpu has been run on real hardware; the emulated devices compute real outputs, and every time they report is labelled as modelled.
A closed standard output (e.g. `modelrt info X.mrt | head -1`) ends modelrt quietly with exit status 141.",
        devices.join("\n")
    )
}

/// The `modelrt` command with its subcommands and the device list in its help.
pub fn command() -> clap::Command {
    Cli::command().after_help(device_list())
}

/// Run a command line parsed by [`command`] (or by a command that extends it); returns the exit status.
/// A failure is printed as one `error:` line.
pub fn run_matches(matches: &ArgMatches) -> i32 {
    let cli = match Cli::from_arg_matches(matches) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return e.exit_code();
        }
    };
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
    match result {
        Ok(()) => 0,
        Err(err) => {
            if let Some(i) = err.downcast_ref::<cli::progress::Interrupted>() {
                eprintln!("interrupted: {i}");
                return crate::interrupt::EXIT_STATUS;
            }
            eprintln!("error: {err:#}");
            1
        }
    }
}

/// Parse `args` (the program name first) and run them; returns the exit status. `--help`,
/// `--version` and usage errors print as clap prints them (usage errors exit 2).
pub fn main<I, T>(args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    match command().try_get_matches_from(args) {
        Ok(matches) => run_matches(&matches),
        Err(e) => {
            let _ = e.print();
            e.exit_code()
        }
    }
}
