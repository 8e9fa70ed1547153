//! The copy benchmark behind `modelrt usb copy-bench` (std): host → device and device → host through
//! the bridge SRAM ([`crate::copy`]), reporting time, MB/s and USB transfers per MiB.
//!
//! The GPU's half of each pipeline (draining a copy-in window, filling SRAM and writing the
//! completion-queue dword for copy-out) needs the AMD driver on hardware. On the emulator that half is
//! played by the bridge emulator's handle (GPU-side DMA), which also verifies every byte that landed. On hardware
//! the upload runs without a GPU reader (landing is spot-checked through the XDATA alias of the first
//! SRAM 4 KiB) and the download is skipped with a plain reason. Without the `emu` feature only the
//! hardware path exists.
use crate::copy::{self, DOWNLOAD_CHUNK, WINDOW};
use crate::counting::TransferCounts;
#[cfg(feature = "emu")]
use crate::emu::bridge::{DmaError, EmuHandle};
use crate::session::{Backend, Session};
use crate::{BridgeError, XDATA_SRAM};
#[cfg(feature = "emu")]
use crate::{BUS_CQ_RELEASE, BUS_SRAM};

/// Why the benchmark failed.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error(transparent)]
    Bridge(#[from] BridgeError),
    #[cfg(feature = "emu")]
    #[error("emulated GPU: {0}")]
    Dma(#[from] DmaError),
    #[error("{phase}: data mismatch in the chunk at byte {offset}")]
    Mismatch { phase: &'static str, offset: usize },
    #[error("size must be at least 1 byte")]
    EmptySize,
}

/// One direction of the benchmark.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PhaseReport {
    pub bytes: u64,
    /// Wall-clock (hardware) or emulated (emulator) nanoseconds.
    pub ns: u64,
    pub counts: TransferCounts,
    pub chunks: usize,
}

impl PhaseReport {
    /// Decimal MB/s.
    pub fn mb_per_s(&self) -> f64 {
        if self.ns == 0 {
            return 0.0;
        }
        self.bytes as f64 / 1e6 / (self.ns as f64 / 1e9)
    }

    fn per_mib(&self, n: u64) -> f64 {
        n as f64 / (self.bytes as f64 / (1u64 << 20) as f64)
    }

    /// USB transfers per MiB of payload.
    pub fn transfers_per_mib(&self) -> f64 {
        self.per_mib(self.counts.transfers())
    }

    /// Control transfers per MiB of payload.
    pub fn control_per_mib(&self) -> f64 {
        self.per_mib(self.counts.control())
    }

    /// Fraction of payload bytes that moved on the bulk endpoints.
    pub fn bulk_fraction(&self) -> f64 {
        let bulk = (self.counts.bulk_bytes_out + self.counts.bulk_bytes_in).min(self.bytes);
        bulk as f64 / self.bytes as f64
    }
}

/// Result of [`copy_bench`].
#[derive(Clone, Debug, PartialEq)]
pub struct BenchReport {
    pub emulated: bool,
    pub upload: PhaseReport,
    pub download: Option<PhaseReport>,
    /// Why the download was not run.
    pub download_skipped: Option<&'static str>,
    /// Every byte was checked on the device side (emulator) / spot check of the XDATA alias (hardware).
    pub verification: &'static str,
    /// The caller's progress callback asked to stop (Ctrl-C): the phases hold the bytes copied (and checked) up to
    /// that chunk boundary only.
    pub stopped: bool,
}

/// Which copy a [`copy_bench_with`] progress call is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    Upload,
    Download,
}

/// Why a chunk hook ended a copy early: the caller stopped it, or a real failure.
enum Halt {
    Stop,
    Failed(BenchError),
}

impl From<BridgeError> for Halt {
    fn from(e: BridgeError) -> Self {
        Halt::Failed(e.into())
    }
}

impl From<BenchError> for Halt {
    fn from(e: BenchError) -> Self {
        Halt::Failed(e)
    }
}

/// Deterministic test pattern (xorshift64*).
pub fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        out.extend_from_slice(&x.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes());
    }
    out.truncate(len);
    out
}

/// The GPU side of the copies: the bridge emulator's DMA handle, or nothing (hardware-only build).
#[cfg(feature = "emu")]
type GpuSide = EmuHandle;
/// No emulator in this build: no session has a GPU side.
#[cfg(not(feature = "emu"))]
type GpuSide = core::convert::Infallible;

/// The emulator's GPU side of a session (`None` on hardware).
fn gpu_side(s: &Session) -> Option<GpuSide> {
    match &s.backend {
        #[cfg(feature = "emu")]
        Backend::Emu(h) => Some(h.clone()),
        Backend::Usb(_) => None,
    }
}

#[cfg(not(feature = "emu"))]
fn drain_window(h: &GpuSide, _: &[u8], _: usize) -> Result<(), BenchError> {
    match *h {}
}

#[cfg(not(feature = "emu"))]
fn fill_window(h: &GpuSide, _: &[u8]) -> Result<(), BenchError> {
    match *h {}
}

/// The emulated GPU fills SRAM with `data` and releases the completion dword.
#[cfg(feature = "emu")]
fn fill_window(h: &GpuSide, data: &[u8]) -> Result<(), BenchError> {
    h.gpu_write(BUS_SRAM, data)?;
    h.gpu_write(BUS_CQ_RELEASE, &[0; 4])?;
    Ok(())
}

#[cfg(feature = "emu")]
fn drain_window(h: &GpuSide, src: &[u8], chunk: usize) -> Result<(), BenchError> {
    let start = chunk * WINDOW;
    let Some(data) = src.get(start..(start + WINDOW).min(src.len())) else {
        return Ok(());
    };
    let mut landed = vec![0u8; data.len()];
    h.gpu_read(BUS_SRAM + ((chunk & 1) * WINDOW) as u64, &mut landed)?;
    if landed != data {
        return Err(BenchError::Mismatch {
            phase: "host→device",
            offset: start,
        });
    }
    Ok(())
}

/// Run the benchmark with `size` bytes each way.
pub fn copy_bench(s: &mut Session, size: usize, seed: u64) -> Result<BenchReport, BenchError> {
    copy_bench_with(s, size, seed, |_, _| true)
}

/// [`copy_bench`] with `progress(direction, bytes_done)` called before every chunk (the copy loops of
/// [`crate::copy`] call their hook there); when it returns `false` the benchmark stops at that chunk boundary and
/// reports what was copied so far ([`BenchReport::stopped`]).
pub fn copy_bench_with(
    s: &mut Session,
    size: usize,
    seed: u64,
    mut progress: impl FnMut(Direction, u64) -> bool,
) -> Result<BenchReport, BenchError> {
    if size == 0 {
        return Err(BenchError::EmptySize);
    }
    s.bridge.ensure_link()?;
    let src = pattern(size, seed);
    let mut staging = vec![0u8; DOWNLOAD_CHUNK];
    let emu = gpu_side(s);

    // Host → device.
    let (c0, t0) = (s.counts(), s.now_ns());
    let mut sent = 0;
    let done = copy::upload(&mut s.bridge, &src, &mut staging, |_, _, i| {
        sent = i;
        if !progress(Direction::Upload, (i * WINDOW) as u64) {
            return Err(Halt::Stop);
        }
        match &emu {
            // The emulated GPU drains (and checks) the window's previous occupant before reuse.
            Some(h) if i >= 2 => drain_window(h, &src, i - 2).map_err(Halt::Failed),
            _ => Ok(()),
        }
    });
    let (chunks, mut stopped) = match done {
        Ok(n) => (n, false),
        Err(Halt::Stop) => {
            // Chunks 0..sent were queued (chunk `sent` was not: the hook stopped before it); let them land.
            s.bridge.wait_pipelined()?;
            (sent, true)
        }
        Err(Halt::Failed(e)) => return Err(e),
    };
    let up_bytes = (chunks * WINDOW).min(size);
    let upload = PhaseReport {
        bytes: up_bytes as u64,
        ns: s.now_ns() - t0,
        counts: s.counts().since(&c0),
        chunks,
    };

    let verification;
    if chunks == 0 {
        verification = "nothing was copied";
    } else if let Some(h) = &emu {
        for i in chunks.saturating_sub(2)..chunks {
            drain_window(h, &src, i)?;
        }
        verification = if stopped {
            "every byte copied checked by the emulated GPU (partial)"
        } else {
            "every byte checked by the emulated GPU in both directions"
        };
    } else {
        // Spot check: the last chunk sent to window 0 starts at SRAM 0, aliased at XDATA 0xF000.
        let last0 = (chunks - 1) & !1;
        let start = last0 * WINDOW;
        let n = (up_bytes - start).min(256);
        let mut got = vec![0u8; n];
        s.bridge.xdata_read(XDATA_SRAM, &mut got)?;
        if got != src[start..start + n] {
            return Err(BenchError::Mismatch {
                phase: "host→device (XDATA 0xF000 spot check)",
                offset: start,
            });
        }
        verification =
            "host→device spot-checked through XDATA 0xF000 (first 256 bytes of window 0)";
    }

    // Device → host.
    let Some(h) = emu else {
        return Ok(BenchReport {
            emulated: false,
            upload,
            download: None,
            download_skipped: Some(
                "device→host needs the GPU (AMD driver SDMA) to fill SRAM and write the completion dword; not available in this tool",
            ),
            verification,
            stopped,
        });
    };
    if stopped {
        return Ok(BenchReport {
            emulated: true,
            upload,
            download: None,
            download_skipped: Some("interrupted during host→device"),
            verification,
            stopped,
        });
    }
    let mut out = vec![0u8; size];
    let (c0, t0) = (s.counts(), s.now_ns());
    let chunks = copy::download_while(
        &mut s.bridge,
        &mut out,
        &mut staging,
        |offset| {
            let go_on = progress(Direction::Download, offset as u64);
            stopped |= !go_on;
            go_on
        },
        |_, offset, len| fill_window(&h, &src[offset..offset + len]),
    )?;
    let down_bytes = (chunks * DOWNLOAD_CHUNK).min(size);
    let download = PhaseReport {
        bytes: down_bytes as u64,
        ns: s.now_ns() - t0,
        counts: s.counts().since(&c0),
        chunks,
    };
    if let Some(at) = out[..down_bytes].iter().zip(&src).position(|(a, b)| a != b) {
        return Err(BenchError::Mismatch {
            phase: "device→host",
            offset: at / DOWNLOAD_CHUNK * DOWNLOAD_CHUNK,
        });
    }
    Ok(BenchReport {
        emulated: true,
        upload,
        download: Some(download),
        download_skipped: None,
        verification,
        stopped,
    })
}
