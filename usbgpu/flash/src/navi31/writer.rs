//! Verified, resumable image writer (docs/hw/navi31-spi-flash.md §6 "flash", §10), flashrom-style: sectors already equal
//! to the image are skipped — a skip needs two reads that agree (the known contents or a first
//! read, then a read of the sector itself), so one bad read never leaves a sector unwritten; each
//! changed sector is erased, its non-0xFF pages programmed, and the whole sector read back and
//! compared before the next one; the first mismatch stops the run with its address. Because unchanged sectors are skipped, re-running the same write after an
//! interruption (power loss, unplug) is the resume path: it redoes exactly the sectors that are
//! not yet correct. A sector range limits the work explicitly. A stop request (Ctrl-C in
//! `gpuflash`) is honoured only between sectors, so it never leaves a half-programmed one.
use modelrt_hal::embedded_hal::delay::DelayNs;
use modelrt_hal::embedded_hal::spi::SpiDevice;

use super::chips::CHIPS;
use super::spi_nor::{FlashError, SpiNor};

/// Largest sector the writer handles (stack buffer size).
pub const MAX_SECTOR: usize = 0x1000;

// Every chip in the table fits the writer's sector buffer (checked at compile time).
const _: () = {
    let mut i = 0;
    while i < CHIPS.len() {
        assert!(CHIPS[i].sector_size as usize <= MAX_SECTOR);
        i += 1;
    }
};

/// What to write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteOptions {
    /// First sector to consider.
    pub start_sector: u32,
    /// Number of sectors; `None` = to the end of the chip.
    pub sector_count: Option<u32>,
    /// Clear SR2.CMP if it is set (explicit user authorization).
    pub clear_cmp: bool,
}

/// Per-sector progress.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SectorEvent {
    /// Already identical, untouched.
    Skipped { sector: u32 },
    /// Erased, programmed (`pages` non-blank pages) and verified.
    Written { sector: u32, pages: u32 },
}

/// Totals of a write.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WriteSummary {
    /// Sectors considered.
    pub sectors: u32,
    /// Sectors skipped because they already matched.
    pub skipped: u32,
    /// Sectors erased, programmed and verified.
    pub written: u32,
    /// Pages programmed.
    pub pages: u32,
    /// Whether CMP was cleared.
    pub cleared_cmp: bool,
    /// Set when the caller's stop request ended the write early: the first sector of the range not
    /// yet processed (every sector before it is verified, it and those after are untouched).
    pub stopped_at: Option<u32>,
}

/// Write failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteError<E> {
    /// Flash/transport error, with the sector being processed when known.
    Flash {
        sector: Option<u32>,
        error: FlashError<E>,
    },
    /// Image size differs from the chip size.
    ImageSize { expected: u32, actual: usize },
    /// Sector range outside the chip.
    BadRange {
        start: u32,
        count: Option<u32>,
        sectors: u32,
    },
    /// Read-back differs from the image.
    VerifyMismatch { address: u32, flash: u8, image: u8 },
}

impl<E: core::fmt::Display> core::fmt::Display for WriteError<E> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            WriteError::Flash {
                sector: Some(s),
                error,
            } => write!(f, "sector {s}: {error}"),
            WriteError::Flash {
                sector: None,
                error,
            } => write!(f, "{error}"),
            WriteError::ImageSize { expected, actual } => {
                write!(
                    f,
                    "image is {actual} bytes, the flash is {expected} bytes; refusing to write"
                )
            }
            WriteError::BadRange {
                start,
                count,
                sectors,
            } => {
                write!(f, "sector range start={start} count=")?;
                match count {
                    Some(c) => write!(f, "{c}")?,
                    None => write!(f, "rest")?,
                }
                write!(f, " is outside 0..{sectors}")
            }
            WriteError::VerifyMismatch {
                address,
                flash,
                image,
            } => write!(
                f,
                "verify mismatch at 0x{address:06X}: flash={flash:02x} image={image:02x}"
            ),
        }
    }
}

/// Validate a sector range; returns `(start, count)`.
pub fn sector_range<E>(opts: &WriteOptions, sectors: u32) -> Result<(u32, u32), WriteError<E>> {
    let bad = WriteError::BadRange {
        start: opts.start_sector,
        count: opts.sector_count,
        sectors,
    };
    if opts.start_sector >= sectors {
        return Err(bad);
    }
    let count = opts.sector_count.unwrap_or(sectors - opts.start_sector);
    if count == 0 || count > sectors - opts.start_sector {
        return Err(bad);
    }
    Ok((opts.start_sector, count))
}

/// Write `image` over the selected sector range. `known` may hold the flash contents read in this
/// same session (e.g. the backup just taken) to avoid reading each changed sector before erasing
/// it; a sector `known` calls unchanged is still read once and compared before it is skipped.
pub fn write_image<S: SpiDevice, D: DelayNs>(
    flash: &mut SpiNor<S, D>,
    image: &[u8],
    known: Option<&[u8]>,
    opts: &WriteOptions,
    progress: impl FnMut(SectorEvent),
) -> Result<WriteSummary, WriteError<S::Error>> {
    write_image_until(flash, image, known, opts, progress, || false)
}

/// [`write_image`] that asks `stop` before each sector and, when it says so, ends between two
/// sectors — never inside one — with [`WriteSummary::stopped_at`] naming where to resume.
pub fn write_image_until<S: SpiDevice, D: DelayNs>(
    flash: &mut SpiNor<S, D>,
    image: &[u8],
    known: Option<&[u8]>,
    opts: &WriteOptions,
    mut progress: impl FnMut(SectorEvent),
    mut stop: impl FnMut() -> bool,
) -> Result<WriteSummary, WriteError<S::Error>> {
    let fe = |sector: Option<u32>| move |error| WriteError::Flash { sector, error };
    let chip = flash.chip().ok_or(WriteError::Flash {
        sector: None,
        error: FlashError::UnknownChip {
            capture: flash.jedec_capture(),
        },
    })?;
    if image.len() != chip.size as usize {
        return Err(WriteError::ImageSize {
            expected: chip.size,
            actual: image.len(),
        });
    }
    let (start, count) = sector_range(opts, chip.sectors())?;
    let mut summary = WriteSummary {
        sectors: count,
        ..WriteSummary::default()
    };
    if flash.cmp_set().map_err(fe(None))? {
        if !opts.clear_cmp {
            return Err(WriteError::Flash {
                sector: None,
                error: FlashError::CmpSet,
            });
        }
        flash.clear_cmp().map_err(fe(None))?;
        summary.cleared_cmp = true;
    }
    let ss = chip.sector_size as usize;
    let ps = chip.page_size as usize;
    let mut buf = [0u8; MAX_SECTOR];
    let cur = &mut buf[..ss];
    for sector in start..start + count {
        if stop() {
            summary.stopped_at = Some(sector);
            return Ok(summary);
        }
        let base = sector as usize * ss;
        let want = &image[base..base + ss];
        let mut same = match known.and_then(|k| k.get(base..base + ss)) {
            Some(k) => k == want,
            None => {
                flash.read(base as u32, cur).map_err(fe(Some(sector)))?;
                cur == want
            }
        };
        if same {
            // A skip is never decided by one read: the sector is read (again) and must still
            // equal the image, else it is written like a changed one.
            flash.read(base as u32, cur).map_err(fe(Some(sector)))?;
            same = cur == want;
        }
        if same {
            summary.skipped += 1;
            progress(SectorEvent::Skipped { sector });
            continue;
        }
        flash.erase_sector(base as u32).map_err(fe(Some(sector)))?;
        let mut pages = 0;
        for (i, page) in want.chunks(ps).enumerate() {
            if page.iter().all(|&b| b == 0xFF) {
                continue;
            }
            flash
                .program_page((base + i * ps) as u32, page)
                .map_err(fe(Some(sector)))?;
            pages += 1;
        }
        flash.read(base as u32, cur).map_err(fe(Some(sector)))?;
        if let Some(i) = (0..ss).find(|&i| cur[i] != want[i]) {
            return Err(WriteError::VerifyMismatch {
                address: (base + i) as u32,
                flash: cur[i],
                image: want[i],
            });
        }
        summary.written += 1;
        summary.pages += pages;
        progress(SectorEvent::Written { sector, pages });
    }
    Ok(summary)
}
