//! `gpuflash`: Navi31 (RX 7900 class) SPI-flash and PSP firmware tool over BAR5 — romless SPI
//! access through the ROM_SW engine, the ROM aperture dump and the PSP early-boot mailbox.
//! This binary only parses arguments (`cli.rs`), dispatches to one file per subcommand and draws
//! progress (`draw.rs`) and results; the engine (opening the board, every command) is
//! `modelrt_gpuflash::flashtool`.
#![forbid(unsafe_code)]
#[macro_use]
mod out;
mod cli;
mod draw;
mod dump;
mod info;
mod psp;
mod read;
mod rom;
mod verify;
mod write;

use anyhow::{bail, Result};
use clap::Parser;
use modelrt_gpuflash::flashtool::firmware::IFWI_SIZE;
use modelrt_gpuflash::flashtool::flash::{load_image, FlashOptions};
use modelrt_gpuflash::flashtool::{Board, BoardOptions, FlashToolError};
use modelrt_gpuflash::navi31::chips;

use crate::cli::{Cli, Cmd, PspCmd, RomCmd};

fn run(cli: &Cli) -> Result<()> {
    if cli.prescale > 15 {
        bail!("--prescale must be 0..15");
    }
    // Refuse before touching the device (and before any backup).
    let mut backup = None;
    let mut range = (0, 0);
    match &cli.cmd {
        Cmd::Write(a) => backup = write::prepare(a)?,
        Cmd::Read {
            addr,
            size,
            output,
            yes,
        } => {
            range = read::range(addr, size)?;
            if let Some(o) = output {
                refuse_existing(o, *yes)?;
            }
        }
        Cmd::Dump { file, yes }
        | Cmd::Rom {
            cmd: RomCmd::Dump { file, yes },
        } => refuse_existing(file, *yes)?,
        Cmd::Psp {
            cmd: PspCmd::IfwiAll { yes: false, .. },
        } => bail!("refusing to stream firmware without --yes"),
        // A wrong-size image is refused before any transfer to the board.
        Cmd::Verify { file } => {
            load_image(file, chips::GD25LQ16E.size)?;
        }
        Cmd::Psp {
            cmd: PspCmd::IfwiAll { file, .. },
        } => {
            load_image(file, IFWI_SIZE)?;
        }
        _ => {}
    }
    let mut board = Board::open(&BoardOptions {
        transport: cli.transport.clone(),
        device: cli.device,
        emu_boot: cli.emu_boot,
    })?;
    eprintln!("transport: {}", board.description());
    let opts = FlashOptions {
        prescale: cli.prescale,
    };
    let b = &mut board;
    let result = match &cli.cmd {
        Cmd::Info => info::run(b, &opts),
        Cmd::Read { output, yes, .. } => read::run(b, &opts, range, output.as_deref(), *yes),
        Cmd::Dump { file, yes } => dump::run(b, &opts, file, *yes),
        Cmd::Verify { file } => verify::run(b, &opts, file),
        Cmd::Write(a) => write::run(b, &opts, a, backup.as_deref()),
        Cmd::Psp { cmd: PspCmd::Probe } => psp::probe(b),
        Cmd::Psp {
            cmd: PspCmd::IfwiAll { file, .. },
        } => psp::ifwi_all(b, file),
        Cmd::Rom {
            cmd: RomCmd::Dump { file, yes },
        } => rom::dump(b, file, *yes),
    };
    match board.usb_transfers() {
        Some(n) => eprintln!("BAR5 accesses: {}; USB transfers: {n}", board.accesses()),
        None => eprintln!("BAR5 accesses: {}", board.accesses()),
    }
    if let Some(e) = board.emulated_flash_error() {
        return Err(e.into());
    }
    result
}

/// An output file that exists is refused before the device is touched, unless `--yes`.
fn refuse_existing(file: &std::path::Path, yes: bool) -> Result<()> {
    if !yes && file.exists() {
        return Err(FlashToolError::Exists(file.to_path_buf()).into());
    }
    Ok(())
}

/// A command ended early by Ctrl-C; the text says where it stopped and how to resume.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Interrupted(pub String);

fn main() {
    let cli = Cli::parse();
    if let Err(e) = run(&cli) {
        if let Some(i) = e.downcast_ref::<Interrupted>() {
            eprintln!("interrupted: {i}");
            std::process::exit(modelrt_platform::interrupt::EXIT_STATUS);
        }
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}
