//! `gpuflash`: Navi31 (RX 7900 class) SPI-flash and PSP firmware tool over BAR5 — romless SPI
//! access through the ROM_SW engine, the ROM aperture dump and the PSP early-boot mailbox.
//! The CLI only parses, draws progress and hashes; the work is in `modelrt_usbgpu::navi31`.
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use modelrt_hal::embedded_hal::delay::DelayNs;
use modelrt_hal::mmio::Mmio;
use modelrt_usbgpu::emu::bridge::{BridgeEmulator, EmuHandle};
use modelrt_usbgpu::emu::direct::{DirectMmio, SharedModel};
use modelrt_usbgpu::emu::navi31::{EngineMode, Navi31Bar5, Navi31Config, PspPhase};
use modelrt_usbgpu::host::{self, Selector};
use modelrt_usbgpu::navi31::psp::{error_text, Mailbox, Reply, StreamEvent, ERR_PARTITION_UPDATE};
use modelrt_usbgpu::navi31::romsw::{RomSw, RomSwConfig};
use modelrt_usbgpu::navi31::spi_nor::SpiNor;
use modelrt_usbgpu::navi31::writer::{write_image, SectorEvent, WriteOptions};
use modelrt_usbgpu::navi31::{aperture, chips};
#[cfg(target_os = "linux")]
use modelrt_usbgpu::pcie::mapped::MappedMmio;
use modelrt_usbgpu::pcie::PciDevice;
use modelrt_usbgpu::session::{Session, TransportKind};
use sha2::{Digest, Sha256};

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
/// verified on hardware by this build. Keep a verified backup outside the repository.
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
    transport: String,
    /// Device index in the combined USB+PCI list.
    #[arg(long, default_value_t = 0, global = true)]
    device: usize,
    /// SPI clock prescaler 0..15 (ROM_CNTL bits 27:24).
    #[arg(long, default_value_t = 8, global = true)]
    prescale: u8,
    /// Emulator only: boot state of the emulated board: stalled (romless works), healthy (ROM_SW
    /// gated, PSP early phase), sos (ROM_SW gated, host driver loaded SOS).
    #[arg(long, default_value = "stalled", global = true)]
    emu_boot: String,
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
    /// Directory for the backup file `gpuflash-backup-<sha256 prefix>.bin`.
    #[arg(long, default_value = ".")]
    backup_dir: PathBuf,
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

/// Any transport's BAR5, errors as text, with an access counter.
struct DynMmio<'a> {
    inner: Box<dyn Mmio<Error = String> + 'a>,
    accesses: u64,
}

impl<'a> DynMmio<'a> {
    fn new(m: impl Mmio + 'a) -> Self {
        DynMmio {
            inner: Box::new(TextErr(m)),
            accesses: 0,
        }
    }
}

struct TextErr<M>(M);

impl<M: Mmio> Mmio for TextErr<M> {
    type Error = String;
    fn read32(&mut self, o: u64) -> Result<u32, String> {
        self.0.read32(o).map_err(|e| e.to_string())
    }
    fn write32(&mut self, o: u64, v: u32) -> Result<(), String> {
        self.0.write32(o, v).map_err(|e| e.to_string())
    }
    fn write32_posted(&mut self, o: u64, v: u32) -> Result<(), String> {
        self.0.write32_posted(o, v).map_err(|e| e.to_string())
    }
    fn flush(&mut self) -> Result<(), String> {
        self.0.flush().map_err(|e| e.to_string())
    }
    fn read_block(&mut self, o: u64, out: &mut [u32]) -> Result<(), String> {
        self.0.read_block(o, out).map_err(|e| e.to_string())
    }
    fn write_block(&mut self, o: u64, d: &[u32]) -> Result<(), String> {
        self.0.write_block(o, d).map_err(|e| e.to_string())
    }
}

impl Mmio for DynMmio<'_> {
    type Error = String;
    fn read32(&mut self, o: u64) -> Result<u32, String> {
        self.accesses += 1;
        self.inner.read32(o)
    }
    fn write32(&mut self, o: u64, v: u32) -> Result<(), String> {
        self.accesses += 1;
        self.inner.write32(o, v)
    }
    fn write32_posted(&mut self, o: u64, v: u32) -> Result<(), String> {
        self.accesses += 1;
        self.inner.write32_posted(o, v)
    }
    fn flush(&mut self) -> Result<(), String> {
        self.inner.flush()
    }
    fn read_block(&mut self, o: u64, out: &mut [u32]) -> Result<(), String> {
        self.accesses += 1;
        self.inner.read_block(o, out)
    }
    fn write_block(&mut self, o: u64, d: &[u32]) -> Result<(), String> {
        self.accesses += 1;
        self.inner.write_block(o, d)
    }
}

/// Any delay source.
struct DynDelay(Box<dyn DelayNs>);

impl DelayNs for DynDelay {
    fn delay_ns(&mut self, ns: u32) {
        self.0.delay_ns(ns)
    }
}

/// Wall-clock delay for hardware.
struct SleepDelay;

impl DelayNs for SleepDelay {
    fn delay_ns(&mut self, ns: u32) {
        std::thread::sleep(Duration::from_nanos(ns as u64));
    }
}

/// An opened board.
struct Board<'a> {
    mmio: DynMmio<'a>,
    emulated: Option<SharedModel<Navi31Bar5>>,
    usb: Option<EmuHandle>,
}

impl Board<'_> {
    /// A polling delay: emulated time on the emulator, sleeping on hardware.
    fn delay(&self) -> DynDelay {
        match &self.emulated {
            Some(s) => DynDelay(Box::new(s.delay())),
            None => DynDelay(Box::new(SleepDelay)),
        }
    }

    fn report(&self, accesses: u64) {
        match &self.usb {
            Some(h) => eprintln!(
                "BAR5 accesses: {accesses}; USB transfers: {}",
                h.counters().transfers()
            ),
            None => eprintln!("BAR5 accesses: {accesses}"),
        }
    }
}

fn emu_config(boot: &str) -> Result<Navi31Config> {
    let mut cfg = Navi31Config::default();
    match boot {
        "stalled" => {}
        "healthy" => cfg.engine = EngineMode::Gated,
        "sos" => {
            cfg.engine = EngineMode::Gated;
            cfg.psp.phase = PspPhase::Sos;
        }
        other => bail!("unknown --emu-boot {other:?} (stalled, healthy, sos)"),
    }
    Ok(cfg)
}

/// Native PCI Navi31 GPUs (vendor 0x1002, device 0x744C) in sysfs, sorted by address.
fn pci_candidates() -> Vec<PathBuf> {
    let Ok(dir) = fs::read_dir("/sys/bus/pci/devices") else {
        return Vec::new();
    };
    let read_id = |p: &Path, f: &str| {
        fs::read_to_string(p.join(f))
            .ok()
            .and_then(|s| u32::from_str_radix(s.trim().trim_start_matches("0x"), 16).ok())
    };
    let mut v: Vec<PathBuf> = dir
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| read_id(p, "vendor") == Some(0x1002) && read_id(p, "device") == Some(0x744C))
        .collect();
    v.sort();
    v
}

fn usb_candidates() -> usize {
    host::list_bridges().map(|l| l.len()).unwrap_or(0)
}

/// Open the selected board and run `f` on it.
fn with_board<R>(cli: &Cli, f: impl FnOnce(&mut Board<'_>) -> Result<R>) -> Result<R> {
    if let Some(path) = cli.transport.strip_prefix("emu-direct:") {
        let shared = open_emu(cli, path)?;
        eprintln!(
            "transport: emulator, direct BAR5 model (native-PCI-like; board state {}); the flash is EMULATED, backed by {path} (writes persist to that file)",
            cli.emu_boot
        );
        let mut b = Board {
            mmio: DynMmio::new(DirectMmio::new(shared.clone())),
            emulated: Some(shared),
            usb: None,
        };
        return finish(&mut b, f);
    }
    if let Some(path) = cli.transport.strip_prefix("emu:") {
        let shared = open_emu(cli, path)?;
        let emu = BridgeEmulator::builder()
            .gpu_bar(5, Box::new(shared.clone()))
            .build();
        let handle = emu.handle();
        let session = Session::from_emulator(emu);
        let mut dev = PciDevice::open(session.bridge).map_err(fe)?;
        check_navi31(&mut dev)?;
        eprintln!(
            "transport: emulator, ASM24 bridge emulator + BAR5 model (board state {}); the flash is EMULATED, backed by {path} (writes persist to that file)",
            cli.emu_boot
        );
        let mmio = dev.bar_mmio(5).map_err(fe)?;
        let mut b = Board {
            mmio: DynMmio::new(mmio),
            emulated: Some(shared),
            usb: Some(handle),
        };
        return finish(&mut b, f);
    }
    let (usb, pci) = match cli.transport.as_str() {
        "auto" => (usb_candidates(), pci_candidates()),
        "usb" => (usb_candidates(), Vec::new()),
        "pci" => (0, pci_candidates()),
        other => bail!("unknown transport {other:?} (auto, usb, pci, emu:IMAGE, emu-direct:IMAGE)"),
    };
    if usb + pci.len() == 0 {
        bail!(
            "no supported USB bridge or PCI AMD GPU found (transport {})",
            cli.transport
        );
    }
    if cli.device >= usb + pci.len() {
        bail!(
            "device index {} out of range ({} devices)",
            cli.device,
            usb + pci.len()
        );
    }
    if cli.device < usb {
        let session = Session::open(TransportKind::Usb, Selector::Index(cli.device)).map_err(fe)?;
        let name = session.name();
        let mut dev = PciDevice::open(session.bridge).map_err(fe)?;
        check_navi31(&mut dev)?;
        eprintln!("transport: USB bridge {name} (real hardware)");
        let mmio = dev.bar_mmio(5).map_err(fe)?;
        let mut b = Board {
            mmio: DynMmio::new(mmio),
            emulated: None,
            usb: None,
        };
        return finish(&mut b, f);
    }
    open_pci(&pci[cli.device - usb], f)
}

#[cfg(target_os = "linux")]
fn open_pci<R>(dev: &Path, f: impl FnOnce(&mut Board<'_>) -> Result<R>) -> Result<R> {
    if dev.join("driver").exists() {
        bail!("{} is bound to a kernel driver; unbind it first (this tool never unbinds drivers itself)", dev.display());
    }
    let mmio = MappedMmio::open_path(&dev.join("resource5")).map_err(fe)?;
    eprintln!(
        "transport: native PCI {} BAR5 (real hardware)",
        dev.display()
    );
    let mut b = Board {
        mmio: DynMmio::new(mmio),
        emulated: None,
        usb: None,
    };
    finish(&mut b, f)
}

#[cfg(not(target_os = "linux"))]
fn open_pci<R>(dev: &Path, _f: impl FnOnce(&mut Board<'_>) -> Result<R>) -> Result<R> {
    bail!(
        "native PCI access to {} is only supported on Linux",
        dev.display()
    )
}

fn open_emu(cli: &Cli, path: &str) -> Result<SharedModel<Navi31Bar5>> {
    let model = Navi31Bar5::open_image(Path::new(path), emu_config(&cli.emu_boot)?)
        .map_err(|e| anyhow!(e))?;
    Ok(SharedModel::new(model))
}

fn check_navi31<T: modelrt_hal::usb::UsbTransport>(dev: &mut PciDevice<T>) -> Result<()> {
    let id = dev.config_read(0, 4).map_err(fe)?;
    if id != 0x744C_1002 {
        bail!(
            "no supported AMD GPU behind the bridge (ids {:04x}:{:04x}, need 1002:744c)",
            id & 0xFFFF,
            id >> 16
        );
    }
    Ok(())
}

fn finish<R>(b: &mut Board<'_>, f: impl FnOnce(&mut Board<'_>) -> Result<R>) -> Result<R> {
    let r = f(b);
    let accesses = b.mmio.accesses;
    b.report(accesses);
    if let Some(m) = &b.emulated {
        if let Some(e) = m.lock().flash().io_error() {
            bail!("{e}");
        }
    }
    r
}

/// Library errors (manual `Display`, no_std) as one-line anyhow errors.
fn fe<E: std::fmt::Display>(e: E) -> anyhow::Error {
    anyhow!("{e}")
}

fn parse_num(s: &str) -> Result<u32> {
    let r = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u32::from_str_radix(h, 16),
        None => s.parse(),
    };
    r.map_err(|_| anyhow!("invalid number {s:?}"))
}

fn sha_hex(data: &[u8]) -> String {
    Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn bar(len: u64, what: &str) -> ProgressBar {
    let pb = ProgressBar::new(len);
    if let Ok(style) = ProgressStyle::with_template(
        "{msg} [{bar:40}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
    ) {
        pb.set_style(style);
    }
    pb.set_message(what.to_string());
    pb
}

/// Write `data` to `path` atomically (temp file + rename).
fn save(path: &Path, data: &[u8]) -> Result<()> {
    let tmp = path.with_extension("partial");
    fs::write(&tmp, data).with_context(|| format!("writing {}", tmp.display()))?;
    fs::rename(&tmp, path).with_context(|| format!("renaming to {}", path.display()))?;
    Ok(())
}

type Nor<'b, 'a> = SpiNor<RomSw<&'b mut DynMmio<'a>, DynDelay>, DynDelay>;

fn open_flash<'b, 'a>(cli: &Cli, board: &'b mut Board<'a>) -> Result<Nor<'b, 'a>> {
    let (d1, d2) = (board.delay(), board.delay());
    let cfg = RomSwConfig {
        prescale: cli.prescale,
        ..RomSwConfig::default()
    };
    let engine = RomSw::open(&mut board.mmio, d1, cfg).map_err(fe)?;
    SpiNor::probe(engine, d2).map_err(fe)
}

fn read_range(nor: &mut Nor, addr: u32, out: &mut [u8], what: &str) -> Result<()> {
    let pb = bar(out.len() as u64, what);
    const CHUNK: usize = 0x1_0000;
    for (i, chunk) in out.chunks_mut(CHUNK).enumerate() {
        nor.read(addr + (i * CHUNK) as u32, chunk).map_err(fe)?;
        pb.inc(chunk.len() as u64);
    }
    pb.finish_and_clear();
    Ok(())
}

fn close_flash(mut nor: Nor) -> Result<()> {
    let stats = nor.spi_mut().stats();
    nor.spi_mut().close().map_err(fe)?;
    eprintln!("SPI transactions: {}", stats.transactions);
    Ok(())
}

fn chip_size(nor: &Nor) -> u32 {
    nor.chip().map(|c| c.size).unwrap_or(chips::GD25LQ16E.size)
}

fn cmd_info(cli: &Cli, board: &mut Board) -> Result<()> {
    let mut nor = open_flash(cli, board)?;
    let cap = nor.jedec_capture();
    println!(
        "JEDEC capture: {:02X} {:02X} {:02X} {:02X}",
        cap[0], cap[1], cap[2], cap[3]
    );
    match nor.chip() {
        Some(c) => println!(
            "chip: {} ({} KiB, {} sectors of {} B)",
            c.name,
            c.size / 1024,
            c.sectors(),
            c.sector_size
        ),
        None => println!("chip: unknown (not in the chip table; read-only)"),
    }
    let (sr1, sr2, sr3) = (
        nor.status1().map_err(fe)?,
        nor.status2().map_err(fe)?,
        nor.status3().map_err(fe)?,
    );
    println!("SR1=0x{sr1:02X} SR2=0x{sr2:02X} SR3=0x{sr3:02X}");
    if let Some(c) = nor.chip() {
        let bp = sr1 & c.sr1_bp_mask;
        let cmp = c.sr2_cmp.map(|b| sr2 & b != 0).unwrap_or(false);
        let cmp_text = if cmp {
            "set (array write-protected; write needs --clear-cmp)"
        } else {
            "clear"
        };
        println!("protection: BP=0x{:02X} CMP {cmp_text}", bp >> 2);
    }
    let mut sfdp = [0u8; 23];
    nor.read_sfdp(0, &mut sfdp).map_err(fe)?;
    let hex: Vec<String> = sfdp.iter().map(|b| format!("{b:02X}")).collect();
    let sig = if &sfdp[..4] == b"SFDP" {
        "signature OK"
    } else {
        "no SFDP signature"
    };
    println!("SFDP: {} ({sig})", hex.join(" "));
    close_flash(nor)
}

fn cmd_read(
    cli: &Cli,
    board: &mut Board,
    addr: &str,
    size: &str,
    output: Option<&Path>,
) -> Result<()> {
    let (addr, size) = (parse_num(addr)?, parse_num(size)?);
    let mut nor = open_flash(cli, board)?;
    let total = chip_size(&nor);
    if size == 0 || addr as u64 + size as u64 > total as u64 {
        bail!("range 0x{addr:X}+0x{size:X} is outside the {total}-byte flash");
    }
    let mut buf = vec![0u8; size as usize];
    read_range(&mut nor, addr, &mut buf, "read")?;
    close_flash(nor)?;
    match output {
        Some(p) => {
            save(p, &buf)?;
            println!("wrote {} bytes to {}", buf.len(), p.display());
        }
        None => {
            let mut out = std::io::stdout().lock();
            for (i, line) in buf.chunks(16).enumerate() {
                let hex: Vec<String> = line.iter().map(|b| format!("{b:02x}")).collect();
                writeln!(out, "{:06x}: {}", addr as usize + 16 * i, hex.join(" "))?;
            }
        }
    }
    println!("sha256 {}", sha_hex(&buf));
    Ok(())
}

fn cmd_dump(cli: &Cli, board: &mut Board, file: &Path) -> Result<()> {
    let mut nor = open_flash(cli, board)?;
    let mut buf = vec![0u8; chip_size(&nor) as usize];
    let t = Instant::now();
    read_range(&mut nor, 0, &mut buf, "dump")?;
    close_flash(nor)?;
    save(file, &buf)?;
    println!(
        "dumped {} bytes to {} in {:.1?}; sha256 {}",
        buf.len(),
        file.display(),
        t.elapsed(),
        sha_hex(&buf)
    );
    Ok(())
}

fn load_image(path: &Path, size: u32) -> Result<Vec<u8>> {
    let img = fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    if img.len() != size as usize {
        bail!(
            "image {} is {} bytes, the flash is exactly {size} bytes",
            path.display(),
            img.len()
        );
    }
    Ok(img)
}

fn cmd_verify(cli: &Cli, board: &mut Board, file: &Path) -> Result<()> {
    let img = load_image(file, chips::GD25LQ16E.size)?;
    let mut nor = open_flash(cli, board)?;
    if chip_size(&nor) as usize != img.len() {
        bail!(
            "image size does not match the {}-byte flash",
            chip_size(&nor)
        );
    }
    let mut buf = vec![0u8; img.len()];
    read_range(&mut nor, 0, &mut buf, "verify")?;
    close_flash(nor)?;
    if let Some(i) = (0..img.len()).find(|&i| buf[i] != img[i]) {
        bail!(
            "verify mismatch at 0x{i:06X}: flash={:02x} image={:02x}",
            buf[i],
            img[i]
        );
    }
    println!("verify OK; sha256 {}", sha_hex(&buf));
    Ok(())
}

fn backup_path(dir: &Path, data: &[u8]) -> PathBuf {
    dir.join(format!("gpuflash-backup-{}.bin", &sha_hex(data)[..16]))
}

fn say(pb: &ProgressBar, line: String) {
    if pb.is_hidden() {
        println!("{line}");
    } else {
        pb.println(line);
    }
}

fn cmd_write(cli: &Cli, board: &mut Board, a: &WriteArgs) -> Result<()> {
    if !a.yes {
        bail!("refusing to write without --yes");
    }
    let img = load_image(&a.file, chips::GD25LQ16E.size)?;
    let mut nor = open_flash(cli, board)?;
    if nor.chip().is_none() {
        bail!(
            "unknown flash chip (JEDEC capture {:02X?}); refusing to write",
            nor.jedec_capture()
        );
    }
    if chip_size(&nor) as usize != img.len() {
        bail!(
            "image size does not match the {}-byte flash",
            chip_size(&nor)
        );
    }
    let t = Instant::now();
    let backup = if a.no_backup {
        println!("no backup taken (--no-backup)");
        None
    } else {
        let mut cur = vec![0u8; img.len()];
        read_range(&mut nor, 0, &mut cur, "backup")?;
        let p = backup_path(&a.backup_dir, &cur);
        if p.exists() && fs::read(&p).map(|d| d == cur).unwrap_or(false) {
            println!(
                "backup already present: {} (sha256 {})",
                p.display(),
                sha_hex(&cur)
            );
        } else {
            save(&p, &cur)?;
            println!("backup: {} (sha256 {})", p.display(), sha_hex(&cur));
        }
        Some(cur)
    };
    let opts = WriteOptions {
        start_sector: a.start_sector,
        sector_count: a.sector_count,
        clear_cmp: a.clear_cmp,
    };
    let total = chip_size(&nor) / chips::GD25LQ16E.sector_size;
    let pb = ProgressBar::new(
        a.sector_count
            .unwrap_or(total.saturating_sub(a.start_sector)) as u64,
    );
    if let Ok(style) = ProgressStyle::with_template("write [{bar:40}] sector {pos}/{len} {msg}") {
        pb.set_style(style);
    }
    let result = write_image(&mut nor, &img, backup.as_deref(), &opts, |ev| {
        pb.inc(1);
        match ev {
            SectorEvent::Skipped { sector } => pb.set_message(format!("{sector:3} unchanged")),
            SectorEvent::Written { sector, .. } => say(
                &pb,
                format!(
                    "OK sector {sector:03}/{} @0x{:06X} elapsed={:.1?}",
                    total - 1,
                    sector * 0x1000,
                    t.elapsed()
                ),
            ),
        }
    });
    pb.finish_and_clear();
    let summary = match result {
        Ok(s) => s,
        Err(e) => {
            let _ = nor.spi_mut().close();
            bail!("{e} (re-run the same write to resume; identical sectors are skipped)");
        }
    };
    close_flash(nor)?;
    println!(
        "write done: {} sectors checked, {} written, {} unchanged, {} pages programmed{}; image sha256 {}; {:.1?}",
        summary.sectors,
        summary.written,
        summary.skipped,
        summary.pages,
        if summary.cleared_cmp { ", CMP cleared" } else { "" },
        sha_hex(&img),
        t.elapsed()
    );
    Ok(())
}

fn show_reply(name: &str, r: &Reply) {
    if r.error == 0 {
        println!("{name:<20} ok        response=0x{:08X}", r.response);
    } else {
        println!(
            "{name:<20} error=0x{:02X} ({}) response=0x{:08X}",
            r.error,
            error_text(r.error),
            r.response
        );
    }
}

fn cmd_psp_probe(board: &mut Board) -> Result<()> {
    let delay = board.delay();
    let mut mb = Mailbox::new(&mut board.mmio, delay);
    let p = mb.probe().map_err(fe)?;
    show_reply("GET_BOOT_PARTITION", &p.boot_partition);
    show_reply("GET_FB_STATE", &p.fb_state);
    show_reply("SPI_GET_MODEL_ID", &p.spi_model_id);
    show_reply("GET_TRANSFER_TYPE", &p.transfer_type);
    if p.transfer_type.error == ERR_PARTITION_UPDATE {
        println!("hint: update commands gated: reset card and do not initialize AMDev/SOS");
    } else if p.transfer_type.error == 0 {
        let v = p.transfer_type.response;
        println!("PSP requests item 0x{:02X} in phase {}", v & 0xFF, v >> 8);
    }
    Ok(())
}

fn cmd_psp_ifwi_all(board: &mut Board, file: &Path, yes: bool) -> Result<()> {
    if !yes {
        bail!("refusing to stream firmware without --yes");
    }
    let img = load_image(file, 0x20_0000)?;
    let emulated = board.emulated.is_some();
    let delay = board.delay();
    let mut mb = Mailbox::new(&mut board.mmio, delay);
    let pb = bar(0, "item");
    let items = mb.ifwi_all(&img, |ev| match ev {
        StreamEvent::Item { item, phase, len } => {
            say(
                &pb,
                format!("streaming item 0x{item:02X} (phase {phase}, {len} bytes)"),
            );
            pb.set_length(len as u64);
            pb.set_position(0);
        }
        StreamEvent::Bytes { sent } => pb.set_position(sent as u64),
    });
    pb.finish_and_clear();
    let items = items.map_err(fe)?;
    println!(
        "streamed {} items; image sha256 {}",
        items.len(),
        sha_hex(&img)
    );
    println!("PSP reported the final phase: a hard power cycle is required");
    if emulated {
        println!("note: the emulator records the streamed items; it does not reproduce the PSP's partition rewrite");
    }
    Ok(())
}

fn cmd_rom_dump(board: &mut Board, file: &Path) -> Result<()> {
    let mut buf = vec![0u8; aperture::DUMP_SIZE];
    let pb = bar(buf.len() as u64, "rom dump");
    let r = aperture::dump(&mut board.mmio, &mut buf, |n| pb.set_position(n as u64));
    pb.finish_and_clear();
    r.map_err(fe)?;
    save(file, &buf)?;
    println!(
        "ROM aperture dump: {} bytes to {}; sha256 {}",
        buf.len(),
        file.display(),
        sha_hex(&buf)
    );
    Ok(())
}

fn run(cli: &Cli) -> Result<()> {
    if cli.prescale > 15 {
        bail!("--prescale must be 0..15");
    }
    // Validate write arguments before touching the device.
    if let Cmd::Write(a) = &cli.cmd {
        if !a.yes {
            bail!("refusing to write without --yes");
        }
        load_image(&a.file, chips::GD25LQ16E.size)?;
    }
    with_board(cli, |board| match &cli.cmd {
        Cmd::Info => cmd_info(cli, board),
        Cmd::Read { addr, size, output } => cmd_read(cli, board, addr, size, output.as_deref()),
        Cmd::Dump { file } => cmd_dump(cli, board, file),
        Cmd::Verify { file } => cmd_verify(cli, board, file),
        Cmd::Write(a) => cmd_write(cli, board, a),
        Cmd::Psp { cmd: PspCmd::Probe } => cmd_psp_probe(board),
        Cmd::Psp {
            cmd: PspCmd::IfwiAll { file, yes },
        } => cmd_psp_ifwi_all(board, file, *yes),
        Cmd::Rom {
            cmd: RomCmd::Dump { file },
        } => cmd_rom_dump(board, file),
    })
}

fn main() {
    let cli = Cli::parse();
    if let Err(e) = run(&cli) {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}
