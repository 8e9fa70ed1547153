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

    fn wait_fence<T: UsbTransport>(
        bus: &mut GpuBus<T>,
        step: &'static str,
        at_least: u64,
    ) -> Result<(), AmdError> {
        poll_until(
            bus,
            step,
            "copy-in drain fence (sys_buf+0x800)",
            DEFAULT_TIMEOUT,
            |b| Self::read_fence(b, step),
            |v| v >= at_least,
        )
        .map(|_| ())
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
        let step = "copy-in";
        if !self.ready {
            self.init(bus)?;
        }
        for (g, group) in data.chunks(CHUNK * CHUNKS_PER_SUBMIT).enumerate() {
            let dst = dst + (g * CHUNK * CHUNKS_PER_SUBMIT) as u64;
            let base = self.seq;
            self.packets.clear();
            for (c, chunk) in group.chunks(CHUNK).enumerate() {
                let seq = base + c as u64;
                let window = (seq & 1) as usize;
                let wire = sector_padded(chunk.len() + 4);
                let win_va = sys_va(BUS_SRAM + (window * WINDOW) as u64);
                sdma::poll_mem(
                    &mut self.packets,
                    win_va + wire as u64 - 4,
                    sentinel(seq),
                    !0,
                    sdma::FUNC_EQ,
                );
                sdma::copy_linear(
                    &mut self.packets,
                    dst + (c * CHUNK) as u64,
                    win_va,
                    chunk.len() as u64,
                );
                sdma::write64(
                    &mut self.packets,
                    sys_va(BUS_SYS_BUF + FENCE_OFFSET as u64),
                    seq + 1,
                );
            }
            q.submit(bus, &self.packets, &mut self.ring_scratch)?;
            let mut fence = 0;
            for (c, chunk) in group.chunks(CHUNK).enumerate() {
                let seq = base + c as u64;
                let window = (seq & 1) as usize;
                if seq >= 2 && fence < seq - 1 {
                    Self::wait_fence(bus, step, seq - 1)?;
                    fence = seq - 1;
                }
                let wire = sector_padded(chunk.len() + 4);
                let img = &mut self.staging[..wire];
                img[..chunk.len()].copy_from_slice(chunk);
                img[chunk.len()..].fill(0);
                img[wire - 4..].copy_from_slice(&sentinel(seq).to_le_bytes());
                bus.bridge()
                    .sram_write_async(window * WINDOW / SLOT, img)
                    .map_err(bridge(step))?;
                // `submit` copies the data (UsbTransport contract), so `staging` is free again.
            }
            bus.bridge().wait_pipelined().map_err(bridge(step))?;
            let n = group.len().div_ceil(CHUNK) as u64;
            self.seq = base + n;
            Self::wait_fence(bus, step, self.seq)?;
        }
        Ok(())
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
