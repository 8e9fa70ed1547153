//! `gpuflash`: Navi31 (RX 7900 class) SPI-flash and PSP firmware tool over BAR5 — romless SPI
//! access through the ROM_SW engine, the ROM aperture dump and the PSP early-boot mailbox.
//! This binary only parses arguments and draws progress and results; the engine (opening the board,
//! every command) is `modelrt_gpuflash::flashtool`.
#![forbid(unsafe_code)]
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{anyhow, bail, Result};
use clap::{Args, Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use modelrt_gpuflash::flashtool::firmware::{self, IFWI_SIZE};
use modelrt_gpuflash::flashtool::flash::{
    self, load_image, save, BackupOutcome, FlashOptions, ReadOptions, WriteRequest,
};
use modelrt_gpuflash::flashtool::{
    sha256_hex, Board, BoardOptions, EmuBoot, FlashEvent, FlashTransport, Unit,
};
use modelrt_gpuflash::navi31::chips;
use modelrt_gpuflash::navi31::psp::{error_text, Reply, StreamEvent, ERR_PARTITION_UPDATE};
use modelrt_gpuflash::navi31::writer::{sector_range, SectorEvent, WriteOptions};

/// `println!` that ends the program quietly when stdout is closed (`gpuflash … | head -1`).
macro_rules! say {
    ($($arg:tt)*) => {
        say_line(format_args!($($arg)*))
    };
}

/// One line to stdout; a closed stdout ends the program with exit 0, any other write error with
/// an error line.
fn say_line(line: std::fmt::Arguments<'_>) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_fmt(line).and_then(|()| out.write_all(b"\n")) {
        stdout_failed(&e);
    }
}

/// A failed write to stdout: quiet exit 0 for a closed pipe, else an error line and exit 1.
fn stdout_failed(e: &std::io::Error) -> ! {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        std::process::exit(0);
    }
    eprintln!("error: writing to stdout: {e}");
    std::process::exit(1);
}

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
struct Cli {
    /// Transport: auto (USB bridges, then native PCI), usb, pci, emu:IMAGE (emulated board behind
    /// the emulated ASM24 bridge; its flash is the 2 MiB file IMAGE and writes persist to that
    /// file) or emu-direct:IMAGE (the same board model without the bridge, like native PCI).
    #[arg(long, default_value = "auto", global = true)]
    transport: FlashTransport,
    /// Device index in the combined USB+PCI list.
    #[arg(long, default_value_t = 0, global = true)]
    device: usize,
    /// SPI clock prescaler 0..15 (ROM_CNTL bits 27:24).
    #[arg(long, default_value_t = 8, global = true)]
    prescale: u8,
    /// Emulator only: boot state of the emulated board.
    #[arg(long, value_enum, default_value_t = EmuBoot::Stalled, global = true)]
    emu_boot: EmuBoot,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Identify the flash: JEDEC id, status registers 1-3, SFDP signature, write protection (CMP).
    Info,
    /// Read SIZE bytes at ADDR (decimal or 0x hex); hexdump, or raw bytes to -o FILE.
    Read {
        /// Start address.
        addr: String,
        /// Byte count.
        size: String,
        /// Write the bytes to this file instead of a hexdump.
        #[arg(short = 'o', long)]
        output: Option<PathBuf>,
    },
    /// Read the whole 2 MiB flash into FILE (written only after the read completed).
    Dump {
        /// Output file.
        file: PathBuf,
    },
    /// Compare the flash with a 2 MiB image; reports the first differing address.
    Verify {
        /// Image file (exactly the flash size).
        file: PathBuf,
    },
    /// Write a 2 MiB image (needs --yes); backup first, verified, resumable.
    ///
    /// Takes a full backup first, skips identical sectors, erases+programs+reads back each
    /// changed sector and stops at the first mismatch. Re-run the same command to resume after
    /// an interruption (finished sectors are skipped), or limit it with --start-sector/--sector-count.
    /// Backups are named by their content hash and never overwritten, so the backup of the
    /// original flash survives a resumed run.
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
struct WriteArgs {
    /// Image file (exactly the flash size).
    file: PathBuf,
    /// Required: actually write.
    #[arg(long)]
    yes: bool,
    /// Clear the SR2.CMP write protection if set (other protection bits are kept).
    #[arg(long)]
    clear_cmp: bool,
    /// First sector (4 KiB units) to write.
    #[arg(long, default_value_t = 0)]
    start_sector: u32,
    /// Number of sectors (default: to the end).
    #[arg(long)]
    sector_count: Option<u32>,
    /// Skip the full backup (needs --yes too).
    #[arg(long)]
    no_backup: bool,
    /// Directory for the backup file `gpuflash-backup-<sha256 prefix>.bin` (default: the per-user
    /// data directory, $XDG_DATA_HOME/modelrt/gpuflash-backups, else
    /// ~/.local/share/modelrt/gpuflash-backups; created if missing).
    #[arg(long)]
    backup_dir: Option<PathBuf>,
}

#[derive(Subcommand)]
enum PspCmd {
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
enum RomCmd {
    /// Dump 2 MiB through the aperture; refuses a dump without the AA55AA55 magic or with
    /// mirrored 1 MiB halves.
    Dump {
        /// Output file.
        file: PathBuf,
    },
}

/// Draws [`FlashEvent`]s: one progress bar per phase; note lines go above the bar, or to stdout when
/// there is no terminal to draw on.
struct Draw {
    bar: ProgressBar,
    started: Instant,
    sectors: u64,
}

impl Draw {
    fn new(sectors: u64) -> Self {
        Draw {
            bar: ProgressBar::hidden(),
            started: Instant::now(),
            sectors,
        }
    }

    fn say(&self, line: String) {
        if self.bar.is_hidden() {
            say!("{line}");
        } else {
            self.bar.println(line);
        }
    }

    fn event(&mut self, ev: FlashEvent) {
        match ev {
            FlashEvent::Start { what, unit, total } => {
                self.bar = ProgressBar::new(total);
                let template = match unit {
                    Unit::Bytes => {
                        "{msg} [{bar:40}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}"
                    }
                    Unit::Sectors => "{msg} [{bar:40}] sector {pos}/{len}",
                };
                if let Ok(style) = ProgressStyle::with_template(template) {
                    self.bar.set_style(style);
                }
                self.bar.set_message(what);
            }
            FlashEvent::Position(n) => self.bar.set_position(n),
            FlashEvent::Sector(s) => {
                self.bar.inc(1);
                match s {
                    SectorEvent::Skipped { sector } => {
                        self.bar.set_message(format!("write {sector:3} unchanged"))
                    }
                    SectorEvent::Written { sector, .. } => self.say(format!(
                        "OK sector {sector:03}/{} @0x{:06X} elapsed={:.1?}",
                        self.sectors.saturating_sub(1),
                        sector * 0x1000,
                        self.started.elapsed()
                    )),
                }
            }
            FlashEvent::Stream(StreamEvent::Item { item, phase, len }) => {
                self.say(format!(
                    "streaming item 0x{item:02X} (phase {phase}, {len} bytes)"
                ));
                self.bar.set_length(len as u64);
                self.bar.set_position(0);
            }
            FlashEvent::Stream(StreamEvent::Bytes { sent }) => self.bar.set_position(sent as u64),
            FlashEvent::Finish => self.bar.finish_and_clear(),
        }
    }
}

fn parse_num(s: &str) -> Result<u32> {
    let r = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u32::from_str_radix(h, 16),
        None => s.parse(),
    };
    r.map_err(|_| anyhow::anyhow!("invalid number {s:?}"))
}

fn cmd_info(board: &mut Board, opts: &FlashOptions) -> Result<()> {
    let i = flash::info(board, opts)?;
    let cap = i.jedec;
    say!(
        "JEDEC capture: {:02X} {:02X} {:02X} {:02X}",
        cap[0],
        cap[1],
        cap[2],
        cap[3]
    );
    match i.chip {
        Some(c) => say!(
            "chip: {} ({} KiB, {} sectors of {} B)",
            c.name,
            c.size / 1024,
            c.sectors(),
            c.sector_size
        ),
        None => say!("chip: unknown (not in the chip table; read-only)"),
    }
    let [sr1, sr2, sr3] = i.status;
    say!("SR1=0x{sr1:02X} SR2=0x{sr2:02X} SR3=0x{sr3:02X}");
    if let (Some(bp), Some(cmp)) = (i.block_protect(), i.cmp()) {
        let cmp_text = if cmp {
            "set (array write-protected; write needs --clear-cmp)"
        } else {
            "clear"
        };
        say!("protection: BP=0x{bp:02X} CMP {cmp_text}");
    }
    let hex: Vec<String> = i.sfdp.iter().map(|b| format!("{b:02X}")).collect();
    let sig = if i.sfdp_signature_ok() {
        "signature OK"
    } else {
        "no SFDP signature"
    };
    say!("SFDP: {} ({sig})", hex.join(" "));
    eprintln!("SPI transactions: {}", i.spi_transactions);
    Ok(())
}

fn cmd_read(
    board: &mut Board,
    opts: &FlashOptions,
    (addr, size): (u32, u32),
    output: Option<&Path>,
) -> Result<()> {
    let req = ReadOptions {
        flash: *opts,
        addr,
        size,
    };
    let mut draw = Draw::new(0);
    let r = flash::read(board, &req, &mut |ev| draw.event(ev))?;
    eprintln!("SPI transactions: {}", r.spi_transactions);
    match output {
        Some(p) => {
            save(p, &r.data)?;
            say!("wrote {} bytes to {}", r.data.len(), p.display());
        }
        None => {
            let mut out = std::io::stdout().lock();
            for (i, line) in r.data.chunks(16).enumerate() {
                let hex: Vec<String> = line.iter().map(|b| format!("{b:02x}")).collect();
                if let Err(e) =
                    writeln!(out, "{:06x}: {}", req.addr as usize + 16 * i, hex.join(" "))
                {
                    stdout_failed(&e);
                }
            }
        }
    }
    say!("sha256 {}", sha256_hex(&r.data));
    Ok(())
}

fn cmd_dump(board: &mut Board, opts: &FlashOptions, file: &Path) -> Result<()> {
    let t = Instant::now();
    let mut draw = Draw::new(0);
    let r = flash::dump(board, opts, &mut |ev| draw.event(ev))?;
    eprintln!("SPI transactions: {}", r.spi_transactions);
    save(file, &r.data)?;
    say!(
        "dumped {} bytes to {} in {:.1?}; sha256 {}",
        r.data.len(),
        file.display(),
        t.elapsed(),
        sha256_hex(&r.data)
    );
    Ok(())
}

fn cmd_verify(board: &mut Board, opts: &FlashOptions, file: &Path) -> Result<()> {
    let img = load_image(file, chips::GD25LQ16E.size)?;
    let mut draw = Draw::new(0);
    let r = flash::verify(board, opts, &img, &mut |ev| draw.event(ev))?;
    eprintln!("SPI transactions: {}", r.spi_transactions);
    say!("verify OK; sha256 {}", sha256_hex(&r.data));
    Ok(())
}

fn cmd_write(
    board: &mut Board,
    opts: &FlashOptions,
    a: &WriteArgs,
    backup_dir: Option<&Path>,
) -> Result<()> {
    let img = load_image(&a.file, chips::GD25LQ16E.size)?;
    match backup_dir {
        None => say!("no backup taken (--no-backup)"),
        Some(d) => say!("backup directory: {}", d.display()),
    }
    let req = WriteRequest {
        flash: *opts,
        range: WriteOptions {
            start_sector: a.start_sector,
            sector_count: a.sector_count,
            clear_cmp: a.clear_cmp,
        },
        backup_dir: backup_dir.map(Path::to_path_buf),
    };
    let t = Instant::now();
    let sectors = (chips::GD25LQ16E.size / chips::GD25LQ16E.sector_size) as u64;
    let mut draw = Draw::new(sectors);
    let report = flash::write(
        board,
        &req,
        &img,
        |b| match b {
            BackupOutcome::NotTaken => {}
            BackupOutcome::AlreadyPresent { path, sha256 } => say!(
                "backup already present: {} (sha256 {sha256})",
                path.display()
            ),
            BackupOutcome::Saved { path, sha256 } => {
                say!("backup: {} (sha256 {sha256})", path.display())
            }
        },
        &mut |ev| draw.event(ev),
    )?;
    eprintln!("SPI transactions: {}", report.spi_transactions);
    let s = report.summary;
    say!(
        "write done: {} sectors checked, {} written, {} unchanged, {} pages programmed{}; image sha256 {}; {:.1?}",
        s.sectors,
        s.written,
        s.skipped,
        s.pages,
        if s.cleared_cmp { ", CMP cleared" } else { "" },
        sha256_hex(&img),
        t.elapsed()
    );
    Ok(())
}

fn show_reply(name: &str, r: &Reply) {
    if r.error == 0 {
        say!("{name:<20} ok        response=0x{:08X}", r.response);
    } else {
        say!(
            "{name:<20} error=0x{:02X} ({}) response=0x{:08X}",
            r.error,
            error_text(r.error),
            r.response
        );
    }
}

fn cmd_psp_probe(board: &mut Board) -> Result<()> {
    let p = firmware::psp_probe(board)?;
    show_reply("GET_BOOT_PARTITION", &p.boot_partition);
    show_reply("GET_FB_STATE", &p.fb_state);
    show_reply("SPI_GET_MODEL_ID", &p.spi_model_id);
    show_reply("GET_TRANSFER_TYPE", &p.transfer_type);
    if p.transfer_type.error == ERR_PARTITION_UPDATE {
        say!("hint: update commands gated: reset card and do not initialize AMDev/SOS");
    } else if p.transfer_type.error == 0 {
        let v = p.transfer_type.response;
        say!("PSP requests item 0x{:02X} in phase {}", v & 0xFF, v >> 8);
    }
    Ok(())
}

fn cmd_psp_ifwi_all(board: &mut Board, file: &Path) -> Result<()> {
    let img = load_image(file, IFWI_SIZE)?;
    let mut draw = Draw::new(0);
    let items = firmware::psp_ifwi_all(board, &img, &mut |ev| draw.event(ev))?;
    say!(
        "streamed {} items; image sha256 {}",
        items.len(),
        sha256_hex(&img)
    );
    say!("PSP reported the final phase: a hard power cycle is required");
    if board.is_emulated() {
        say!("note: the emulator records the streamed items; it does not reproduce the PSP's partition rewrite");
    }
    Ok(())
}

fn cmd_rom_dump(board: &mut Board, file: &Path) -> Result<()> {
    let mut draw = Draw::new(0);
    let buf = firmware::rom_dump(board, &mut |ev| draw.event(ev))?;
    save(file, &buf)?;
    say!(
        "ROM aperture dump: {} bytes to {}; sha256 {}",
        buf.len(),
        file.display(),
        sha256_hex(&buf)
    );
    Ok(())
}

/// The per-user backup directory: `$XDG_DATA_HOME/modelrt/gpuflash-backups`, else
/// `$HOME/.local/share/modelrt/gpuflash-backups` (XDG base directory rules: a relative
/// `XDG_DATA_HOME` is ignored).
fn default_backup_dir() -> Result<PathBuf> {
    let set = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let base = match set("XDG_DATA_HOME").filter(|p| p.is_absolute()) {
        Some(x) => x,
        None => match set("HOME") {
            Some(h) => h.join(".local/share"),
            None => bail!(
                "no per-user data directory for the backup (neither XDG_DATA_HOME nor HOME is set); \
                 pass --backup-dir DIR (outside the repository)"
            ),
        },
    };
    Ok(base.join("modelrt").join("gpuflash-backups"))
}

/// The directory the write's backup goes to (created now), or `None` with `--no-backup`.
fn backup_dir(a: &WriteArgs) -> Result<Option<PathBuf>> {
    if a.no_backup {
        return Ok(None);
    }
    let dir = match &a.backup_dir {
        Some(d) => d.clone(),
        None => default_backup_dir()?,
    };
    std::fs::create_dir_all(&dir)
        .map_err(|e| anyhow!("cannot create the backup directory {}: {e}", dir.display()))?;
    Ok(Some(dir))
}

/// `read`'s ADDR and SIZE, checked against the flash size.
fn read_range(addr: &str, size: &str) -> Result<(u32, u32)> {
    let (addr, size) = (parse_num(addr)?, parse_num(size)?);
    let total = chips::GD25LQ16E.size;
    if size == 0 {
        bail!("the read length is zero: give SIZE of at least 1 byte (e.g. `read {addr:#x} 16`)");
    }
    if addr >= total || size > total - addr {
        bail!("range 0x{addr:X}+0x{size:X} is outside the {total}-byte flash");
    }
    Ok((addr, size))
}

fn run(cli: &Cli) -> Result<()> {
    if cli.prescale > 15 {
        bail!("--prescale must be 0..15");
    }
    // Refuse before touching the device (and before any backup).
    let mut backup = None;
    let mut read = (0, 0);
    match &cli.cmd {
        Cmd::Write(a) => {
            if !a.yes {
                bail!("refusing to write without --yes");
            }
            let sectors = chips::GD25LQ16E.size / chips::GD25LQ16E.sector_size;
            let range = WriteOptions {
                start_sector: a.start_sector,
                sector_count: a.sector_count,
                clear_cmp: a.clear_cmp,
            };
            sector_range::<std::convert::Infallible>(&range, sectors)
                .map_err(|e| anyhow!("{e}"))?;
            load_image(&a.file, chips::GD25LQ16E.size)?;
            backup = backup_dir(a)?;
        }
        Cmd::Read { addr, size, .. } => read = read_range(addr, size)?,
        Cmd::Psp {
            cmd: PspCmd::IfwiAll { yes: false, .. },
        } => bail!("refusing to stream firmware without --yes"),
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
        Cmd::Info => cmd_info(b, &opts),
        Cmd::Read { output, .. } => cmd_read(b, &opts, read, output.as_deref()),
        Cmd::Dump { file } => cmd_dump(b, &opts, file),
        Cmd::Verify { file } => cmd_verify(b, &opts, file),
        Cmd::Write(a) => cmd_write(b, &opts, a, backup.as_deref()),
        Cmd::Psp { cmd: PspCmd::Probe } => cmd_psp_probe(b),
        Cmd::Psp {
            cmd: PspCmd::IfwiAll { file, .. },
        } => cmd_psp_ifwi_all(b, file),
        Cmd::Rom {
            cmd: RomCmd::Dump { file },
        } => cmd_rom_dump(b, file),
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

fn main() {
    let cli = Cli::parse();
    if let Err(e) = run(&cli) {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}
