//! The SPI-flash commands over the ROM_SW engine: identify, read, dump, verify, and the safe write
//! (a full backup first — synced, read back and checked against a second read of the flash before
//! anything is erased —, unchanged sectors skipped only when two reads agree, every written sector
//! verified, then the whole chip read back; resumable by range), and saving files durably without
//! ever sharing a temporary name.
//! Each takes an options struct and reports progress through a [`FlashEvent`] callback.
use std::path::{Path, PathBuf};

use crate::navi31::aperture::{self, ApertureError};
use crate::navi31::chips::{self, ChipInfo};
use crate::navi31::romsw::{RomSw, RomSwConfig};
use crate::navi31::spi_nor::SpiNor;
use crate::navi31::writer::{write_image_until, WriteOptions, WriteSummary};

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
/// sector by sector, then a whole-chip read-back. The backup is saved durably (file and directory
/// synced), read back from the file, and compared with a second read of the flash before the
/// first erase; it is reported through `on_backup` only once it passed. After the sectors, the
/// whole chip is read once more and compared: the range with the image, the rest with the
/// (checked) backup when one was taken.
pub fn write(
    board: &mut Board,
    req: &WriteRequest,
    image: &[u8],
    on_backup: impl FnMut(&BackupOutcome),
    progress: &mut dyn FnMut(FlashEvent),
) -> Result<WriteReport, FlashToolError> {
    write_until(board, req, image, on_backup, progress, &mut || false)
}

/// [`write`] that asks `stop` before each sector (Ctrl-C in `gpuflash`): when it says so, the write
/// ends between two sectors, the sectors processed so far are read back and compared with the
/// image, and [`WriteSummary::stopped_at`] in the report names the first sector not yet written.
pub fn write_until(
    board: &mut Board,
    req: &WriteRequest,
    image: &[u8],
    mut on_backup: impl FnMut(&BackupOutcome),
    progress: &mut dyn FnMut(FlashEvent),
    stop: &mut dyn FnMut() -> bool,
) -> Result<WriteReport, FlashToolError> {
    let mut flash = open(board, &req.flash)?;
    if flash.chip().is_none() {
        return Err(FlashToolError::UnknownChip(flash.jedec_capture()));
    }
    let size = chip_size(&flash);
    if size as usize != image.len() {
        return Err(FlashToolError::ChipSize(size));
    }
    let abort = |mut flash: Flash<'_>, e: FlashToolError| {
        let _ = flash.spi_mut().close();
        Err(e)
    };
    let (backup, known) = match &req.backup_dir {
        None => (BackupOutcome::NotTaken, None),
        Some(dir) => match take_backup(&mut flash, dir, image.len(), progress) {
            Ok(b) => b,
            Err(e) => return abort(flash, e),
        },
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
    let result = write_image_until(
        &mut flash,
        image,
        known.as_deref(),
        &req.range,
        |ev| progress(FlashEvent::Sector(ev)),
        &mut *stop,
    );
    progress(FlashEvent::Finish);
    let summary = match result {
        Ok(s) => s,
        Err(e) => return abort(flash, FlashToolError::WriteStopped(e.to_string())),
    };
    let ss = chips::GD25LQ16E.sector_size as usize;
    if let Some(next) = summary.stopped_at {
        // Stopped early: the sectors processed so far must equal the image; the rest is untouched.
        let (from, to) = (req.range.start_sector as usize * ss, next as usize * ss);
        let mut back = vec![0u8; to - from];
        if let Err(e) = read_range(&mut flash, from as u32, &mut back, "verify", progress) {
            let e = FlashToolError::WriteStopped(format!("read-back after the write: {e}"));
            return abort(flash, e);
        }
        if let Some(i) = first_difference(&back, &image[from..to]) {
            let addr = from + i;
            let e = FlashToolError::ReadBackMismatch {
                sector: (addr / ss) as u32,
                addr,
                flash: back[i],
                want: image[addr],
                backup: backup_file(&backup),
            };
            return abort(flash, e);
        }
        return Ok(WriteReport {
            backup,
            summary,
            spi_transactions: close(flash)?,
        });
    }
    // The final whole-chip compare: every sector, skipped ones included, read back once more.
    let mut back = vec![0u8; image.len()];
    if let Err(e) = read_range(&mut flash, 0, &mut back, "verify", progress) {
        let e = FlashToolError::WriteStopped(format!("read-back after the write: {e}"));
        return abort(flash, e);
    }
    let start = req.range.start_sector as usize * ss;
    let end = req
        .range
        .sector_count
        .map_or(image.len(), |c| start + c as usize * ss);
    let want = |a: usize| match &known {
        _ if (start..end).contains(&a) => Some(image[a]),
        Some(k) => Some(k[a]),
        None => None,
    };
    if let Some(addr) = (0..image.len()).find(|&a| want(a).is_some_and(|w| back[a] != w)) {
        let e = FlashToolError::ReadBackMismatch {
            sector: (addr / ss) as u32,
            addr,
            flash: back[addr],
            want: want(addr).unwrap_or(back[addr]),
            backup: backup_file(&backup),
        };
        return abort(flash, e);
    }
    Ok(WriteReport {
        backup,
        summary,
        spi_transactions: close(flash)?,
    })
}

/// The backup before a write: read the whole chip, save it durably, re-read the file, read the
/// flash a second time and compare. Returns the outcome and the checked contents.
fn take_backup(
    flash: &mut Flash<'_>,
    dir: &Path,
    len: usize,
    progress: &mut dyn FnMut(FlashEvent),
) -> Result<(BackupOutcome, Option<Vec<u8>>), FlashToolError> {
    let mut cur = vec![0u8; len];
    read_range(flash, 0, &mut cur, "backup", progress)?;
    let outcome = save_backup(dir, &cur)?;
    // Only a checked backup is kept: one saved now is removed if the check fails or cannot run.
    let unverified = |outcome: &BackupOutcome| match outcome {
        BackupOutcome::Saved { path, .. } => remove_durably(path).map(|()| Some(path.clone())),
        _ => Ok(None),
    };
    let mut check = vec![0u8; len];
    if let Err(e) = read_range(flash, 0, &mut check, "backup check", progress) {
        unverified(&outcome)?;
        return Err(e);
    }
    if let Some(addr) = first_difference(&check, &cur) {
        let removed = unverified(&outcome)?;
        return Err(FlashToolError::BackupMismatch {
            addr,
            flash: check[addr],
            backup: cur[addr],
            removed,
        });
    }
    Ok((outcome, Some(cur)))
}

/// The backup file a write can be undone from, if one was taken or found.
fn backup_file(b: &BackupOutcome) -> Option<PathBuf> {
    match b {
        BackupOutcome::Saved { path, .. } | BackupOutcome::AlreadyPresent { path, .. } => {
            Some(path.clone())
        }
        BackupOutcome::NotTaken => None,
    }
}

fn first_difference(a: &[u8], b: &[u8]) -> Option<usize> {
    (0..a.len().min(b.len()))
        .find(|&i| a[i] != b[i])
        .or((a.len() != b.len()).then_some(a.len().min(b.len())))
}

/// The backup file for flash content `data`: named by its hash, so it is never overwritten by a
/// different content.
pub fn backup_path(dir: &Path, data: &[u8]) -> PathBuf {
    dir.join(format!("gpuflash-backup-{}.bin", &sha256_hex(data)[..16]))
}

/// Save `data` as its backup in `dir` (file and directory synced), then read the file back and
/// compare.
fn save_backup(dir: &Path, data: &[u8]) -> Result<BackupOutcome, FlashToolError> {
    let path = backup_path(dir, data);
    let sha256 = sha256_hex(data);
    if std::fs::read(&path).is_ok_and(|d| d == data) {
        // Written by an earlier run (perhaps by a build that did not sync): make it durable now.
        sync_file(&path)?;
        sync_dir(&path)?;
        return Ok(BackupOutcome::AlreadyPresent { path, sha256 });
    }
    save(&path, data)?;
    let back = std::fs::read(&path).map_err(|source| FlashToolError::Io {
        what: "reading back",
        path: path.clone(),
        source,
    })?;
    if let Some(addr) = first_difference(&back, data) {
        return Err(FlashToolError::BackupFile { path, addr });
    }
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

/// Check that `img` (read from `path`) has the Navi31 flash layout the ROM aperture dump is
/// judged by (docs/hw/navi31-spi-flash.md §7): 2 MiB, the IFWI magic `AA 55 AA 55` at offset 0,
/// and two 1 MiB halves that differ.
pub fn check_image(path: &Path, img: &[u8]) -> Result<(), FlashToolError> {
    let reason = match aperture::validate::<core::convert::Infallible>(img) {
        Ok(()) => return Ok(()),
        Err(ApertureError::BadMagic(m)) => format!(
            "offset 0 holds {:02X} {:02X} {:02X} {:02X}, not the IFWI magic AA 55 AA 55",
            m[0], m[1], m[2], m[3]
        ),
        Err(ApertureError::Mirrored) => {
            "its two 1 MiB halves are identical (a mirrored dump)".to_string()
        }
        Err(ApertureError::BufferSize(n)) => format!("it is {n} bytes, not 2 MiB"),
        Err(e) => e.to_string(),
    };
    Err(FlashToolError::NotNavi31Image {
        path: path.to_path_buf(),
        reason,
    })
}

/// Write `data` to `path` durably, replacing it if it exists: a uniquely named temporary file in
/// the same directory (created new, written, synced), renamed over `path`, then the directory
/// synced.
pub fn save(path: &Path, data: &[u8]) -> Result<(), FlashToolError> {
    let tmp = write_temporary(path, data)?;
    if let Err(source) = std::fs::rename(&tmp, path) {
        let _ = std::fs::remove_file(&tmp);
        return Err(FlashToolError::Io {
            what: "renaming to",
            path: path.to_path_buf(),
            source,
        });
    }
    sync_dir(path)
}

/// [`save`], but never replacing an existing file: [`FlashToolError::Exists`] if `path` exists
/// (checked atomically where the file system has hard links).
pub fn save_new(path: &Path, data: &[u8]) -> Result<(), FlashToolError> {
    if path.exists() {
        return Err(FlashToolError::Exists(path.to_path_buf()));
    }
    let tmp = write_temporary(path, data)?;
    let linked = std::fs::hard_link(&tmp, path);
    let result = match linked {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            Err(FlashToolError::Exists(path.to_path_buf()))
        }
        // No hard links here (e.g. FAT): the existence check above has to do.
        Err(_) if !path.exists() => {
            std::fs::rename(&tmp, path).map_err(|source| FlashToolError::Io {
                what: "renaming to",
                path: path.to_path_buf(),
                source,
            })
        }
        Err(_) => Err(FlashToolError::Exists(path.to_path_buf())),
    };
    let _ = std::fs::remove_file(&tmp);
    result?;
    sync_dir(path)
}

/// A new temporary file beside `path` holding `data`, synced: `.NAME.PID-N.partial` (the full
/// file name, the process id and a per-process counter mixed with the clock), created with
/// `create_new` so it is never someone else's file.
fn write_temporary(path: &Path, data: &[u8]) -> Result<PathBuf, FlashToolError> {
    use std::io::Write as _;
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = path.file_name().map_or_else(
        || "gpuflash-output".into(),
        |n| n.to_string_lossy().into_owned(),
    );
    let dir = parent_dir(path);
    let clock = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos() as u64);
    let mut last = None;
    for _ in 0..16 {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let tmp = dir.join(format!(
            ".{name}.{}-{:x}.partial",
            std::process::id(),
            clock ^ (n << 32) ^ n
        ));
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp);
        let mut f = match file {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                last = Some(e);
                continue;
            }
            Err(source) => {
                return Err(FlashToolError::Io {
                    what: "creating",
                    path: tmp,
                    source,
                })
            }
        };
        if let Err(source) = f.write_all(data).and_then(|()| f.sync_all()) {
            drop(f);
            let _ = std::fs::remove_file(&tmp);
            return Err(FlashToolError::Io {
                what: "writing",
                path: tmp,
                source,
            });
        }
        return Ok(tmp);
    }
    Err(FlashToolError::Io {
        what: "creating a temporary file beside",
        path: path.to_path_buf(),
        source: last.unwrap_or_else(|| std::io::Error::other("no free temporary name")),
    })
}

fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// `fsync` the file at `path`.
fn sync_file(path: &Path) -> Result<(), FlashToolError> {
    std::fs::File::open(path)
        .and_then(|f| f.sync_all())
        .map_err(|source| FlashToolError::Io {
            what: "syncing",
            path: path.to_path_buf(),
            source,
        })
}

/// `fsync` the directory holding `path`, so a rename or removal in it survives a crash (a file
/// system that cannot sync directories is accepted).
fn sync_dir(path: &Path) -> Result<(), FlashToolError> {
    let dir = parent_dir(path);
    match std::fs::File::open(dir).and_then(|f| f.sync_all()) {
        Ok(()) => Ok(()),
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::InvalidInput | std::io::ErrorKind::Unsupported
            ) =>
        {
            Ok(())
        }
        Err(source) => Err(FlashToolError::Io {
            what: "syncing the directory",
            path: dir.to_path_buf(),
            source,
        }),
    }
}

/// Remove the file at `path` and sync its directory.
fn remove_durably(path: &Path) -> Result<(), FlashToolError> {
    std::fs::remove_file(path).map_err(|source| FlashToolError::Io {
        what: "removing",
        path: path.to_path_buf(),
        source,
    })?;
    sync_dir(path)
}
