//! The `modelrt` command-line tool: run, inspect, verify and benchmark model bundles, and talk to
//! USB-attached GPUs and comma-device accelerators.
use clap::{Parser, Subcommand};

mod cli;

#[derive(Parser)]
#[command(name = "modelrt", version, about = "Run precompiled neural-network model bundles (.mrt)")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
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
        Cmd::Usb(cmd) => cli::usb::run(cmd),
        Cmd::Qcom(cmd) => cli::qcom::run(cmd),
    };
    if let Err(err) = result {
        eprintln!("error: {err:#}");
        std::process::exit(1);
    }
}
