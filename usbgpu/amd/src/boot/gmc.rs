//! GPU memory controller hubs (docs/hw/amd-driver.md §4 step 4): the MM hub during the early boot
//! and the GC hub in
//! GFX init get the same programming — AGP off, system aperture over VRAM, scratch and fault
//! pages, L1 TLB, L2 cache, context 0 over the page tables, invalidate-engine ranges — and
//! [`flush_tlb`] invalidates a hub's TLBs after page-table writes (engine 17, docs/hw/amd-driver.md
//! §3).
use super::{soc, Am};
use crate::bus::DEFAULT_TIMEOUT;
use crate::error::AmdError;
use crate::mem::VA_BASE;
use crate::regs::{self, Reg};
use modelrt_hal::usb::UsbTransport;

/// One hub's registers.
pub struct Hub {
    /// Name for messages.
    pub name: &'static str,
    agp: [Reg; 3],
    aperture: [Reg; 4],
    fault_default: [Reg; 2],
    l1_tlb: Reg,
    fault_cntl2: Reg,
    identity: Reg,
    l2: [Reg; 5],
    ctx0: [Reg; 7],
    sem: Option<Reg>,
    req: Reg,
    ack: Reg,
    eng0_range: [Reg; 2],
}

impl Hub {
    /// The multimedia (system) hub.
    pub const MM: Hub = Hub {
        name: "MM hub",
        agp: [
            regs::MMMC_VM_AGP_BASE,
            regs::MMMC_VM_AGP_BOT,
            regs::MMMC_VM_AGP_TOP,
        ],
        aperture: [
            regs::MMMC_VM_SYSTEM_APERTURE_LOW_ADDR,
            regs::MMMC_VM_SYSTEM_APERTURE_HIGH_ADDR,
            regs::MMMC_VM_SYSTEM_APERTURE_DEFAULT_ADDR_LSB,
            regs::MMMC_VM_SYSTEM_APERTURE_DEFAULT_ADDR_MSB,
        ],
        fault_default: [
            regs::MMVM_L2_PROTECTION_FAULT_DEFAULT_ADDR_LO32,
            regs::MMVM_L2_PROTECTION_FAULT_DEFAULT_ADDR_HI32,
        ],
        l1_tlb: regs::MMMC_VM_MX_L1_TLB_CNTL,
        fault_cntl2: regs::MMVM_L2_PROTECTION_FAULT_CNTL2,
        identity: regs::MMVM_L2_CONTEXT1_IDENTITY_APERTURE_LOW_ADDR_LO32,
        l2: [
            regs::MMVM_L2_CNTL,
            regs::MMVM_L2_CNTL2,
            regs::MMVM_L2_CNTL3,
            regs::MMVM_L2_CNTL4,
            regs::MMVM_L2_CNTL5,
        ],
        ctx0: [
            regs::MMVM_CONTEXT0_PAGE_TABLE_START_ADDR_LO32,
            regs::MMVM_CONTEXT0_PAGE_TABLE_START_ADDR_HI32,
            regs::MMVM_CONTEXT0_PAGE_TABLE_END_ADDR_LO32,
            regs::MMVM_CONTEXT0_PAGE_TABLE_END_ADDR_HI32,
            regs::MMVM_CONTEXT0_PAGE_TABLE_BASE_ADDR_LO32,
            regs::MMVM_CONTEXT0_PAGE_TABLE_BASE_ADDR_HI32,
            regs::MMVM_CONTEXT0_CNTL,
        ],
        sem: Some(regs::MMVM_INVALIDATE_ENG17_SEM),
        req: regs::MMVM_INVALIDATE_ENG17_REQ,
        ack: regs::MMVM_INVALIDATE_ENG17_ACK,
        eng0_range: [
            regs::MMVM_INVALIDATE_ENG0_ADDR_RANGE_LO32,
            regs::MMVM_INVALIDATE_ENG0_ADDR_RANGE_HI32,
        ],
    };

    /// The graphics hub.
    pub const GC: Hub = Hub {
        name: "GC hub",
        agp: [
            regs::GCMC_VM_AGP_BASE,
            regs::GCMC_VM_AGP_BOT,
            regs::GCMC_VM_AGP_TOP,
        ],
        aperture: [
            regs::GCMC_VM_SYSTEM_APERTURE_LOW_ADDR,
            regs::GCMC_VM_SYSTEM_APERTURE_HIGH_ADDR,
            regs::GCMC_VM_SYSTEM_APERTURE_DEFAULT_ADDR_LSB,
            regs::GCMC_VM_SYSTEM_APERTURE_DEFAULT_ADDR_MSB,
        ],
        fault_default: [
            regs::GCVM_L2_PROTECTION_FAULT_DEFAULT_ADDR_LO32,
            regs::GCVM_L2_PROTECTION_FAULT_DEFAULT_ADDR_HI32,
        ],
        l1_tlb: regs::GCMC_VM_MX_L1_TLB_CNTL,
        fault_cntl2: regs::GCVM_L2_PROTECTION_FAULT_CNTL2,
        identity: regs::GCVM_L2_CONTEXT1_IDENTITY_APERTURE_LOW_ADDR_LO32,
        l2: [
            regs::GCVM_L2_CNTL,
            regs::GCVM_L2_CNTL2,
            regs::GCVM_L2_CNTL3,
            regs::GCVM_L2_CNTL4,
            regs::GCVM_L2_CNTL5,
        ],
        ctx0: [
            regs::GCVM_CONTEXT0_PAGE_TABLE_START_ADDR_LO32,
            regs::GCVM_CONTEXT0_PAGE_TABLE_START_ADDR_HI32,
            regs::GCVM_CONTEXT0_PAGE_TABLE_END_ADDR_LO32,
            regs::GCVM_CONTEXT0_PAGE_TABLE_END_ADDR_HI32,
            regs::GCVM_CONTEXT0_PAGE_TABLE_BASE_ADDR_LO32,
            regs::GCVM_CONTEXT0_PAGE_TABLE_BASE_ADDR_HI32,
            regs::GCVM_CONTEXT0_CNTL,
        ],
        sem: None,
        req: regs::GCVM_INVALIDATE_ENG17_REQ,
        ack: regs::GCVM_INVALIDATE_ENG17_ACK,
        eng0_range: [
            regs::GCVM_INVALIDATE_ENG0_ADDR_RANGE_LO32,
            regs::GCVM_INVALIDATE_ENG0_ADDR_RANGE_HI32,
        ],
    };
}

/// `MX_L1_TLB_CNTL`: L1 TLB on, system access mode 3, advanced driver model, MTYPE UC (3).
pub const L1_TLB_CNTL: u32 = 1 | (3 << 3) | (1 << 6) | (3 << 11);
/// `L2_CNTL`: cache on, default page out to system memory, context-1 identity mode 1.
pub const L2_CNTL: u32 = 1 | (1 << 11) | (1 << 19);
/// `L2_CNTL2`: invalidate all L1 TLBs and the L2 cache.
pub const L2_CNTL2: u32 = 0b11;
/// `L2_CNTL3`: bank select 9, big-K fragment size 6, big-K associativity 1, 4K associativity 1
/// (the value tinygrad writes, `usbgpu/amd/golden`).
pub const L2_CNTL3: u32 = 9 | (6 << 15) | (1 << 20) | (1 << 31);
/// `L2_CNTL4`: 4K partition count 1.
pub const L2_CNTL4: u32 = 1;
/// `L2_CNTL5`: walker priority client id 0x1FF.
pub const L2_CNTL5: u32 = 0x1FF << 5;
/// `L2_PROTECTION_FAULT_CNTL2` bit 18 (active page migration PTE read retry), set by RMW.
pub const FAULT_CNTL2_SET: u32 = 1 << 18;
/// `CONTEXT0_CNTL`: 0x1800000 + every fault interrupt/default bit (9..=22) + enable + depth 3.
pub const CONTEXT0_CNTL: u32 = 0x180_0000 | (0x3FFF << 9) | 1 | (3 << 1);
/// Invalidate request: VMID 0, every L2/L1 level, flush type 0.
pub const INVALIDATE_REQ: u32 = 1 | (0x1F << 19);

fn lo(v: u64) -> u32 {
    v as u32
}

fn hi(v: u64) -> u32 {
    (v >> 32) as u32
}

/// Program one hub (docs/hw/amd-driver.md §4 step 4).
pub fn init_hub<T: UsbTransport>(am: &mut Am<T>, hub: Hub) -> Result<(), AmdError> {
    let step = hub.name;
    let fb_end = am.fb_base + am.vram_size - 1;
    let scratch = am.mc(am.scratch_page.paddr) >> 12;
    let dummy = am.mc(am.dummy_page.paddr) >> 12;
    let va_end = (VA_BASE + (1u64 << 48) - 1).min(0x7FFF_FFFF_FFFF);
    let b = &mut am.bus;
    b.wreg(step, hub.agp[0], 0)?;
    b.wreg(step, hub.agp[1], 0xFF_FFFF)?;
    b.wreg(step, hub.agp[2], 0)?;
    b.wreg(step, hub.aperture[0], (am.fb_base >> 18) as u32)?;
    b.wreg(step, hub.aperture[1], (fb_end >> 18) as u32)?;
    b.wreg(step, hub.aperture[2], lo(scratch))?;
    b.wreg(step, hub.aperture[3], hi(scratch))?;
    b.wreg(step, hub.fault_default[0], lo(dummy))?;
    b.wreg(step, hub.fault_default[1], hi(dummy))?;
    b.rmw(step, hub.fault_cntl2, 0, FAULT_CNTL2_SET)?;
    b.rmw(step, hub.l1_tlb, !0, L1_TLB_CNTL)?;
    b.rmw(step, hub.l2[0], !0, L2_CNTL)?;
    b.rmw(step, hub.l2[1], !0, L2_CNTL2)?;
    b.wreg(step, hub.l2[2], L2_CNTL3)?;
    b.wreg(step, hub.l2[3], L2_CNTL4)?;
    b.wreg(step, hub.l2[4], L2_CNTL5)?;
    let start = VA_BASE >> 12;
    let end = va_end >> 12;
    let base = am.pt_root | 1;
    b.wreg(step, hub.ctx0[0], lo(start))?;
    b.wreg(step, hub.ctx0[1], hi(start))?;
    b.wreg(step, hub.ctx0[2], lo(end))?;
    b.wreg(step, hub.ctx0[3], hi(end))?;
    b.wreg(step, hub.ctx0[4], lo(base))?;
    b.wreg(step, hub.ctx0[5], hi(base))?;
    b.wreg(step, hub.ctx0[6], CONTEXT0_CNTL)?;
    // Identity aperture off: low = all ones (page units), high = 0, physical offset 0.
    for (i, v) in [0xFFFF_FFFF, 0xF, 0, 0, 0, 0].into_iter().enumerate() {
        b.wreg(step, hub.identity.nth(i as u32, 1), v)?;
    }
    // 18 invalidate engines: whole range.
    for eng in 0..18 {
        b.wreg(step, hub.eng0_range[0].nth(eng, 2), 0xFFFF_FFFF)?;
        b.wreg(step, hub.eng0_range[1].nth(eng, 2), 0x1F)?;
    }
    Ok(())
}

/// Invalidate one hub's TLBs: HDP flush, (MM: take the semaphore), request, poll the ACK bit of
/// VMID 0, (release).
pub fn flush_tlb<T: UsbTransport>(am: &mut Am<T>, hub: &Hub) -> Result<(), AmdError> {
    let step = hub.name;
    soc::hdp_flush(&mut am.bus, step)?;
    if let Some(sem) = hub.sem {
        am.bus.poll(step, sem, 1, 1, DEFAULT_TIMEOUT)?;
    }
    am.bus.wreg(step, hub.req, INVALIDATE_REQ)?;
    am.bus.poll(step, hub.ack, 1, 1, DEFAULT_TIMEOUT)?;
    if let Some(sem) = hub.sem {
        am.bus.wreg(step, sem, 0)?;
    }
    Ok(())
}

/// Flush GC then MM (after every mapping change, docs/hw/amd-driver.md §3).
pub fn flush_tlbs<T: UsbTransport>(am: &mut Am<T>) -> Result<(), AmdError> {
    flush_tlb(am, &Hub::GC)?;
    flush_tlb(am, &Hub::MM)
}
