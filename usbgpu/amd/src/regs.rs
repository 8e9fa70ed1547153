//! Navi31 register addresses as data: each register is (IP block, base segment, dword offset inside
//! the segment), so its BAR5 address follows from whichever base table the IP discovery produced
//! ([`super::ip::IpTable::byte`]). Offsets are the GC 11.0.0 / MMHUB 3.0.0 / NBIO 4.3.0 /
//! MP 13.0.0 / OSSSYS 6.0.0 register files (tinygrad's `autogen/am/regs.py`, which mirrors the Linux
//! `asic_reg` headers); names and the spec's BAR5 byte addresses are checked in
//! `docs/hw/amd-driver.md` and in this module's tests.
use super::ip::Ip;

/// One register: where it lives, not how it is reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reg {
    /// The register's name (for error messages and traces).
    pub name: &'static str,
    /// The IP block whose base table locates it.
    pub ip: Ip,
    /// The base segment index.
    pub seg: u8,
    /// Dword offset inside the segment.
    pub offset: u32,
}

impl Reg {
    /// A register at `offset` dwords in segment `seg` of `ip`.
    pub const fn new(name: &'static str, ip: Ip, seg: u8, offset: u32) -> Reg {
        Reg {
            name,
            ip,
            seg,
            offset,
        }
    }

    /// The `n`-th register of an array whose entries are `stride` dwords apart.
    pub const fn nth(self, n: u32, stride: u32) -> Reg {
        Reg {
            offset: self.offset + n * stride,
            ..self
        }
    }
}

/// `RCC_CONFIG_MEMSIZE` (VRAM size in MiB; docs/hw/amd-driver.md §3: dword 0xDE3 on Navi31 = NBIO
/// seg 2 + 0xC3).
pub const RCC_CONFIG_MEMSIZE: Reg = Reg::new("RCC_CONFIG_MEMSIZE", Ip::Nbio, 2, 0xc3);
/// `MM_INDEX` (small-BAR VRAM window, fixed BAR5 dword 0).
pub const MM_INDEX: Reg = Reg::new("MM_INDEX", Ip::Nbio, 0, 0x0);
/// `MM_DATA`.
pub const MM_DATA: Reg = Reg::new("MM_DATA", Ip::Nbio, 0, 0x1);
/// `MM_INDEX_HI`.
pub const MM_INDEX_HI: Reg = Reg::new("MM_INDEX_HI", Ip::Nbio, 0, 0x6);
pub const RCC_DEV0_EPF2_STRAP2: Reg = Reg::new("RCC_DEV0_EPF2_STRAP2", Ip::Nbio, 5, 0xd102);
pub const RCC_DEV0_EPF0_RCC_DOORBELL_APER_EN: Reg =
    Reg::new("RCC_DEV0_EPF0_RCC_DOORBELL_APER_EN", Ip::Nbio, 2, 0xc0);
pub const BIF_BX_PF0_RSMU_INDEX: Reg = Reg::new("BIF_BX_PF0_RSMU_INDEX", Ip::Nbio, 1, 0x0);
pub const BIF_BX_PF0_RSMU_DATA: Reg = Reg::new("BIF_BX_PF0_RSMU_DATA", Ip::Nbio, 1, 0x1);
pub const BIF_BX_PF0_GPU_HDP_FLUSH_REQ: Reg =
    Reg::new("BIF_BX_PF0_GPU_HDP_FLUSH_REQ", Ip::Nbio, 2, 0x106);
pub const BIF_BX_PF0_GPU_HDP_FLUSH_DONE: Reg =
    Reg::new("BIF_BX_PF0_GPU_HDP_FLUSH_DONE", Ip::Nbio, 2, 0x107);
pub const BIF_BX0_REMAP_HDP_MEM_FLUSH_CNTL: Reg =
    Reg::new("BIF_BX0_REMAP_HDP_MEM_FLUSH_CNTL", Ip::Nbio, 2, 0x12d);
pub const S2A_DOORBELL_ENTRY_0_CTRL: Reg =
    Reg::new("S2A_DOORBELL_ENTRY_0_CTRL", Ip::Nbio, 3, 0x4f7640);
pub const S2A_DOORBELL_ENTRY_2_CTRL: Reg =
    Reg::new("S2A_DOORBELL_ENTRY_2_CTRL", Ip::Nbio, 3, 0x4f7642);
pub const S2A_DOORBELL_ENTRY_3_CTRL: Reg =
    Reg::new("S2A_DOORBELL_ENTRY_3_CTRL", Ip::Nbio, 3, 0x4f7643);
pub const MMMC_VM_FB_LOCATION_BASE: Reg = Reg::new("MMMC_VM_FB_LOCATION_BASE", Ip::Mmhub, 0, 0x8ec);
pub const MMMC_VM_FB_LOCATION_TOP: Reg = Reg::new("MMMC_VM_FB_LOCATION_TOP", Ip::Mmhub, 0, 0x8ed);
pub const MMMC_VM_AGP_BASE: Reg = Reg::new("MMMC_VM_AGP_BASE", Ip::Mmhub, 0, 0x8f0);
pub const MMMC_VM_AGP_BOT: Reg = Reg::new("MMMC_VM_AGP_BOT", Ip::Mmhub, 0, 0x8ef);
pub const MMMC_VM_AGP_TOP: Reg = Reg::new("MMMC_VM_AGP_TOP", Ip::Mmhub, 0, 0x8ee);
pub const MMMC_VM_SYSTEM_APERTURE_LOW_ADDR: Reg =
    Reg::new("MMMC_VM_SYSTEM_APERTURE_LOW_ADDR", Ip::Mmhub, 0, 0x8f1);
pub const MMMC_VM_SYSTEM_APERTURE_HIGH_ADDR: Reg =
    Reg::new("MMMC_VM_SYSTEM_APERTURE_HIGH_ADDR", Ip::Mmhub, 0, 0x8f2);
pub const MMMC_VM_SYSTEM_APERTURE_DEFAULT_ADDR_LSB: Reg = Reg::new(
    "MMMC_VM_SYSTEM_APERTURE_DEFAULT_ADDR_LSB",
    Ip::Mmhub,
    0,
    0x8d8,
);
pub const MMMC_VM_SYSTEM_APERTURE_DEFAULT_ADDR_MSB: Reg = Reg::new(
    "MMMC_VM_SYSTEM_APERTURE_DEFAULT_ADDR_MSB",
    Ip::Mmhub,
    0,
    0x8d9,
);
pub const MMVM_L2_PROTECTION_FAULT_DEFAULT_ADDR_LO32: Reg = Reg::new(
    "MMVM_L2_PROTECTION_FAULT_DEFAULT_ADDR_LO32",
    Ip::Mmhub,
    0,
    0x70f,
);
pub const MMVM_L2_PROTECTION_FAULT_DEFAULT_ADDR_HI32: Reg = Reg::new(
    "MMVM_L2_PROTECTION_FAULT_DEFAULT_ADDR_HI32",
    Ip::Mmhub,
    0,
    0x710,
);
pub const MMVM_L2_PROTECTION_FAULT_STATUS: Reg =
    Reg::new("MMVM_L2_PROTECTION_FAULT_STATUS", Ip::Mmhub, 0, 0x70c);
pub const MMMC_VM_MX_L1_TLB_CNTL: Reg = Reg::new("MMMC_VM_MX_L1_TLB_CNTL", Ip::Mmhub, 0, 0x8f3);
pub const MMVM_L2_CNTL: Reg = Reg::new("MMVM_L2_CNTL", Ip::Mmhub, 0, 0x700);
pub const MMVM_L2_CNTL2: Reg = Reg::new("MMVM_L2_CNTL2", Ip::Mmhub, 0, 0x701);
pub const MMVM_L2_CNTL3: Reg = Reg::new("MMVM_L2_CNTL3", Ip::Mmhub, 0, 0x702);
pub const MMVM_L2_CNTL4: Reg = Reg::new("MMVM_L2_CNTL4", Ip::Mmhub, 0, 0x718);
pub const MMVM_L2_CNTL5: Reg = Reg::new("MMVM_L2_CNTL5", Ip::Mmhub, 0, 0x71e);
pub const MMVM_CONTEXT0_CNTL: Reg = Reg::new("MMVM_CONTEXT0_CNTL", Ip::Mmhub, 0, 0x740);
pub const MMVM_CONTEXT0_PAGE_TABLE_BASE_ADDR_LO32: Reg = Reg::new(
    "MMVM_CONTEXT0_PAGE_TABLE_BASE_ADDR_LO32",
    Ip::Mmhub,
    0,
    0x7ab,
);
pub const MMVM_CONTEXT0_PAGE_TABLE_BASE_ADDR_HI32: Reg = Reg::new(
    "MMVM_CONTEXT0_PAGE_TABLE_BASE_ADDR_HI32",
    Ip::Mmhub,
    0,
    0x7ac,
);
pub const MMVM_CONTEXT0_PAGE_TABLE_START_ADDR_LO32: Reg = Reg::new(
    "MMVM_CONTEXT0_PAGE_TABLE_START_ADDR_LO32",
    Ip::Mmhub,
    0,
    0x7cb,
);
pub const MMVM_CONTEXT0_PAGE_TABLE_START_ADDR_HI32: Reg = Reg::new(
    "MMVM_CONTEXT0_PAGE_TABLE_START_ADDR_HI32",
    Ip::Mmhub,
    0,
    0x7cc,
);
pub const MMVM_CONTEXT0_PAGE_TABLE_END_ADDR_LO32: Reg = Reg::new(
    "MMVM_CONTEXT0_PAGE_TABLE_END_ADDR_LO32",
    Ip::Mmhub,
    0,
    0x7eb,
);
pub const MMVM_CONTEXT0_PAGE_TABLE_END_ADDR_HI32: Reg = Reg::new(
    "MMVM_CONTEXT0_PAGE_TABLE_END_ADDR_HI32",
    Ip::Mmhub,
    0,
    0x7ec,
);
pub const MMVM_INVALIDATE_ENG17_SEM: Reg =
    Reg::new("MMVM_INVALIDATE_ENG17_SEM", Ip::Mmhub, 0, 0x762);
pub const MMVM_INVALIDATE_ENG17_REQ: Reg =
    Reg::new("MMVM_INVALIDATE_ENG17_REQ", Ip::Mmhub, 0, 0x774);
pub const MMVM_INVALIDATE_ENG17_ACK: Reg =
    Reg::new("MMVM_INVALIDATE_ENG17_ACK", Ip::Mmhub, 0, 0x786);
pub const MMVM_INVALIDATE_ENG0_ADDR_RANGE_LO32: Reg =
    Reg::new("MMVM_INVALIDATE_ENG0_ADDR_RANGE_LO32", Ip::Mmhub, 0, 0x787);
pub const MMVM_INVALIDATE_ENG0_ADDR_RANGE_HI32: Reg =
    Reg::new("MMVM_INVALIDATE_ENG0_ADDR_RANGE_HI32", Ip::Mmhub, 0, 0x788);
pub const MMVM_INVALIDATE_ENG1_ADDR_RANGE_LO32: Reg =
    Reg::new("MMVM_INVALIDATE_ENG1_ADDR_RANGE_LO32", Ip::Mmhub, 0, 0x789);
pub const GCMC_VM_FB_LOCATION_BASE: Reg = Reg::new("GCMC_VM_FB_LOCATION_BASE", Ip::Gc, 0, 0x1678);
pub const GCMC_VM_FB_LOCATION_TOP: Reg = Reg::new("GCMC_VM_FB_LOCATION_TOP", Ip::Gc, 0, 0x1679);
pub const GCMC_VM_AGP_BASE: Reg = Reg::new("GCMC_VM_AGP_BASE", Ip::Gc, 0, 0x167c);
pub const GCMC_VM_AGP_BOT: Reg = Reg::new("GCMC_VM_AGP_BOT", Ip::Gc, 0, 0x167b);
pub const GCMC_VM_AGP_TOP: Reg = Reg::new("GCMC_VM_AGP_TOP", Ip::Gc, 0, 0x167a);
pub const GCMC_VM_SYSTEM_APERTURE_LOW_ADDR: Reg =
    Reg::new("GCMC_VM_SYSTEM_APERTURE_LOW_ADDR", Ip::Gc, 0, 0x167d);
pub const GCMC_VM_SYSTEM_APERTURE_HIGH_ADDR: Reg =
    Reg::new("GCMC_VM_SYSTEM_APERTURE_HIGH_ADDR", Ip::Gc, 0, 0x167e);
pub const GCMC_VM_SYSTEM_APERTURE_DEFAULT_ADDR_LSB: Reg = Reg::new(
    "GCMC_VM_SYSTEM_APERTURE_DEFAULT_ADDR_LSB",
    Ip::Gc,
    0,
    0x15a8,
);
pub const GCMC_VM_SYSTEM_APERTURE_DEFAULT_ADDR_MSB: Reg = Reg::new(
    "GCMC_VM_SYSTEM_APERTURE_DEFAULT_ADDR_MSB",
    Ip::Gc,
    0,
    0x15a9,
);
pub const GCVM_L2_PROTECTION_FAULT_DEFAULT_ADDR_LO32: Reg = Reg::new(
    "GCVM_L2_PROTECTION_FAULT_DEFAULT_ADDR_LO32",
    Ip::Gc,
    0,
    0x15cb,
);
pub const GCVM_L2_PROTECTION_FAULT_DEFAULT_ADDR_HI32: Reg = Reg::new(
    "GCVM_L2_PROTECTION_FAULT_DEFAULT_ADDR_HI32",
    Ip::Gc,
    0,
    0x15cc,
);
pub const GCVM_L2_PROTECTION_FAULT_STATUS: Reg =
    Reg::new("GCVM_L2_PROTECTION_FAULT_STATUS", Ip::Gc, 0, 0x15c8);
pub const GCMC_VM_MX_L1_TLB_CNTL: Reg = Reg::new("GCMC_VM_MX_L1_TLB_CNTL", Ip::Gc, 0, 0x167f);
pub const GCVM_L2_CNTL: Reg = Reg::new("GCVM_L2_CNTL", Ip::Gc, 0, 0x15bc);
pub const GCVM_L2_CNTL2: Reg = Reg::new("GCVM_L2_CNTL2", Ip::Gc, 0, 0x15bd);
pub const GCVM_L2_CNTL3: Reg = Reg::new("GCVM_L2_CNTL3", Ip::Gc, 0, 0x15be);
pub const GCVM_L2_CNTL4: Reg = Reg::new("GCVM_L2_CNTL4", Ip::Gc, 0, 0x15d4);
pub const GCVM_L2_CNTL5: Reg = Reg::new("GCVM_L2_CNTL5", Ip::Gc, 0, 0x15da);
pub const GCVM_CONTEXT0_CNTL: Reg = Reg::new("GCVM_CONTEXT0_CNTL", Ip::Gc, 0, 0x1688);
pub const GCVM_CONTEXT0_PAGE_TABLE_BASE_ADDR_LO32: Reg =
    Reg::new("GCVM_CONTEXT0_PAGE_TABLE_BASE_ADDR_LO32", Ip::Gc, 0, 0x16f3);
pub const GCVM_CONTEXT0_PAGE_TABLE_BASE_ADDR_HI32: Reg =
    Reg::new("GCVM_CONTEXT0_PAGE_TABLE_BASE_ADDR_HI32", Ip::Gc, 0, 0x16f4);
pub const GCVM_CONTEXT0_PAGE_TABLE_START_ADDR_LO32: Reg = Reg::new(
    "GCVM_CONTEXT0_PAGE_TABLE_START_ADDR_LO32",
    Ip::Gc,
    0,
    0x1713,
);
pub const GCVM_CONTEXT0_PAGE_TABLE_START_ADDR_HI32: Reg = Reg::new(
    "GCVM_CONTEXT0_PAGE_TABLE_START_ADDR_HI32",
    Ip::Gc,
    0,
    0x1714,
);
pub const GCVM_CONTEXT0_PAGE_TABLE_END_ADDR_LO32: Reg =
    Reg::new("GCVM_CONTEXT0_PAGE_TABLE_END_ADDR_LO32", Ip::Gc, 0, 0x1733);
pub const GCVM_CONTEXT0_PAGE_TABLE_END_ADDR_HI32: Reg =
    Reg::new("GCVM_CONTEXT0_PAGE_TABLE_END_ADDR_HI32", Ip::Gc, 0, 0x1734);
pub const GCVM_INVALIDATE_ENG17_SEM: Reg = Reg::new("GCVM_INVALIDATE_ENG17_SEM", Ip::Gc, 0, 0x16aa);
pub const GCVM_INVALIDATE_ENG17_REQ: Reg = Reg::new("GCVM_INVALIDATE_ENG17_REQ", Ip::Gc, 0, 0x16bc);
pub const GCVM_INVALIDATE_ENG17_ACK: Reg = Reg::new("GCVM_INVALIDATE_ENG17_ACK", Ip::Gc, 0, 0x16ce);
pub const GCVM_INVALIDATE_ENG0_ADDR_RANGE_LO32: Reg =
    Reg::new("GCVM_INVALIDATE_ENG0_ADDR_RANGE_LO32", Ip::Gc, 0, 0x16cf);
pub const GCVM_INVALIDATE_ENG0_ADDR_RANGE_HI32: Reg =
    Reg::new("GCVM_INVALIDATE_ENG0_ADDR_RANGE_HI32", Ip::Gc, 0, 0x16d0);
pub const GCVM_INVALIDATE_ENG1_ADDR_RANGE_LO32: Reg =
    Reg::new("GCVM_INVALIDATE_ENG1_ADDR_RANGE_LO32", Ip::Gc, 0, 0x16d1);
pub const SCRATCH_REG6: Reg = Reg::new("SCRATCH_REG6", Ip::Gc, 1, 0x2046);
pub const SCRATCH_REG7: Reg = Reg::new("SCRATCH_REG7", Ip::Gc, 1, 0x2047);
pub const CP_STAT: Reg = Reg::new("CP_STAT", Ip::Gc, 0, 0xf40);
pub const RLC_RLCS_BOOTLOAD_STATUS: Reg = Reg::new("RLC_RLCS_BOOTLOAD_STATUS", Ip::Gc, 1, 0x4e82);
pub const GRBM_GFX_CNTL: Reg = Reg::new("GRBM_GFX_CNTL", Ip::Gc, 1, 0x900);
pub const GRBM_CNTL: Reg = Reg::new("GRBM_CNTL", Ip::Gc, 0, 0xda0);
pub const GRBM_SOFT_RESET: Reg = Reg::new("GRBM_SOFT_RESET", Ip::Gc, 0, 0xda8);
pub const CP_MEC_RS64_PRGRM_CNTR_START: Reg =
    Reg::new("CP_MEC_RS64_PRGRM_CNTR_START", Ip::Gc, 1, 0x2900);
pub const CP_MEC_RS64_PRGRM_CNTR_START_HI: Reg =
    Reg::new("CP_MEC_RS64_PRGRM_CNTR_START_HI", Ip::Gc, 1, 0x2938);
pub const CP_MEC_RS64_CNTL: Reg = Reg::new("CP_MEC_RS64_CNTL", Ip::Gc, 1, 0x2904);
pub const TCP_CNTL: Reg = Reg::new("TCP_CNTL", Ip::Gc, 1, 0x19a2);
pub const RLC_CNTL: Reg = Reg::new("RLC_CNTL", Ip::Gc, 1, 0x4c00);
pub const RLC_SRM_CNTL: Reg = Reg::new("RLC_SRM_CNTL", Ip::Gc, 1, 0x4c80);
pub const RLC_SPM_MC_CNTL: Reg = Reg::new("RLC_SPM_MC_CNTL", Ip::Gc, 1, 0x982);
pub const SH_MEM_CONFIG: Reg = Reg::new("SH_MEM_CONFIG", Ip::Gc, 1, 0x9e4);
pub const SH_MEM_BASES: Reg = Reg::new("SH_MEM_BASES", Ip::Gc, 1, 0x9e3);
pub const CP_MEC_DOORBELL_RANGE_LOWER: Reg =
    Reg::new("CP_MEC_DOORBELL_RANGE_LOWER", Ip::Gc, 0, 0x1dfc);
pub const CP_MEC_DOORBELL_RANGE_UPPER: Reg =
    Reg::new("CP_MEC_DOORBELL_RANGE_UPPER", Ip::Gc, 0, 0x1dfd);
pub const CP_MEC_CNTL: Reg = Reg::new("CP_MEC_CNTL", Ip::Gc, 1, 0x802);
pub const SPI_COMPUTE_QUEUE_RESET: Reg = Reg::new("SPI_COMPUTE_QUEUE_RESET", Ip::Gc, 0, 0x1f73);
pub const CP_MQD_BASE_ADDR: Reg = Reg::new("CP_MQD_BASE_ADDR", Ip::Gc, 0, 0x1fa9);
pub const CP_HQD_ACTIVE: Reg = Reg::new("CP_HQD_ACTIVE", Ip::Gc, 0, 0x1fab);
pub const CP_HQD_PQ_WPTR_HI: Reg = Reg::new("CP_HQD_PQ_WPTR_HI", Ip::Gc, 0, 0x1fe0);
pub const CP_HQD_DEQUEUE_REQUEST: Reg = Reg::new("CP_HQD_DEQUEUE_REQUEST", Ip::Gc, 0, 0x1fc1);
pub const CP_HQD_PQ_DOORBELL_CONTROL: Reg =
    Reg::new("CP_HQD_PQ_DOORBELL_CONTROL", Ip::Gc, 0, 0x1fb8);
pub const SDMA0_WATCHDOG_CNTL: Reg = Reg::new("SDMA0_WATCHDOG_CNTL", Ip::Sdma0, 0, 0x2e);
pub const SDMA0_UTCL1_CNTL: Reg = Reg::new("SDMA0_UTCL1_CNTL", Ip::Sdma0, 0, 0x3c);
pub const SDMA0_UTCL1_PAGE: Reg = Reg::new("SDMA0_UTCL1_PAGE", Ip::Sdma0, 0, 0x3f);
pub const SDMA0_F32_CNTL: Reg = Reg::new("SDMA0_F32_CNTL", Ip::Sdma0, 1, 0x589a);
pub const SDMA0_CNTL: Reg = Reg::new("SDMA0_CNTL", Ip::Sdma0, 0, 0x1c);
pub const SDMA0_QUEUE0_RB_CNTL: Reg = Reg::new("SDMA0_QUEUE0_RB_CNTL", Ip::Sdma0, 0, 0x80);
pub const SDMA0_QUEUE0_RB_BASE: Reg = Reg::new("SDMA0_QUEUE0_RB_BASE", Ip::Sdma0, 0, 0x81);
pub const SDMA0_QUEUE0_RB_BASE_HI: Reg = Reg::new("SDMA0_QUEUE0_RB_BASE_HI", Ip::Sdma0, 0, 0x82);
pub const SDMA0_QUEUE0_RB_RPTR: Reg = Reg::new("SDMA0_QUEUE0_RB_RPTR", Ip::Sdma0, 0, 0x83);
pub const SDMA0_QUEUE0_RB_RPTR_HI: Reg = Reg::new("SDMA0_QUEUE0_RB_RPTR_HI", Ip::Sdma0, 0, 0x84);
pub const SDMA0_QUEUE0_RB_WPTR: Reg = Reg::new("SDMA0_QUEUE0_RB_WPTR", Ip::Sdma0, 0, 0x85);
pub const SDMA0_QUEUE0_RB_WPTR_HI: Reg = Reg::new("SDMA0_QUEUE0_RB_WPTR_HI", Ip::Sdma0, 0, 0x86);
pub const SDMA0_QUEUE0_RB_RPTR_ADDR_LO: Reg =
    Reg::new("SDMA0_QUEUE0_RB_RPTR_ADDR_LO", Ip::Sdma0, 0, 0x89);
pub const SDMA0_QUEUE0_RB_RPTR_ADDR_HI: Reg =
    Reg::new("SDMA0_QUEUE0_RB_RPTR_ADDR_HI", Ip::Sdma0, 0, 0x88);
pub const SDMA0_QUEUE0_RB_WPTR_POLL_ADDR_LO: Reg =
    Reg::new("SDMA0_QUEUE0_RB_WPTR_POLL_ADDR_LO", Ip::Sdma0, 0, 0xb3);
pub const SDMA0_QUEUE0_RB_WPTR_POLL_ADDR_HI: Reg =
    Reg::new("SDMA0_QUEUE0_RB_WPTR_POLL_ADDR_HI", Ip::Sdma0, 0, 0xb2);
pub const SDMA0_QUEUE0_DOORBELL: Reg = Reg::new("SDMA0_QUEUE0_DOORBELL", Ip::Sdma0, 0, 0x92);
pub const SDMA0_QUEUE0_DOORBELL_OFFSET: Reg =
    Reg::new("SDMA0_QUEUE0_DOORBELL_OFFSET", Ip::Sdma0, 0, 0xab);
pub const SDMA0_QUEUE0_MINOR_PTR_UPDATE: Reg =
    Reg::new("SDMA0_QUEUE0_MINOR_PTR_UPDATE", Ip::Sdma0, 0, 0xb5);
pub const SDMA0_QUEUE0_IB_CNTL: Reg = Reg::new("SDMA0_QUEUE0_IB_CNTL", Ip::Sdma0, 0, 0x8a);
pub const IH_RB_CNTL: Reg = Reg::new("IH_RB_CNTL", Ip::Osssys, 0, 0x80);
pub const IH_RB_BASE: Reg = Reg::new("IH_RB_BASE", Ip::Osssys, 0, 0x81);
pub const IH_RB_BASE_HI: Reg = Reg::new("IH_RB_BASE_HI", Ip::Osssys, 0, 0x82);
pub const IH_RB_RPTR: Reg = Reg::new("IH_RB_RPTR", Ip::Osssys, 0, 0x83);
pub const IH_RB_WPTR: Reg = Reg::new("IH_RB_WPTR", Ip::Osssys, 0, 0x84);
pub const IH_RB_WPTR_ADDR_LO: Reg = Reg::new("IH_RB_WPTR_ADDR_LO", Ip::Osssys, 0, 0x86);
pub const IH_RB_WPTR_ADDR_HI: Reg = Reg::new("IH_RB_WPTR_ADDR_HI", Ip::Osssys, 0, 0x85);
pub const IH_DOORBELL_RPTR: Reg = Reg::new("IH_DOORBELL_RPTR", Ip::Osssys, 0, 0x87);
pub const IH_RB_CNTL_RING1: Reg = Reg::new("IH_RB_CNTL_RING1", Ip::Osssys, 0, 0x8c);
pub const IH_RB_BASE_RING1: Reg = Reg::new("IH_RB_BASE_RING1", Ip::Osssys, 0, 0x8d);
pub const IH_RB_BASE_HI_RING1: Reg = Reg::new("IH_RB_BASE_HI_RING1", Ip::Osssys, 0, 0x8e);
pub const IH_RB_RPTR_RING1: Reg = Reg::new("IH_RB_RPTR_RING1", Ip::Osssys, 0, 0x8f);
pub const IH_RB_WPTR_RING1: Reg = Reg::new("IH_RB_WPTR_RING1", Ip::Osssys, 0, 0x90);
pub const IH_DOORBELL_RPTR_RING1: Reg = Reg::new("IH_DOORBELL_RPTR_RING1", Ip::Osssys, 0, 0x93);
pub const IH_STORM_CLIENT_LIST_CNTL: Reg =
    Reg::new("IH_STORM_CLIENT_LIST_CNTL", Ip::Osssys, 0, 0xda);
pub const IH_INT_FLOOD_CNTL: Reg = Reg::new("IH_INT_FLOOD_CNTL", Ip::Osssys, 0, 0xd5);
pub const IH_MSI_STORM_CTRL: Reg = Reg::new("IH_MSI_STORM_CTRL", Ip::Osssys, 0, 0xf1);
pub const IH_CNTL: Reg = Reg::new("IH_CNTL", Ip::Osssys, 0, 0xc0);
pub const MP0_SMN_C2PMSG_35: Reg = Reg::new("MP0_SMN_C2PMSG_35", Ip::Mp0, 0, 0x63);
pub const MP0_SMN_C2PMSG_36: Reg = Reg::new("MP0_SMN_C2PMSG_36", Ip::Mp0, 0, 0x64);
pub const MP0_SMN_C2PMSG_64: Reg = Reg::new("MP0_SMN_C2PMSG_64", Ip::Mp0, 0, 0x80);
pub const MP0_SMN_C2PMSG_67: Reg = Reg::new("MP0_SMN_C2PMSG_67", Ip::Mp0, 0, 0x83);
pub const MP0_SMN_C2PMSG_69: Reg = Reg::new("MP0_SMN_C2PMSG_69", Ip::Mp0, 0, 0x85);
pub const MP0_SMN_C2PMSG_70: Reg = Reg::new("MP0_SMN_C2PMSG_70", Ip::Mp0, 0, 0x86);
pub const MP0_SMN_C2PMSG_71: Reg = Reg::new("MP0_SMN_C2PMSG_71", Ip::Mp0, 0, 0x87);
pub const MP0_SMN_C2PMSG_81: Reg = Reg::new("MP0_SMN_C2PMSG_81", Ip::Mp0, 0, 0x91);
pub const MP1_SMN_C2PMSG_66: Reg = Reg::new("MP1_SMN_C2PMSG_66", Ip::Mp1, 0, 0x282);
pub const MP1_SMN_C2PMSG_82: Reg = Reg::new("MP1_SMN_C2PMSG_82", Ip::Mp1, 0, 0x292);
pub const MP1_SMN_C2PMSG_90: Reg = Reg::new("MP1_SMN_C2PMSG_90", Ip::Mp1, 0, 0x29a);
pub const MP1_SMN_C2PMSG_75: Reg = Reg::new("MP1_SMN_C2PMSG_75", Ip::Mp1, 0, 0x28b);
pub const MP1_SMN_C2PMSG_53: Reg = Reg::new("MP1_SMN_C2PMSG_53", Ip::Mp1, 0, 0x275);
pub const MP1_SMN_C2PMSG_54: Reg = Reg::new("MP1_SMN_C2PMSG_54", Ip::Mp1, 0, 0x276);

// Compute shader registers (GC seg 0), programmed by PM4 SET_SH_REG from the command stream.
pub const COMPUTE_DISPATCH_INITIATOR: Reg =
    Reg::new("COMPUTE_DISPATCH_INITIATOR", Ip::Gc, 0, 0x1ba0);
pub const COMPUTE_START_X: Reg = Reg::new("COMPUTE_START_X", Ip::Gc, 0, 0x1ba4);
pub const COMPUTE_NUM_THREAD_X: Reg = Reg::new("COMPUTE_NUM_THREAD_X", Ip::Gc, 0, 0x1ba7);
pub const COMPUTE_PGM_LO: Reg = Reg::new("COMPUTE_PGM_LO", Ip::Gc, 0, 0x1bac);
pub const COMPUTE_DISPATCH_SCRATCH_BASE_LO: Reg =
    Reg::new("COMPUTE_DISPATCH_SCRATCH_BASE_LO", Ip::Gc, 0, 0x1bb0);
pub const COMPUTE_PGM_RSRC1: Reg = Reg::new("COMPUTE_PGM_RSRC1", Ip::Gc, 0, 0x1bb2);
pub const COMPUTE_RESOURCE_LIMITS: Reg = Reg::new("COMPUTE_RESOURCE_LIMITS", Ip::Gc, 0, 0x1bb5);
pub const COMPUTE_TMPRING_SIZE: Reg = Reg::new("COMPUTE_TMPRING_SIZE", Ip::Gc, 0, 0x1bb8);
pub const COMPUTE_RESTART_X: Reg = Reg::new("COMPUTE_RESTART_X", Ip::Gc, 0, 0x1bbb);
pub const COMPUTE_PGM_RSRC3: Reg = Reg::new("COMPUTE_PGM_RSRC3", Ip::Gc, 0, 0x1bc8);
pub const COMPUTE_USER_DATA_0: Reg = Reg::new("COMPUTE_USER_DATA_0", Ip::Gc, 0, 0x1be0);

// Hardware queue descriptor registers loaded from the MQD.
pub const CP_MQD_BASE_ADDR_HI: Reg = Reg::new("CP_MQD_BASE_ADDR_HI", Ip::Gc, 0, 0x1faa);
pub const CP_HQD_PERSISTENT_STATE: Reg = Reg::new("CP_HQD_PERSISTENT_STATE", Ip::Gc, 0, 0x1fad);
pub const CP_HQD_PIPE_PRIORITY: Reg = Reg::new("CP_HQD_PIPE_PRIORITY", Ip::Gc, 0, 0x1fae);
pub const CP_HQD_QUEUE_PRIORITY: Reg = Reg::new("CP_HQD_QUEUE_PRIORITY", Ip::Gc, 0, 0x1faf);
pub const CP_HQD_QUANTUM: Reg = Reg::new("CP_HQD_QUANTUM", Ip::Gc, 0, 0x1fb0);
pub const CP_HQD_PQ_BASE: Reg = Reg::new("CP_HQD_PQ_BASE", Ip::Gc, 0, 0x1fb1);
pub const CP_HQD_PQ_BASE_HI: Reg = Reg::new("CP_HQD_PQ_BASE_HI", Ip::Gc, 0, 0x1fb2);
pub const CP_HQD_PQ_RPTR_REPORT_ADDR: Reg =
    Reg::new("CP_HQD_PQ_RPTR_REPORT_ADDR", Ip::Gc, 0, 0x1fb4);
pub const CP_HQD_PQ_RPTR_REPORT_ADDR_HI: Reg =
    Reg::new("CP_HQD_PQ_RPTR_REPORT_ADDR_HI", Ip::Gc, 0, 0x1fb5);
pub const CP_HQD_PQ_WPTR_POLL_ADDR: Reg = Reg::new("CP_HQD_PQ_WPTR_POLL_ADDR", Ip::Gc, 0, 0x1fb6);
pub const CP_HQD_PQ_WPTR_POLL_ADDR_HI: Reg =
    Reg::new("CP_HQD_PQ_WPTR_POLL_ADDR_HI", Ip::Gc, 0, 0x1fb7);
pub const CP_HQD_PQ_CONTROL: Reg = Reg::new("CP_HQD_PQ_CONTROL", Ip::Gc, 0, 0x1fba);
pub const CP_HQD_IB_CONTROL: Reg = Reg::new("CP_HQD_IB_CONTROL", Ip::Gc, 0, 0x1fbe);
pub const CP_HQD_HQ_STATUS0: Reg = Reg::new("CP_HQD_HQ_STATUS0", Ip::Gc, 0, 0x1fc9);
pub const CP_MQD_CONTROL: Reg = Reg::new("CP_MQD_CONTROL", Ip::Gc, 0, 0x1fcb);
pub const CP_HQD_EOP_BASE_ADDR: Reg = Reg::new("CP_HQD_EOP_BASE_ADDR", Ip::Gc, 0, 0x1fce);
pub const CP_HQD_EOP_BASE_ADDR_HI: Reg = Reg::new("CP_HQD_EOP_BASE_ADDR_HI", Ip::Gc, 0, 0x1fcf);
pub const CP_HQD_EOP_CONTROL: Reg = Reg::new("CP_HQD_EOP_CONTROL", Ip::Gc, 0, 0x1fd0);

// Hub fault control and the context-1 identity aperture (6 consecutive registers from LOW_ADDR_LO32).
pub const MMVM_L2_PROTECTION_FAULT_CNTL2: Reg =
    Reg::new("MMVM_L2_PROTECTION_FAULT_CNTL2", Ip::Mmhub, 0, 0x709);
pub const MMVM_L2_CONTEXT1_IDENTITY_APERTURE_LOW_ADDR_LO32: Reg = Reg::new(
    "MMVM_L2_CONTEXT1_IDENTITY_APERTURE_LOW_ADDR_LO32",
    Ip::Mmhub,
    0,
    0x712,
);
pub const GCVM_L2_PROTECTION_FAULT_CNTL2: Reg =
    Reg::new("GCVM_L2_PROTECTION_FAULT_CNTL2", Ip::Gc, 0, 0x15c5);
pub const GCVM_L2_CONTEXT1_IDENTITY_APERTURE_LOW_ADDR_LO32: Reg = Reg::new(
    "GCVM_L2_CONTEXT1_IDENTITY_APERTURE_LOW_ADDR_LO32",
    Ip::Gc,
    0,
    0x15ce,
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::IpTable;

    /// BAR5 byte addresses from the fact sheet's §6 table (computed there from the default Navi
    /// base table), an independent check of (segment, offset) and of the base table.
    #[test]
    fn navi31_addresses_match_the_fact_sheet() {
        let t = IpTable::navi31();
        let cases = [
            (RCC_CONFIG_MEMSIZE, 0x378C),
            (BIF_BX_PF0_RSMU_INDEX, 0x50),
            (BIF_BX_PF0_RSMU_DATA, 0x54),
            (BIF_BX_PF0_GPU_HDP_FLUSH_REQ, 0x3898),
            (BIF_BX_PF0_GPU_HDP_FLUSH_DONE, 0x389C),
            (BIF_BX0_REMAP_HDP_MEM_FLUSH_CNTL, 0x3934),
            (RCC_DEV0_EPF0_RCC_DOORBELL_APER_EN, 0x3780),
            (MP0_SMN_C2PMSG_35, 0x5818C),
            (MP0_SMN_C2PMSG_36, 0x58190),
            (MP0_SMN_C2PMSG_64, 0x58200),
            (MP0_SMN_C2PMSG_67, 0x5820C),
            (MP0_SMN_C2PMSG_69, 0x58214),
            (MP0_SMN_C2PMSG_70, 0x58218),
            (MP0_SMN_C2PMSG_71, 0x5821C),
            (MP0_SMN_C2PMSG_81, 0x58244),
            (MP1_SMN_C2PMSG_66, 0x58A08),
            (MP1_SMN_C2PMSG_82, 0x58A48),
            (MP1_SMN_C2PMSG_90, 0x58A68),
            (MP1_SMN_C2PMSG_75, 0x58A2C),
            (MP1_SMN_C2PMSG_53, 0x589D4),
            (MP1_SMN_C2PMSG_54, 0x589D8),
            (SCRATCH_REG6, 0x30118),
            (SCRATCH_REG7, 0x3011C),
            (CP_STAT, 0x8680),
            (RLC_RLCS_BOOTLOAD_STATUS, 0x3BA08),
            (GRBM_GFX_CNTL, 0x2A400),
            (CP_MQD_BASE_ADDR, 0xC824),
            (CP_HQD_PQ_WPTR_HI, 0xC900),
            (CP_HQD_ACTIVE, 0xC82C),
            (CP_HQD_DEQUEUE_REQUEST, 0xC884),
            (GCVM_INVALIDATE_ENG17_REQ, 0xA470),
            (GCVM_INVALIDATE_ENG17_ACK, 0xA4B8),
            (GCVM_CONTEXT0_PAGE_TABLE_BASE_ADDR_LO32, 0xA54C),
            (MMVM_INVALIDATE_ENG17_SEM, 0x69D88),
            (MMVM_INVALIDATE_ENG17_REQ, 0x69DD0),
            (MMVM_INVALIDATE_ENG17_ACK, 0x69E18),
            (MMMC_VM_FB_LOCATION_BASE, 0x6A3B0),
            (MMMC_VM_FB_LOCATION_TOP, 0x6A3B4),
            (SDMA0_QUEUE0_RB_CNTL, 0x4B80),
            (SDMA0_QUEUE0_RB_BASE, 0x4B84),
            (SDMA0_QUEUE0_DOORBELL, 0x4BC8),
            (SDMA0_QUEUE0_DOORBELL_OFFSET, 0x4C2C),
            (IH_RB_CNTL, 0x4480),
            (IH_RB_BASE, 0x4484),
            (IH_RB_RPTR, 0x448C),
            (IH_RB_WPTR, 0x4490),
            (COMPUTE_DISPATCH_INITIATOR, 0xB800),
            (COMPUTE_PGM_LO, 0xB830),
        ];
        for (reg, byte) in cases {
            assert_eq!(t.byte(reg), Some(byte), "{}", reg.name);
        }
    }
}
