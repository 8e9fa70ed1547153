//! `cargo xtask`: host tooling for modelrt — compile models to bundles, import tinygrad pickles,
//! regenerate the embedded demo, run the whole CI suite, cross-build for comma devices, benchmark.
#![forbid(unsafe_code)]
use anyhow::Result;
use clap::{Parser, Subcommand};

mod ci;
mod closed_pipe;
mod cmd;

#[derive(Parser)]
#[command(name = "cargo xtask", about = "modelrt host tooling")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

/// The subcommands; each one's arguments, help text and what it runs are in `cmd/<name>.rs`.
#[derive(Subcommand)]
enum Cmd {
    Compile(Box<cmd::compile::Args>),
    Convert(cmd::convert::Args),
    Pickle(cmd::pickle::Args),
    Zoo(cmd::zoo::Args),
    Pipeline(cmd::pipeline::Args),
    Setup(cmd::setup::Args),
    Firmware(cmd::firmware::Args),
    Ci(cmd::ci::Args),
    Capi(cmd::capi::Args),
    Wheel(cmd::wheel::Args),
    Dist(cmd::dist::Args),
    Bench(cmd::bench::Args),
    Hexagon(cmd::hexagon::Args),
    Footprint(cmd::footprint::Args),
    Threads(cmd::threads::Args),
    Conformance(cmd::conformance::Args),
    ManifestSchema(cmd::manifest_schema::Args),
    Demo(cmd::demo::Args),
    Keygen(cmd::keygen::Args),
    Sign(cmd::sign::Args),
    PickleTable(cmd::pickle_table::Args),
}

fn main() {
    closed_pipe::install();
    let cli = Cli::parse();
    if let Err(e) = run(cli) {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}

fn run(cli: Cli) -> Result<()> {
    match cli.cmd {
        Cmd::Compile(a) => cmd::compile::run(*a),
        Cmd::Convert(a) => cmd::convert::run(a),
        Cmd::Pickle(a) => a.run(),
        Cmd::Zoo(a) => a.run(),
        Cmd::Pipeline(a) => a.run(),
        Cmd::Setup(a) => a.run(),
        Cmd::Firmware(a) => a.run(),
        Cmd::Ci(a) => a.run(),
        Cmd::Capi(a) => a.run(),
        Cmd::Wheel(a) => a.run(),
        Cmd::Dist(a) => a.run(),
        Cmd::Bench(a) => a.run(),
        Cmd::Hexagon(a) => a.run(),
        Cmd::Footprint(a) => a.run(),
        Cmd::Threads(a) => a.run(),
        Cmd::Conformance(a) => a.run(),
        Cmd::ManifestSchema(a) => a.run(),
        Cmd::Demo(a) => a.run(),
        Cmd::Keygen(a) => a.run(),
        Cmd::Sign(a) => a.run(),
        Cmd::PickleTable(a) => a.run(),
    }
}
