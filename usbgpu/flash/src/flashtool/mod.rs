//! The engine behind the `gpuflash` binary, probe-rs style: the binary parses arguments and draws
//! progress; everything else is here, one idea per module.
//!
//! * [`transport`]: the typed `--transport` and `--emu-boot` values;
//! * [`board`]: opening the selected board (USB bridge, native PCI, or the emulated board behind the
//!   bridge emulator or directly) as one counted, type-erased BAR5;
//! * [`erased`]: the type-erased MMIO and delay adapters [`board`] hands out;
//! * [`flash`]: the SPI-flash commands (info, read, verify, write with backup) over the ROM_SW engine;
//! * [`firmware`]: the PSP early-boot mailbox and the ROM aperture dump;
//! * [`error`]: [`FlashToolError`], the one error type of all of them.
//!
//! Long operations report through a [`FlashEvent`] callback; they never print.
pub mod board;
pub mod erased;
pub mod error;
pub mod firmware;
pub mod flash;
pub mod transport;

pub use board::{Board, BoardOptions};
pub use error::FlashToolError;
pub use transport::{EmuBoot, FlashTransport};

use sha2::{Digest, Sha256};

use crate::navi31::psp::StreamEvent;
use crate::navi31::writer::SectorEvent;

/// What a progress display counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Bytes read or sent.
    Bytes,
    /// 4 KiB flash sectors.
    Sectors,
}

/// Progress of a long operation, in order: `Start`, then positions and notes, then `Finish`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FlashEvent {
    /// A phase (`what`: "read", "dump", "backup", "backup check", "write", "verify", "rom dump",
    /// "item") of `total` units starts.
    Start {
        what: &'static str,
        unit: Unit,
        total: u64,
    },
    /// Units done so far in the current phase.
    Position(u64),
    /// A sector of a write was skipped (unchanged) or written and verified.
    Sector(SectorEvent),
    /// The PSP requested an item (`len` bytes), or sent bytes of it.
    Stream(StreamEvent),
    /// The current phase ended.
    Finish,
}

/// SHA-256 of `data` as lower-case hex.
pub fn sha256_hex(data: &[u8]) -> String {
    Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
