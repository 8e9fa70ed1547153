//! Host ↔ VRAM copies over SDMA following the USB copy pipelines of the fact sheet (§9).
//!
//! - [`CopyEngine::copy_in`]: one SDMA submission per call (per group of chunks) that, for every
//!   0x3FFFC-byte chunk, polls a sentinel at the end of a bridge SRAM window, copies the window to
//!   VRAM and writes the chunk counter to the drain fence (`sys_buf` + 0x800); the host streams each
//!   chunk with a 0xF2 arm + bulk OUT into the alternating windows, rewriting a window only after
//!   the fence shows its previous occupant drained.
//! - [`CopyEngine::copy_out`]: per ≤ 512 KiB chunk, a 0xF2 read arm, an SDMA copy VRAM → SRAM followed
//!   by the completion-queue write that releases the armed read, then one bulk IN.
//!
//! All buffers are allocated when the engine is created; copies themselves do not allocate.
use super::boot::sdma::SdmaQueue;
use super::bus::{poll_until, GpuBus, DEFAULT_TIMEOUT};
use super::error::{bridge, AmdError};
use super::mem::sys_va;
use super::sdma;
use modelrt_asm24::proto::{sector_padded, SLOT, SRAM_SIZE};
use modelrt_asm24::{BUS_CQ_RELEASE, BUS_SRAM, BUS_SYS_BUF, XDATA_SYS_BUF};
use modelrt_hal::usb::UsbTransport;

/// Payload bytes per copy-in chunk (a 256 KiB window minus the sentinel dword).
pub const CHUNK: usize = 0x3FFFC;
/// One copy-in window.
pub const WINDOW: usize = 0x40000;
/// Sentinel marking a landed chunk.
pub const fn sentinel(seq: u64) -> u32 {
    0x5100_0000 | (seq as u32 & 0xFF_FFFF)
}
/// Offset of the drain fence in `sys_buf` (XDATA 0xA800, PCIe 0x820800).
pub const FENCE_OFFSET: u16 = 0x800;
/// SDMA dwords per copy-in chunk (POLL_REGMEM 6 + COPY_LINEAR 7 + WRITE64 6).
pub const DWORDS_PER_CHUNK: usize = 19;
/// Chunks per SDMA submission (the ring holds the whole submission).
pub const CHUNKS_PER_SUBMIT: usize = 4096;

/// The copy pipelines' state.
pub struct CopyEngine {
    seq: u64,
    /// The last drain-fence value read (the fence only grows).
    fence_seen: u64,
    tinygrad_replay: bool,
    ready: bool,
    staging: Vec<u8>,
    packets: Vec<u32>,
    ring_scratch: Vec<u8>,
}

impl Default for CopyEngine {
    fn default() -> Self {
        Self::new()
    }
}

impl CopyEngine {
    /// Allocate the staging buffers (512 KiB wire image, packet and ring scratch).
    pub fn new() -> CopyEngine {
        CopyEngine {
            seq: 0,
            fence_seen: 0,
            tinygrad_replay: false,
            ready: false,
            staging: vec![0; SRAM_SIZE],
            packets: Vec::with_capacity(CHUNKS_PER_SUBMIT * DWORDS_PER_CHUNK + 8),
            ring_scratch: Vec::with_capacity(4 * (CHUNKS_PER_SUBMIT * DWORDS_PER_CHUNK + 8)),
        }
    }

    fn read_fence<T: UsbTransport>(
        bus: &mut GpuBus<T>,
        step: &'static str,
    ) -> Result<u64, AmdError> {
        let mut b = [0u8; 8];
        bus.bridge()
            .xdata_read(XDATA_SYS_BUF + FENCE_OFFSET, &mut b)
            .map_err(bridge(step))?;
        Ok(u64::from_le_bytes(b))
    }

    /// Poll the fence until it is at least `at_least`; returns the value read.
    fn wait_fence<T: UsbTransport>(
        bus: &mut GpuBus<T>,
        step: &'static str,
        at_least: u64,
    ) -> Result<u64, AmdError> {
        poll_until(
            bus,
            step,
            "copy-in drain fence (sys_buf+0x800)",
            DEFAULT_TIMEOUT,
            |b| Self::read_fence(b, step),
            |v| v >= at_least,
        )
    }

    /// One-time init: zero the fence and both windows so no stale sentinel can match.
    fn init<T: UsbTransport>(&mut self, bus: &mut GpuBus<T>) -> Result<(), AmdError> {
        let step = "copy-in init";
        bus.bridge()
            .xdata_write(XDATA_SYS_BUF + FENCE_OFFSET, &[0; 8])
            .map_err(bridge(step))?;
        self.staging[..WINDOW].fill(0);
        for w in 0..2 {
            bus.bridge()
                .sram_write(w * WINDOW / SLOT, &self.staging[..WINDOW])
                .map_err(bridge(step))?;
        }
        self.ready = true;
        Ok(())
    }

    /// Copy `data` to VRAM at GPU VA `dst`.
    pub fn copy_in<T: UsbTransport>(
        &mut self,
        bus: &mut GpuBus<T>,
        q: &mut SdmaQueue,
        dst: u64,
        data: &[u8],
    ) -> Result<(), AmdError> {
        self.copy_in_frags(bus, q, &[(dst, data)], &mut |_| {})
    }

    /// Copy every `(dst, bytes)` fragment to VRAM at GPU VA `dst`, packed back to back into the
    /// chunk stream (a chunk may carry the end of one fragment and the start of the next: one
    /// COPY_LINEAR per piece; any alignment). `sent(n)` is told the payload bytes of each chunk
    /// once its bulk OUT is queued. Returns when the last chunk has drained into VRAM.
    pub fn copy_in_frags<T: UsbTransport>(
        &mut self,
        bus: &mut GpuBus<T>,
        q: &mut SdmaQueue,
        frags: &[(u64, &[u8])],
        sent: &mut dyn FnMut(u64),
    ) -> Result<(), AmdError> {
        let step = "copy-in";
        if !self.ready {
            self.init(bus)?;
        }
        let total: usize = frags.iter().map(|f| f.1.len()).sum();
        if total == 0 {
            return Ok(());
        }
        let chunks = total.div_ceil(CHUNK);
        // Submissions of at most CHUNKS_PER_SUBMIT chunks whose packets fit half the SDMA ring.
        let mut cursor = Cursor::default();
        let mut chunk = 0;
        while chunk < chunks {
            let base = self.seq;
            let first = chunk;
            let group_cursor = cursor;
            self.packets.clear();
            while chunk < chunks
                && chunk - first < CHUNKS_PER_SUBMIT
                && 4 * (self.packets.len() + DWORDS_PER_CHUNK)
                    < super::boot::sdma::RING_BYTES as usize / 2
            {
                let seq = base + (chunk - first) as u64;
                let len = CHUNK.min(total - chunk * CHUNK);
                let win_va = sys_va(BUS_SRAM + ((seq & 1) as usize * WINDOW) as u64);
                let wire = sector_padded(len + 4);
                sdma::poll_mem(
                    &mut self.packets,
                    win_va + wire as u64 - 4,
                    sentinel(seq),
                    !0,
                    sdma::FUNC_EQ,
                );
                let mut at = 0;
                cursor.pieces(frags, len, |dst, piece| {
                    sdma::copy(
                        &mut self.packets,
                        dst,
                        win_va + at as u64,
                        piece.len() as u64,
                    );
                    at += piece.len();
                });
                sdma::write64(
                    &mut self.packets,
                    sys_va(BUS_SYS_BUF + FENCE_OFFSET as u64),
                    seq + 1,
                );
                chunk += 1;
            }
            q.submit(bus, &self.packets, &mut self.ring_scratch)
                .map_err(|e| AmdError::Device {
                    step,
                    what: format!("queuing the SDMA program: {e}"),
                })?;
            let mut cursor2 = group_cursor;
            for c in first..chunk {
                let seq = base + (c - first) as u64;
                let window = (seq & 1) as usize;
                let must = seq.saturating_sub(1);
                if self.tinygrad_replay || (seq >= 2 && self.fence_seen < must) {
                    // tinygrad reads the fence with every arm; we only when the last value read
                    // does not already show the window's previous occupant drained.
                    self.fence_seen = if self.tinygrad_replay {
                        let v = Self::read_fence(bus, step)?;
                        if v >= must {
                            v
                        } else {
                            Self::wait_fence(bus, step, must)?
                        }
                    } else {
                        Self::wait_fence(bus, step, must)?
                    };
                }
                let len = CHUNK.min(total - c * CHUNK);
                let wire = sector_padded(len + 4);
                let img = &mut self.staging[..wire];
                let mut at = 0;
                cursor2.pieces(frags, len, |_, piece| {
                    img[at..at + piece.len()].copy_from_slice(piece);
                    at += piece.len();
                });
                img[len..].fill(0);
                img[wire - 4..].copy_from_slice(&sentinel(seq).to_le_bytes());
                bus.bridge()
                    .sram_write_async(window * WINDOW / SLOT, img)
                    .map_err(bridge(step))?;
                // `submit` copies the data (UsbTransport contract), so `staging` is free again.
                sent(len as u64);
            }
            bus.bridge().wait_pipelined().map_err(bridge(step))?;
            self.seq = base + (chunk - first) as u64;
            self.fence_seen = Self::wait_fence(bus, step, self.seq)?;
        }
        Ok(())
    }

    /// Copy in the tinygrad 0.14 way from now on (for the comparison of `cargo xtask bench usb-big`):
    /// the fence is read with every chunk's arm, as its `_copyin` does (docs/hw/amd-driver.md §6).
    pub fn set_tinygrad_replay(&mut self, on: bool) {
        self.tinygrad_replay = on;
    }

    /// Copy `out.len()` bytes from VRAM at GPU VA `src` to `out`.
    pub fn copy_out<T: UsbTransport>(
        &mut self,
        bus: &mut GpuBus<T>,
        q: &mut SdmaQueue,
        src: u64,
        out: &mut [u8],
    ) -> Result<(), AmdError> {
        let step = "copy-out";
        for (i, chunk) in out.chunks_mut(SRAM_SIZE).enumerate() {
            let n = chunk.len();
            bus.bridge().sram_read_arm(n).map_err(bridge(step))?;
            self.packets.clear();
            sdma::copy_linear(
                &mut self.packets,
                sys_va(BUS_SRAM),
                src + (i * SRAM_SIZE) as u64,
                n as u64,
            );
            sdma::write32(&mut self.packets, sys_va(BUS_CQ_RELEASE), 0);
            q.submit(bus, &self.packets, &mut self.ring_scratch)?;
            let wire = &mut self.staging[..sector_padded(n)];
            bus.bridge().sram_read(wire).map_err(bridge(step))?;
            chunk.copy_from_slice(&wire[..n]);
        }
        Ok(())
    }
}

/// Position in a fragment list's byte stream: which fragment, and how far into it.
#[derive(Clone, Copy, Debug, Default)]
struct Cursor {
    frag: usize,
    at: usize,
}

impl Cursor {
    /// Hand the next `len` bytes of the stream to `f` as (destination VA, bytes) pieces.
    fn pieces(&mut self, frags: &[(u64, &[u8])], mut len: usize, mut f: impl FnMut(u64, &[u8])) {
        while len > 0 {
            let Some(&(dst, bytes)) = frags.get(self.frag) else {
                return;
            };
            let n = (bytes.len() - self.at).min(len);
            if n > 0 {
                f(dst + self.at as u64, &bytes[self.at..self.at + n]);
            }
            self.at += n;
            len -= n;
            if self.at == bytes.len() {
                self.frag += 1;
                self.at = 0;
            }
        }
    }
}
