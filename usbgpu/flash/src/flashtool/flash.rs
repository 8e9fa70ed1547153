//! The SPI-flash commands over the ROM_SW engine: identify, read, dump, verify, and the safe write
//! (full backup first, unchanged sectors skipped, every written sector verified, resumable by range).
//! Each takes an options struct and reports progress through a [`FlashEvent`] callback.
use std::path::{Path, PathBuf};

use crate::navi31::chips::{self, ChipInfo};
use crate::navi31::romsw::{RomSw, RomSwConfig};
use crate::navi31::spi_nor::SpiNor;
use crate::navi31::writer::{write_image, WriteOptions, WriteSummary};

use super::erased::{Bar5, BoardDelay};
use super::{sha256_hex, Board, FlashEvent, FlashToolError, Unit};

/// The flash behind a board's ROM_SW engine.
pub type Flash<'b> = SpiNor<RomSw<Bar5<'b>, BoardDelay>, BoardDelay>;

/// Bytes per read request (progress granularity).
const READ_CHUNK: usize = 0x1_0000;

/// Options every SPI-flash command shares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlashOptions {
    /// SPI clock prescaler 0..=15 (ROM_CNTL bits 27:24).
    pub prescale: u8,
}

impl Default for FlashOptions {
    fn default() -> Self {
        FlashOptions {
            prescale: RomSwConfig::default().prescale,
        }
    }
}

/// What `info` found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlashInfo {
    /// The four bytes captured after RDID (0x9F).
    pub jedec: [u8; 4],
    /// The chip, if it is in the chip table.
    pub chip: Option<&'static ChipInfo>,
    /// Status registers 1, 2 and 3.
    pub status: [u8; 3],
    /// The first 23 bytes of the SFDP table.
    pub sfdp: [u8; 23],
    /// SPI transactions the command took.
    pub spi_transactions: u64,
}

impl FlashInfo {
    /// SR1 block-protect bits (BP0.., shifted down), for a known chip.
    pub fn block_protect(&self) -> Option<u8> {
        self.chip.map(|c| (self.status[0] & c.sr1_bp_mask) >> 2)
    }

    /// Whether SR2.CMP (array write-protected) is set, for a known chip.
    pub fn cmp(&self) -> Option<bool> {
        self.chip
            .map(|c| c.sr2_cmp.is_some_and(|b| self.status[1] & b != 0))
    }

    /// Whether the SFDP table starts with its signature.
    pub fn sfdp_signature_ok(&self) -> bool {
        &self.sfdp[..4] == b"SFDP"
    }
}

/// Bytes read from the flash.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadData {
    /// The bytes.
    pub data: Vec<u8>,
    /// SPI transactions the command took.
    pub spi_transactions: u64,
}

/// `read`: a byte range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadOptions {
    /// Flash access.
    pub flash: FlashOptions,
    /// Start address.
    pub addr: u32,
    /// Byte count (at least 1, within the chip).
    pub size: u32,
}

/// `write`: what to write where, and the backup.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteRequest {
    /// Flash access.
    pub flash: FlashOptions,
    /// Sector range and CMP handling.
    pub range: WriteOptions,
    /// Directory for the full backup taken first; `None` = no backup.
    pub backup_dir: Option<PathBuf>,
}

/// The backup a write took before changing anything.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BackupOutcome {
    /// None was asked for.
    NotTaken,
    /// A file with the same content (same name) already existed.
    AlreadyPresent { path: PathBuf, sha256: String },
    /// Saved now.
    Saved { path: PathBuf, sha256: String },
}

/// What a write did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteReport {
    /// The backup taken first.
    pub backup: BackupOutcome,
    /// Sector totals.
    pub summary: WriteSummary,
    /// SPI transactions the command took.
    pub spi_transactions: u64,
}

/// Open the ROM_SW engine on `board` and probe the flash.
pub fn open<'b>(board: &'b mut Board, opts: &FlashOptions) -> Result<Flash<'b>, FlashToolError> {
    let (d1, d2) = (board.delay(), board.delay());
    let cfg = RomSwConfig {
        prescale: opts.prescale,
        ..RomSwConfig::default()
    };
    let engine = RomSw::open(board.bar5()?, d1, cfg).map_err(FlashToolError::device)?;
    SpiNor::probe(engine, d2).map_err(FlashToolError::device)
}

/// Restore the engine's registers; returns the SPI transactions the session took.
pub fn close(mut flash: Flash<'_>) -> Result<u64, FlashToolError> {
    let stats = flash.spi_mut().stats();
    flash.spi_mut().close().map_err(FlashToolError::device)?;
    Ok(stats.transactions)
}

/// The probed chip's size (the GD25LQ16E's for an unknown chip, which is only read).
pub fn chip_size(flash: &Flash<'_>) -> u32 {
    flash
        .chip()
        .map(|c| c.size)
        .unwrap_or(chips::GD25LQ16E.size)
}

/// Read `out.len()` bytes at `addr` in chunks, as one progress phase named `what`.
fn read_range(
    flash: &mut Flash<'_>,
    addr: u32,
    out: &mut [u8],
    what: &'static str,
    progress: &mut dyn FnMut(FlashEvent),
) -> Result<(), FlashToolError> {
    progress(FlashEvent::Start {
        what,
        unit: Unit::Bytes,
        total: out.len() as u64,
    });
    let mut done = 0u64;
    for (i, chunk) in out.chunks_mut(READ_CHUNK).enumerate() {
        let r = flash.read(addr + (i * READ_CHUNK) as u32, chunk);
        if let Err(e) = r {
            progress(FlashEvent::Finish);
            return Err(FlashToolError::device(e));
        }
        done += chunk.len() as u64;
        progress(FlashEvent::Position(done));
    }
    progress(FlashEvent::Finish);
    Ok(())
}

/// Identify the flash: JEDEC id, status registers, SFDP signature.
pub fn info(board: &mut Board, opts: &FlashOptions) -> Result<FlashInfo, FlashToolError> {
    let mut flash = open(board, opts)?;
    let status = [
        flash.status1().map_err(FlashToolError::device)?,
        flash.status2().map_err(FlashToolError::device)?,
        flash.status3().map_err(FlashToolError::device)?,
    ];
    let mut sfdp = [0u8; 23];
    flash
        .read_sfdp(0, &mut sfdp)
        .map_err(FlashToolError::device)?;
    let (jedec, chip) = (flash.jedec_capture(), flash.chip());
    Ok(FlashInfo {
        jedec,
        chip,
        status,
        sfdp,
        spi_transactions: close(flash)?,
    })
}

/// Open the flash, read `range` (address, size; `None` = the whole chip) as phase `what`, close.
fn read_session(
    board: &mut Board,
    opts: &FlashOptions,
    range: Option<(u32, u32)>,
    what: &'static str,
    progress: &mut dyn FnMut(FlashEvent),
) -> Result<ReadData, FlashToolError> {
    let mut flash = open(board, opts)?;
    let total = chip_size(&flash);
    let (addr, size) = range.unwrap_or((0, total));
    if size == 0 || addr as u64 + size as u64 > total as u64 {
        return Err(FlashToolError::OutOfRange { addr, size, total });
    }
    let mut data = vec![0u8; size as usize];
    read_range(&mut flash, addr, &mut data, what, progress)?;
    Ok(ReadData {
        data,
        spi_transactions: close(flash)?,
    })
}

/// Read a byte range.
pub fn read(
    board: &mut Board,
    opts: &ReadOptions,
    progress: &mut dyn FnMut(FlashEvent),
) -> Result<ReadData, FlashToolError> {
    read_session(
        board,
        &opts.flash,
        Some((opts.addr, opts.size)),
        "read",
        progress,
    )
}

/// Read the whole chip.
pub fn dump(
    board: &mut Board,
    opts: &FlashOptions,
    progress: &mut dyn FnMut(FlashEvent),
) -> Result<ReadData, FlashToolError> {
    read_session(board, opts, None, "dump", progress)
}

/// Compare the whole chip with `image`; [`FlashToolError::Mismatch`] names the first difference.
pub fn verify(
    board: &mut Board,
    opts: &FlashOptions,
    image: &[u8],
    progress: &mut dyn FnMut(FlashEvent),
) -> Result<ReadData, FlashToolError> {
    let mut flash = open(board, opts)?;
    let size = chip_size(&flash);
    if size as usize != image.len() {
        return Err(FlashToolError::ChipSize(size));
    }
    let mut data = vec![0u8; image.len()];
    read_range(&mut flash, 0, &mut data, "verify", progress)?;
    let spi_transactions = close(flash)?;
    if let Some(addr) = (0..image.len()).find(|&i| data[i] != image[i]) {
        return Err(FlashToolError::Mismatch {
            addr,
            flash: data[addr],
            image: image[addr],
        });
    }
    Ok(ReadData {
        data,
        spi_transactions,
    })
}

/// Write `image` (the whole chip's worth) as `req` says: backup, then skip/erase/program/verify
/// sector by sector. The backup is reported as a [`FlashEvent`] before any sector is touched.
pub fn write(
    board: &mut Board,
    req: &WriteRequest,
    image: &[u8],
    mut on_backup: impl FnMut(&BackupOutcome),
    progress: &mut dyn FnMut(FlashEvent),
) -> Result<WriteReport, FlashToolError> {
    let mut flash = open(board, &req.flash)?;
    if flash.chip().is_none() {
        return Err(FlashToolError::UnknownChip(flash.jedec_capture()));
    }
    let size = chip_size(&flash);
    if size as usize != image.len() {
        return Err(FlashToolError::ChipSize(size));
    }
    let (backup, known) = match &req.backup_dir {
        None => (BackupOutcome::NotTaken, None),
        Some(dir) => {
            let mut cur = vec![0u8; image.len()];
            read_range(&mut flash, 0, &mut cur, "backup", progress)?;
            (save_backup(dir, &cur)?, Some(cur))
        }
    };
    on_backup(&backup);
    let sectors = size / chips::GD25LQ16E.sector_size;
    progress(FlashEvent::Start {
        what: "write",
        unit: Unit::Sectors,
        total: req
            .range
            .sector_count
            .unwrap_or(sectors.saturating_sub(req.range.start_sector)) as u64,
    });
    let result = write_image(&mut flash, image, known.as_deref(), &req.range, |ev| {
        progress(FlashEvent::Sector(ev))
    });
    progress(FlashEvent::Finish);
    let summary = match result {
        Ok(s) => s,
        Err(e) => {
            let _ = flash.spi_mut().close();
            return Err(FlashToolError::WriteStopped(e.to_string()));
        }
    };
    Ok(WriteReport {
        backup,
        summary,
        spi_transactions: close(flash)?,
    })
}

/// The backup file for flash content `data`: named by its hash, so it is never overwritten by a
/// different content.
pub fn backup_path(dir: &Path, data: &[u8]) -> PathBuf {
    dir.join(format!("gpuflash-backup-{}.bin", &sha256_hex(data)[..16]))
}

fn save_backup(dir: &Path, data: &[u8]) -> Result<BackupOutcome, FlashToolError> {
    let path = backup_path(dir, data);
    let sha256 = sha256_hex(data);
    if std::fs::read(&path).is_ok_and(|d| d == data) {
        return Ok(BackupOutcome::AlreadyPresent { path, sha256 });
    }
    save(&path, data)?;
    Ok(BackupOutcome::Saved { path, sha256 })
}

/// Read an image file that must be exactly `size` bytes.
pub fn load_image(path: &Path, size: u32) -> Result<Vec<u8>, FlashToolError> {
    let img = std::fs::read(path).map_err(|source| FlashToolError::Io {
        what: "reading",
        path: path.to_path_buf(),
        source,
    })?;
    if img.len() != size as usize {
        return Err(FlashToolError::ImageSize {
            path: path.to_path_buf(),
            len: img.len(),
            size,
        });
    }
    Ok(img)
}

/// Write `data` to `path` atomically (temporary file, then rename).
pub fn save(path: &Path, data: &[u8]) -> Result<(), FlashToolError> {
    let tmp = path.with_extension("partial");
    std::fs::write(&tmp, data).map_err(|source| FlashToolError::Io {
        what: "writing",
        path: tmp.clone(),
        source,
    })?;
    std::fs::rename(&tmp, path).map_err(|source| FlashToolError::Io {
        what: "renaming to",
        path: path.to_path_buf(),
        source,
    })
}
