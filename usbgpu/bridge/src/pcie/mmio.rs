//! [`BridgedMmio`]: a BAR's register space where every access is a TLP through the ASM24 bridge.
//!
//! Like the reference driver, BAR accesses use the streaming modes (docs/hw/asm24-bridge.md §3.7): a read is
//! 0xF0 OUT (mode 2) + bulk IN, a write is 0xF0 OUT (mode 1) + bulk OUT — two USB transfers each.
//! Posted writes ([`Mmio::write32_posted`]) to consecutive addresses are merged into one stream
//! (up to [`BATCH_BYTES`]), so a run of N register writes costs 2 transfers instead of 2·N. A write to a
//! non-consecutive address, any read, [`Mmio::flush`] or drop issues the pending batch first, which
//! keeps all accesses in program order. Errors of a flush on drop cannot be reported: call
//! [`Mmio::flush`] before dropping when the result matters.
use crate::{Bridge, BridgeError};
use modelrt_hal::mmio::Mmio;
use modelrt_hal::usb::UsbTransport;

/// Largest merged posted-write stream and the chunk of `read_block`/`write_block` conversions.
pub const BATCH_BYTES: usize = 8192;
/// Largest single stream of [`BridgedMmio::read_bytes`]/[`BridgedMmio::write_bytes`] (the reference
/// host's 4 MiB bulk buffer, docs/hw/asm24-bridge.md §1).
pub const STREAM_MAX: usize = 4 << 20;

/// MMIO over the bridge for one BAR (`base`, `size` from bring-up).
pub struct BridgedMmio<'a, T: UsbTransport> {
    bridge: &'a mut Bridge<T>,
    base: u64,
    size: u64,
    batch: [u8; BATCH_BYTES],
    batch_len: usize,
    batch_offset: u64,
}

impl<'a, T: UsbTransport> BridgedMmio<'a, T> {
    /// A view of the `size`-byte BAR at bus address `base`.
    pub fn new(bridge: &'a mut Bridge<T>, base: u64, size: u64) -> Self {
        BridgedMmio {
            bridge,
            base,
            size,
            batch: [0; BATCH_BYTES],
            batch_len: 0,
            batch_offset: 0,
        }
    }

    /// Bus address of the BAR.
    pub fn base(&self) -> u64 {
        self.base
    }

    /// Size of the BAR in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    fn check(&self, offset: u64, len: u64) -> Result<(), BridgeError> {
        if !offset.is_multiple_of(4) || offset.checked_add(len).is_none_or(|end| end > self.size) {
            return Err(BridgeError::OutOfRange {
                what: "BAR MMIO",
                offset,
                len,
            });
        }
        Ok(())
    }

    /// Read `buf.len()` bytes (multiple of 4) at `offset`, in streaming chunks.
    pub fn read_bytes(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), BridgeError> {
        self.check(offset, buf.len() as u64)?;
        self.flush_batch()?;
        for (i, chunk) in buf.chunks_mut(STREAM_MAX).enumerate() {
            self.bridge
                .stream_read(self.base + offset + (i * STREAM_MAX) as u64, chunk)?;
        }
        Ok(())
    }

    /// Write `data` (multiple of 4 bytes) at `offset`, in streaming chunks.
    pub fn write_bytes(&mut self, offset: u64, data: &[u8]) -> Result<(), BridgeError> {
        self.check(offset, data.len() as u64)?;
        self.flush_batch()?;
        for (i, chunk) in data.chunks(STREAM_MAX).enumerate() {
            self.bridge
                .stream_write(self.base + offset + (i * STREAM_MAX) as u64, chunk)?;
        }
        Ok(())
    }

    fn flush_batch(&mut self) -> Result<(), BridgeError> {
        if self.batch_len == 0 {
            return Ok(());
        }
        let len = self.batch_len;
        self.batch_len = 0;
        self.bridge
            .stream_write(self.base + self.batch_offset, &self.batch[..len])
    }
}

impl<T: UsbTransport> Mmio for BridgedMmio<'_, T> {
    type Error = BridgeError;

    fn read32(&mut self, offset: u64) -> Result<u32, BridgeError> {
        let mut b = [0u8; 4];
        self.read_bytes(offset, &mut b)?;
        Ok(u32::from_le_bytes(b))
    }

    fn write32(&mut self, offset: u64, value: u32) -> Result<(), BridgeError> {
        self.write_bytes(offset, &value.to_le_bytes())
    }

    fn write32_posted(&mut self, offset: u64, value: u32) -> Result<(), BridgeError> {
        self.check(offset, 4)?;
        let consecutive = self.batch_len > 0 && self.batch_offset + self.batch_len as u64 == offset;
        if !consecutive || self.batch_len == BATCH_BYTES {
            self.flush_batch()?;
            self.batch_offset = offset;
        }
        self.batch[self.batch_len..self.batch_len + 4].copy_from_slice(&value.to_le_bytes());
        self.batch_len += 4;
        Ok(())
    }

    fn flush(&mut self) -> Result<(), BridgeError> {
        self.flush_batch()
    }

    fn read_block(&mut self, offset: u64, out: &mut [u32]) -> Result<(), BridgeError> {
        self.check(offset, 4 * out.len() as u64)?;
        self.flush_batch()?;
        let mut buf = [0u8; BATCH_BYTES];
        for (i, words) in out.chunks_mut(BATCH_BYTES / 4).enumerate() {
            let bytes = &mut buf[..4 * words.len()];
            self.bridge
                .stream_read(self.base + offset + (i * BATCH_BYTES) as u64, bytes)?;
            for (w, b) in words.iter_mut().zip(bytes.chunks_exact(4)) {
                *w = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            }
        }
        Ok(())
    }

    fn write_block(&mut self, offset: u64, data: &[u32]) -> Result<(), BridgeError> {
        self.check(offset, 4 * data.len() as u64)?;
        self.flush_batch()?;
        let mut buf = [0u8; BATCH_BYTES];
        for (i, words) in data.chunks(BATCH_BYTES / 4).enumerate() {
            for (w, b) in words.iter().zip(buf.chunks_exact_mut(4)) {
                b.copy_from_slice(&w.to_le_bytes());
            }
            let bytes = &buf[..4 * words.len()];
            self.bridge
                .stream_write(self.base + offset + (i * BATCH_BYTES) as u64, bytes)?;
        }
        Ok(())
    }
}

impl<T: UsbTransport> Drop for BridgedMmio<'_, T> {
    fn drop(&mut self) {
        // Best effort (see module docs): pending posted writes must not vanish silently.
        let _ = self.flush_batch();
    }
}
