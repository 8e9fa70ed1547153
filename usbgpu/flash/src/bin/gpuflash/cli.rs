//! The command line: global options and one variant per subcommand (clap derive). The help texts
//! are the tool's documentation (`gpuflash --help`).
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use modelrt_gpuflash::flashtool::{EmuBoot, FlashTransport};

/// Navi31 SPI-flash and PSP firmware tool.
///
/// Reads, verifies and (with --yes) writes the 2 MiB GD25LQ16E SPI flash of Navi31 boards through
/// the GPU's ROM_SW engine ("romless" recovery: works only when the PSP bootloader stalled; a
/// healthy boot gates the engine), dumps the flash through the ROM aperture, and talks to the PSP
/// early-boot mailbox. Never resets or power-cycles the board. Every byte read or written is
/// SHA-256 hashed.
///
/// Status: every command is tested against the emulated board (directly and behind the emulated
/// ASM24 bridge). Behaviour on a real board — the ROM_SW quirks as modelled, the PSP mailbox
/// responses, timing — is only as good as the fact sheet the emulator follows; it has not been
/// verified on hardware by this build. Backups go to the per-user data directory
/// ($XDG_DATA_HOME/modelrt/gpuflash-backups, else ~/.local/share/modelrt/gpuflash-backups) unless
/// --backup-dir says otherwise; keep them outside the repository.
///
/// Try it without hardware: create an erased 2 MiB flash image
/// (`head -c 2097152 /dev/zero | tr '\0' '\377' > flash.bin`) and run
/// `gpuflash --transport emu:flash.bin info`.
#[derive(Parser)]
#[command(name = "gpuflash", version)]
pub struct Cli {
    /// Transport: auto (USB bridges, then native PCI), usb, pci, emu:IMAGE (emulated board behind
    /// the emulated ASM24 bridge; its flash is the 2 MiB file IMAGE and writes persist to that
    /// file) or emu-direct:IMAGE (the same board model without the bridge, like native PCI).
    #[arg(long, default_value = "auto", global = true)]
    pub transport: FlashTransport,
    /// Device index in the combined USB+PCI list.
    #[arg(long, default_value_t = 0, global = true)]
    pub device: usize,
    /// SPI clock prescaler 0..15 (ROM_CNTL bits 27:24).
    #[arg(long, default_value_t = 8, global = true)]
    pub prescale: u8,
    /// Emulator only: boot state of the emulated board.
    #[arg(long, value_enum, default_value_t = EmuBoot::Stalled, global = true)]
    pub emu_boot: EmuBoot,
    #[command(subcommand)]
    pub cmd: Cmd,
}

#[derive(Subcommand)]
pub enum Cmd {
    /// Identify the flash: JEDEC id, status registers 1-3, SFDP signature, write protection (CMP).
    ///
    /// Without hardware, `gpuflash --transport emu:IMAGE info` identifies the emulated board whose
    /// flash is the 2 MiB file IMAGE.
    Info,
    /// Read SIZE bytes at ADDR (decimal or 0x hex); hexdump, or raw bytes to -o FILE.
    ///
    /// An existing FILE is never replaced without --yes.
    Read {
        /// Start address.
        addr: String,
        /// Byte count.
        size: String,
        /// Write the bytes to this file instead of a hexdump (synced; an existing file is kept
        /// unless --yes).
        #[arg(short = 'o', long)]
        output: Option<PathBuf>,
        /// Replace the -o file if it exists.
        #[arg(long)]
        yes: bool,
    },
    /// Read the whole 2 MiB flash into FILE (written only after the read completed).
    ///
    /// FILE is written to a temporary file beside it, synced and renamed; an existing FILE (e.g. an
    /// older good backup) is never replaced without --yes.
    Dump {
        /// Output file.
        file: PathBuf,
        /// Replace FILE if it exists.
        #[arg(long)]
        yes: bool,
    },
    /// Compare the flash with a 2 MiB image; reports the first differing address.
    Verify {
        /// Image file (exactly the flash size).
        file: PathBuf,
    },
    /// Write a 2 MiB image (needs --yes); backup first, verified, resumable.
    ///
    /// Checks that the image is a Navi31 flash image (IFWI magic AA 55 AA 55 at offset 0, the two
    /// 1 MiB halves differ) unless --force-image. Takes a full backup first: the file and its
    /// directory are synced, the file is read back, and the flash is read a second time and
    /// compared with it; on any difference nothing is erased. Skips a sector only when two reads
    /// agree it is identical, erases+programs+reads back each changed sector and stops at the
    /// first mismatch, then reads the whole chip back and compares it (the range with the image,
    /// the rest with the backup). Re-run the same command to resume after an interruption
    /// (finished sectors are skipped), or limit it with --start-sector/--sector-count. Backups are
    /// named by their content hash and never overwritten, so the backup of the original flash
    /// survives a resumed run.
    Write(WriteArgs),
    /// PSP early-boot mailbox.
    Psp {
        #[command(subcommand)]
        cmd: PspCmd,
    },
    /// ROM aperture (ROM_INDEX/ROM_DATA).
    Rom {
        #[command(subcommand)]
        cmd: RomCmd,
    },
}

#[derive(Args)]
pub struct WriteArgs {
    /// Image file (exactly the flash size).
    pub file: PathBuf,
    /// Required: actually write.
    #[arg(long)]
    pub yes: bool,
    /// Clear the SR2.CMP write protection if set (other protection bits are kept).
    #[arg(long)]
    pub clear_cmp: bool,
    /// First sector (4 KiB units) to write.
    #[arg(long, default_value_t = 0)]
    pub start_sector: u32,
    /// Number of sectors (default: to the end).
    #[arg(long)]
    pub sector_count: Option<u32>,
    /// Write an image that does not look like a Navi31 flash image (no IFWI magic at offset 0, or
    /// mirrored 1 MiB halves).
    #[arg(long)]
    pub force_image: bool,
    /// Skip the full backup (needs --yes too).
    #[arg(long)]
    pub no_backup: bool,
    /// Directory for the backup file `gpuflash-backup-<sha256 prefix>.bin` (default: the per-user
    /// data directory, $XDG_DATA_HOME/modelrt/gpuflash-backups, else
    /// ~/.local/share/modelrt/gpuflash-backups; created if missing).
    #[arg(long)]
    pub backup_dir: Option<PathBuf>,
    /// Print one line per written sector (by default a progress bar on a terminal, and the summary).
    #[arg(short, long)]
    pub verbose: bool,
}

#[derive(Subcommand)]
pub enum PspCmd {
    /// Query boot partition, FB state, SPI model id and transfer type (read-only).
    Probe,
    /// Stream every IFWI item the PSP requests from a 2 MiB image until it reports the final
    /// phase (then the board needs a hard power cycle). The PSP chooses the partition. Needs --yes.
    IfwiAll {
        /// IFWI image (exactly 2 MiB).
        file: PathBuf,
        /// Required: actually stream.
        #[arg(long)]
        yes: bool,
    },
}

#[derive(Subcommand)]
pub enum RomCmd {
    /// Dump 2 MiB through the aperture; refuses a dump without the AA55AA55 magic or with
    /// mirrored 1 MiB halves.
    ///
    /// FILE is written to a temporary file beside it, synced and renamed; an existing FILE (e.g. an
    /// older good dump) is never replaced without --yes.
    Dump {
        /// Output file.
        file: PathBuf,
        /// Replace FILE if it exists.
        #[arg(long)]
        yes: bool,
    },
}
