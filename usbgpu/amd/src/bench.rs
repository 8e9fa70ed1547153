//! Copy measurements over a booted [`AmdDevice`] for `modelrt usb copy-bench --sweep` and
//! `cargo xtask bench usb-big`: host → VRAM and VRAM → host at sizes from 4 KiB to 1 GiB through
//! both copy paths (BAR0 streams, SDMA pipelines; docs/hw/amd-driver.md §5, §6), every byte read
//! back and compared. Data is generated and checked in pieces of at most [`PIECE`] bytes, so a
//! 1 GiB row needs 64 MiB of host memory, not 2 GiB.
use super::device::{AmdDevice, CopyPath, BAR_COPY_MAX};
use super::error::AmdError;
use modelrt_asm24::counting::TransferCounts;
use modelrt_hal::device::Device;
use modelrt_hal::usb::UsbTransport;

/// The sweep's sizes: 4 KiB … 1 GiB.
pub const SWEEP_SIZES: [usize; 7] = [
    4 << 10,
    64 << 10,
    1 << 20,
    4 << 20,
    16 << 20,
    256 << 20,
    1 << 30,
];
/// Largest piece generated and checked at once.
pub const PIECE: usize = 64 << 20;

/// One direction of one row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Phase {
    pub bytes: u64,
    /// Device clock nanoseconds (emulated on the emulator).
    pub ns: u64,
    pub counts: TransferCounts,
}

impl Phase {
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

    /// Control transfers per MiB.
    pub fn control_per_mib(&self) -> f64 {
        self.per_mib(self.counts.control())
    }

    /// Bulk transfers per MiB.
    pub fn bulk_per_mib(&self) -> f64 {
        self.per_mib(self.counts.bulk())
    }
}

/// One size through one path, both directions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SweepRow {
    pub bytes: u64,
    pub path: CopyPath,
    pub upload: Phase,
    pub download: Phase,
}

/// The deterministic pattern byte `i` of a row (xorshift of the seed and the position's word).
fn fill(seed: u64, start: usize, out: &mut [u8]) {
    for (i, b) in out.iter_mut().enumerate() {
        let mut x = (seed | 1) ^ ((start + i) as u64 / 8).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        x ^= x >> 29;
        x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
        x ^= x >> 32;
        *b = (x >> (8 * ((start + i) % 8))) as u8;
    }
}

/// Copy `size` bytes in and out through `path` at arena offset 0, checking every byte.
pub fn row<T: UsbTransport>(
    dev: &mut AmdDevice<T>,
    counts: &dyn Fn(&mut AmdDevice<T>) -> TransferCounts,
    path: CopyPath,
    size: usize,
    seed: u64,
) -> Result<SweepRow, AmdError> {
    let mut buf = vec![0u8; size.min(PIECE)];
    let mut back = vec![0u8; size.min(PIECE)];
    let (c0, t0) = (counts(dev), dev.now_ns());
    for start in (0..size).step_by(PIECE) {
        let n = PIECE.min(size - start);
        fill(seed, start, &mut buf[..n]);
        dev.upload_via(path, start as u64, &buf[..n])?;
    }
    let upload = Phase {
        bytes: size as u64,
        ns: dev.now_ns() - t0,
        counts: counts(dev).since(&c0),
    };
    let mut dl = Phase {
        bytes: size as u64,
        ns: 0,
        counts: TransferCounts::default(),
    };
    for start in (0..size).step_by(PIECE) {
        let n = PIECE.min(size - start);
        let (c0, t0) = (counts(dev), dev.now_ns());
        dev.download_via(path, start as u64, &mut back[..n])?;
        dl.ns += dev.now_ns() - t0;
        let c = counts(dev).since(&c0);
        dl.counts = add(&dl.counts, &c);
        fill(seed, start, &mut buf[..n]);
        if let Some(at) = buf[..n].iter().zip(&back[..n]).position(|(a, b)| a != b) {
            return Err(AmdError::Invalid {
                step: "copy sweep",
                what: format!(
                    "{size} bytes through {path:?}: byte {} read back differs",
                    start + at
                ),
            });
        }
    }
    Ok(SweepRow {
        bytes: size as u64,
        path,
        upload,
        download: dl,
    })
}

fn add(a: &TransferCounts, b: &TransferCounts) -> TransferCounts {
    TransferCounts {
        control_out: a.control_out + b.control_out,
        control_in: a.control_in + b.control_in,
        bulk_out: a.bulk_out + b.bulk_out,
        bulk_in: a.bulk_in + b.bulk_in,
        control_bytes_out: a.control_bytes_out + b.control_bytes_out,
        control_bytes_in: a.control_bytes_in + b.control_bytes_in,
        bulk_bytes_out: a.bulk_bytes_out + b.bulk_bytes_out,
        bulk_bytes_in: a.bulk_bytes_in + b.bulk_bytes_in,
        tlps: a.tlps + b.tlps,
    }
}

/// Every size of [`SWEEP_SIZES`] up to `max` through the pipeline, and through streams up to
/// [`BAR_COPY_MAX`]; `on_row` sees each row as it is measured. Allocates a `max`-byte arena.
pub fn sweep_up_to<T: UsbTransport>(
    dev: &mut AmdDevice<T>,
    counts: &dyn Fn(&mut AmdDevice<T>) -> TransferCounts,
    max: usize,
    seed: u64,
    mut on_row: impl FnMut(&SweepRow),
) -> Result<Vec<SweepRow>, AmdError> {
    dev.alloc_arena(max as u64)?;
    let mut rows = Vec::new();
    for size in SWEEP_SIZES.into_iter().filter(|&s| s <= max) {
        let paths: &[CopyPath] = if size <= BAR_COPY_MAX {
            &[CopyPath::Stream, CopyPath::Pipeline]
        } else {
            &[CopyPath::Pipeline]
        };
        for &path in paths {
            let r = row(dev, counts, path, size, seed)?;
            on_row(&r);
            rows.push(r);
        }
    }
    Ok(rows)
}
