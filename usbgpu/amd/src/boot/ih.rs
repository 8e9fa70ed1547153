//! Interrupt handler rings (docs/hw/amd-driver.md §4 step 4): two 256 KiB rings in VRAM, programmed
//! and enabled. Over USB
//! the driver never services interrupts; the rings only give the hardware somewhere to write.
use super::Am;
use crate::error::AmdError;
use crate::mem::{Alloc, VramAlloc};
use crate::regs;
use modelrt_hal::usb::UsbTransport;

/// Bytes per IH ring.
pub const RING_BYTES: u64 = 256 << 10;

/// The rings and the write-pointer word.
#[derive(Clone, Copy, Debug)]
pub struct IhState {
    /// Ring 0 and ring 1.
    pub rings: [Alloc; 2],
    /// Ring-0 write-pointer write-back page.
    pub wptr: Alloc,
}

impl IhState {
    /// Allocate both rings.
    pub fn alloc(a: &mut VramAlloc) -> Result<IhState, AmdError> {
        Ok(IhState {
            rings: [
                a.alloc("IH ring 0", RING_BYTES, 4096)?,
                a.alloc("IH ring 1", RING_BYTES, 4096)?,
            ],
            wptr: a.alloc("IH write pointer", 4096, 4096)?,
        })
    }
}

/// `IH_RB_CNTL` of ring 0 before enable: mc_space 4, snoop, rptr re-arm, size = log2(dwords),
/// write-pointer overflow enable + clear.
pub fn rb_cntl() -> u32 {
    let log2_dw = (RING_BYTES / 4).trailing_zeros();
    (4 << 28) | (1 << 31) | (1 << 21) | (1 << 20) | (1 << 16) | (log2_dw << 1)
}

/// `IH_RB_CNTL_RING1` before enable: mc_space 4, snoop, full-drain enable, size, overflow clear.
pub fn rb_cntl_ring1() -> u32 {
    let log2_dw = (RING_BYTES / 4).trailing_zeros();
    (4 << 28) | (1 << 31) | (1 << 20) | (1 << 9) | (log2_dw << 1)
}

/// Program and enable both rings.
pub fn init<T: UsbTransport>(am: &mut Am<T>) -> Result<(), AmdError> {
    let step = "IH init";
    let r0 = am.mc(am.ih.rings[0].paddr);
    let r1 = am.mc(am.ih.rings[1].paddr);
    let wp = am.mc(am.ih.wptr.paddr);
    let cntl = rb_cntl();
    let b = &mut am.bus;
    b.wreg(step, regs::IH_RB_BASE, (r0 >> 8) as u32)?;
    b.wreg(step, regs::IH_RB_BASE_HI, (r0 >> 40) as u32)?;
    b.wreg(step, regs::IH_RB_CNTL, cntl)?;
    b.wreg(step, regs::IH_RB_WPTR_ADDR_LO, wp as u32)?;
    b.wreg(step, regs::IH_RB_WPTR_ADDR_HI, (wp >> 32) as u32)?;
    b.wreg(step, regs::IH_RB_WPTR, 0)?;
    b.wreg(step, regs::IH_RB_RPTR, 0)?;
    b.wreg(step, regs::IH_DOORBELL_RPTR, 0)?;
    b.wreg(step, regs::IH_RB_BASE_RING1, (r1 >> 8) as u32)?;
    b.wreg(step, regs::IH_RB_BASE_HI_RING1, (r1 >> 40) as u32)?;
    b.wreg(step, regs::IH_RB_CNTL_RING1, rb_cntl_ring1())?;
    b.wreg(step, regs::IH_RB_WPTR_RING1, 0)?;
    b.wreg(step, regs::IH_RB_RPTR_RING1, 0)?;
    b.wreg(step, regs::IH_DOORBELL_RPTR_RING1, 0)?;
    b.rmw(step, regs::IH_STORM_CLIENT_LIST_CNTL, 0, 1 << 18)?;
    b.rmw(step, regs::IH_INT_FLOOD_CNTL, 0, 1 << 3)?;
    b.rmw(step, regs::IH_MSI_STORM_CTRL, 0xFFF, 0x3)?;
    // Enable: ring 0 with interrupts, ring 1 without.
    b.rmw(step, regs::IH_RB_CNTL, 0, 1 | (1 << 17))?;
    b.rmw(step, regs::IH_RB_CNTL_RING1, 0, 1)?;
    Ok(())
}
