//! SDMA 6 init and queue 0 (docs/hw/amd-driver.md §4 steps 7 and 9): watchdog, UTCL1 and page
//! policy, F32 unhalt, traps,
//! the S2A doorbell port, then the ring buffer registers. [`SdmaQueue::submit`] follows the USB rule
//! of §2: the read pointer is never polled; packets that do not fit before the ring's end are
//! preceded by zero padding to the end and written from offset 0.
use super::Am;
use crate::bus::GpuBus;
use crate::error::AmdError;
use crate::mem::Alloc;
use crate::regs;
use core::time::Duration;
use modelrt_hal::usb::UsbTransport;

/// Ring bytes over USB (docs/hw/amd-driver.md §6: the copy-in path submits its whole ring at once).
pub const RING_BYTES: u64 = 1 << 20;
/// SDMA0 queue 0 doorbell: index 256, BAR2 byte 0x800.
pub const DOORBELL: u64 = 0x800;
/// `SDMA0_QUEUE0_RB_CNTL` for a 1 MiB ring: enable, size, F32 write-pointer polling,
/// read-pointer write-back (timer 4), privileged.
pub const fn rb_cntl(ring_bytes: u64) -> u32 {
    let log2_dw = (ring_bytes / 4).trailing_zeros();
    1 | (log2_dw << 1) | (1 << 11) | (1 << 12) | (4 << 16) | (1 << 23)
}
/// S2A entry for SDMA: enable | awid 0xE | range offset 512 | size 4 | addr[31:28] = 3.
pub const S2A_SDMA: u32 = 1 | (0xE << 1) | (512 << 7) | (4 << 17) | (3 << 28);

/// SDMA engine init.
pub fn init<T: UsbTransport>(am: &mut Am<T>) -> Result<(), AmdError> {
    let step = "SDMA init";
    let b = &mut am.bus;
    b.rmw(step, regs::SDMA0_WATCHDOG_CNTL, 0xFF, 100)?;
    b.rmw(step, regs::SDMA0_UTCL1_CNTL, 0x1F | (3 << 9), 9 | (3 << 9))?;
    b.rmw(
        step,
        regs::SDMA0_UTCL1_PAGE,
        (3 << 12) | (3 << 14) | (1 << 24),
        (2 << 12) | (3 << 14) | (1 << 24),
    )?;
    b.rmw(step, regs::SDMA0_F32_CNTL, 1, 0)?;
    b.rmw(step, regs::SDMA0_CNTL, 0, 1)?;
    b.wreg(step, regs::S2A_DOORBELL_ENTRY_2_CTRL, S2A_SDMA)
}

/// Stop the queue and soft-reset the engine.
pub fn fini<T: UsbTransport>(am: &mut Am<T>) -> Result<(), AmdError> {
    let step = "SDMA fini";
    if am.sdma.is_none() {
        return Ok(());
    }
    let b = &mut am.bus;
    b.rmw(step, regs::SDMA0_QUEUE0_RB_CNTL, 1, 0)?;
    b.wreg(step, regs::SDMA0_QUEUE0_IB_CNTL, 0)?;
    b.wreg(step, regs::SDMA0_QUEUE0_DOORBELL, 0)?;
    b.rmw(step, regs::GRBM_SOFT_RESET, 0, 1 << 23)?;
    am.sleep(Duration::from_millis(10));
    am.bus
        .rmw(step, regs::GRBM_SOFT_RESET, 1 << 23, 0)
        .map(|_| ())
}

/// Queue 0 of SDMA0.
#[derive(Clone, Copy, Debug)]
pub struct SdmaQueue {
    /// Ring.
    pub ring: Alloc,
    /// Control block (read pointer at +0x80, write pointer at +0x38).
    pub ctrl: Alloc,
    /// Bytes submitted so far.
    pub put: u64,
}

/// Control-block offsets.
pub const CTRL_WPTR: u64 = 0x38;
/// Read pointer.
pub const CTRL_RPTR: u64 = 0x80;

impl SdmaQueue {
    /// Allocate and program queue 0.
    pub fn create<T: UsbTransport>(am: &mut Am<T>) -> Result<SdmaQueue, AmdError> {
        let step = "SDMA queue";
        let q = SdmaQueue {
            ring: am.alloc.alloc("SDMA ring", RING_BYTES, 4096)?,
            ctrl: am.alloc.alloc("SDMA queue control", 0x100, 4096)?,
            put: 0,
        };
        am.bus.vram_write(step, q.ctrl.paddr, &[0u8; 0x100])?;
        let ring = q.ring.va();
        let rptr = q.ctrl.va() + CTRL_RPTR;
        let wptr = q.ctrl.va() + CTRL_WPTR;
        let b = &mut am.bus;
        b.wreg(step, regs::SDMA0_QUEUE0_MINOR_PTR_UPDATE, 1)?;
        b.wreg(step, regs::SDMA0_QUEUE0_RB_RPTR, 0)?;
        b.wreg(step, regs::SDMA0_QUEUE0_RB_RPTR_HI, 0)?;
        b.wreg(step, regs::SDMA0_QUEUE0_RB_WPTR, 0)?;
        b.wreg(step, regs::SDMA0_QUEUE0_RB_WPTR_HI, 0)?;
        b.wreg(step, regs::SDMA0_QUEUE0_RB_BASE, (ring >> 8) as u32)?;
        b.wreg(step, regs::SDMA0_QUEUE0_RB_BASE_HI, (ring >> 40) as u32)?;
        b.wreg(step, regs::SDMA0_QUEUE0_RB_RPTR_ADDR_LO, rptr as u32)?;
        b.wreg(
            step,
            regs::SDMA0_QUEUE0_RB_RPTR_ADDR_HI,
            (rptr >> 32) as u32,
        )?;
        b.wreg(step, regs::SDMA0_QUEUE0_RB_WPTR_POLL_ADDR_LO, wptr as u32)?;
        b.wreg(
            step,
            regs::SDMA0_QUEUE0_RB_WPTR_POLL_ADDR_HI,
            (wptr >> 32) as u32,
        )?;
        b.wreg(
            step,
            regs::SDMA0_QUEUE0_DOORBELL_OFFSET,
            (DOORBELL as u32 / 4) << 2,
        )?;
        b.wreg(step, regs::SDMA0_QUEUE0_DOORBELL, 1 << 28)?;
        b.wreg(step, regs::SDMA0_QUEUE0_MINOR_PTR_UPDATE, 0)?;
        b.wreg(step, regs::SDMA0_QUEUE0_RB_CNTL, rb_cntl(RING_BYTES))?;
        b.wreg(step, regs::SDMA0_QUEUE0_IB_CNTL, 1)?;
        Ok(q)
    }

    /// Write `dwords` at the ring's put position (wrapping by the USB rule), publish the write
    /// pointer and ring the doorbell. `scratch` is reused for the zero-padded wire image.
    pub fn submit<T: UsbTransport>(
        &mut self,
        bus: &mut GpuBus<T>,
        dwords: &[u32],
        scratch: &mut Vec<u8>,
    ) -> Result<(), AmdError> {
        let step = "SDMA submit";
        let bytes = 4 * dwords.len() as u64;
        if bytes > RING_BYTES {
            return Err(AmdError::Invalid {
                step,
                what: format!(
                    "SDMA queue overrun: {bytes} bytes of packets for a {RING_BYTES}-byte ring"
                ),
            });
        }
        let mut off = self.put % RING_BYTES;
        if off + bytes > RING_BYTES {
            // Zero-fill to the end (SDMA NOPs), continue from 0.
            let pad = (RING_BYTES - off) as usize;
            scratch.clear();
            scratch.resize(pad, 0);
            bus.vram_write(step, self.ring.paddr + off, scratch)?;
            self.put += pad as u64;
            off = 0;
        }
        scratch.clear();
        for d in dwords {
            scratch.extend_from_slice(&d.to_le_bytes());
        }
        bus.vram_write(step, self.ring.paddr + off, scratch)?;
        self.put += bytes;
        bus.vram_write(step, self.ctrl.paddr + CTRL_WPTR, &self.put.to_le_bytes())?;
        bus.doorbell64(step, DOORBELL, self.put)
    }
}
