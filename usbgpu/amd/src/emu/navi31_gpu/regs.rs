//! BAR5 byte offsets of the Navi31 registers the model gives behaviour to (docs/hw/amd-gpu.md §2).
//!
//! Offsets are `(IP segment base + register offset) × 4` for the default Navi31 base table; the
//! same bases are published in the model's discovery table (`discovery.rs`), so a driver that
//! computes offsets from discovery lands on these numbers. Registers not listed here are plain
//! storage (read back what was written).

// NBIO 4.3 (BIF/RCC).
pub const MM_INDEX: u64 = 0x0;
pub const MM_DATA: u64 = 0x4;
pub const MM_INDEX_HI: u64 = 0x18;
pub const RSMU_INDEX: u64 = 0x50;
pub const RSMU_DATA: u64 = 0x54;
pub const RCC_CONFIG_MEMSIZE: u64 = 0x378C;
pub const HDP_FLUSH_REQ: u64 = 0x3898;
pub const HDP_FLUSH_DONE: u64 = 0x389C;
pub const REMAP_HDP_MEM_FLUSH_CNTL: u64 = 0x3934;
/// Where the model's HDP-flush remap points (docs/hw/amd-gpu.md §2.2, emulator choice).
pub const HDP_REMAP_TARGET: u64 = 0x7F000;

// GC 11.0.0.
pub const CP_STAT: u64 = 0x8680;
pub const GCVM_L2_PROTECTION_FAULT_STATUS: u64 = 0xA0A0;
pub const GCVM_L2_PROTECTION_FAULT_ADDR_LO32: u64 = 0xA0A4;
pub const GCVM_L2_PROTECTION_FAULT_ADDR_HI32: u64 = 0xA0A8;
pub const GCMC_VM_FB_LOCATION_BASE: u64 = 0xA360;
pub const GCMC_VM_FB_LOCATION_TOP: u64 = 0xA364;
pub const GCVM_CONTEXT0_CNTL: u64 = 0xA3A0;
pub const GCVM_INVALIDATE_ENG17_SEM: u64 = 0xA428;
pub const GCVM_INVALIDATE_ENG17_REQ: u64 = 0xA470;
pub const GCVM_INVALIDATE_ENG17_ACK: u64 = 0xA4B8;
pub const GCVM_CONTEXT0_BASE_LO32: u64 = 0xA54C;
pub const GCVM_CONTEXT0_START_LO32: u64 = 0xA5CC;
pub const GCVM_CONTEXT0_END_LO32: u64 = 0xA64C;

pub const COMPUTE_DISPATCH_INITIATOR: u64 = 0xB800;
pub const COMPUTE_START_X: u64 = 0xB810;
pub const COMPUTE_NUM_THREAD_X: u64 = 0xB81C;
pub const COMPUTE_PGM_LO: u64 = 0xB830;
pub const COMPUTE_PGM_HI: u64 = 0xB834;
pub const COMPUTE_PGM_RSRC1: u64 = 0xB848;
pub const COMPUTE_PGM_RSRC2: u64 = 0xB84C;
pub const COMPUTE_TMPRING_SIZE: u64 = 0xB860;
pub const COMPUTE_PGM_RSRC3: u64 = 0xB8A0;
pub const COMPUTE_USER_DATA_0: u64 = 0xB900;

/// First and last register of the per-queue HQD bank (banked by `GRBM_GFX_CNTL`).
pub const HQD_FIRST: u64 = 0xC824;
pub const HQD_LAST: u64 = 0xC900;
pub const CP_HQD_ACTIVE: u64 = 0xC82C;
pub const CP_HQD_PQ_BASE: u64 = 0xC844;
pub const CP_HQD_PQ_BASE_HI: u64 = 0xC848;
pub const CP_HQD_PQ_RPTR: u64 = 0xC84C;
pub const CP_HQD_PQ_RPTR_REPORT_ADDR: u64 = 0xC850;
pub const CP_HQD_PQ_RPTR_REPORT_ADDR_HI: u64 = 0xC854;
pub const CP_HQD_PQ_DOORBELL_CONTROL: u64 = 0xC860;
pub const CP_HQD_PQ_CONTROL: u64 = 0xC868;
pub const CP_HQD_DEQUEUE_REQUEST: u64 = 0xC884;
pub const CP_HQD_PQ_WPTR_LO: u64 = 0xC8FC;

pub const GRBM_GFX_CNTL: u64 = 0x2A400;
pub const RLC_SAFE_MODE: u64 = 0x2A600;
pub const RLC_RLCS_BOOTLOAD_STATUS: u64 = 0x3BA08;

// SDMA 6.0 (queue 0 of engine 0).
pub const SDMA0_QUEUE0_RB_CNTL: u64 = 0x4B80;
pub const SDMA0_QUEUE0_RB_BASE: u64 = 0x4B84;
pub const SDMA0_QUEUE0_RB_BASE_HI: u64 = 0x4B88;
pub const SDMA0_QUEUE0_RB_RPTR: u64 = 0x4B8C;
pub const SDMA0_QUEUE0_RB_RPTR_HI: u64 = 0x4B90;
pub const SDMA0_QUEUE0_RB_RPTR_ADDR_HI: u64 = 0x4BA0;
pub const SDMA0_QUEUE0_RB_RPTR_ADDR_LO: u64 = 0x4BA4;
pub const SDMA0_QUEUE0_DOORBELL: u64 = 0x4BC8;
pub const SDMA0_QUEUE0_DOORBELL_OFFSET: u64 = 0x4C2C;

// OSSSYS 6.0 (IH) is plain storage.

// MP0/MP1 13.0.0 mailboxes.
pub const MP0_C2PMSG_35: u64 = 0x5818C;
pub const MP0_C2PMSG_36: u64 = 0x58190;
pub const MP0_C2PMSG_64: u64 = 0x58200;
pub const MP0_C2PMSG_67: u64 = 0x5820C;
pub const MP0_C2PMSG_69: u64 = 0x58214;
pub const MP0_C2PMSG_70: u64 = 0x58218;
pub const MP0_C2PMSG_71: u64 = 0x5821C;
pub const MP0_C2PMSG_81: u64 = 0x58244;
pub const MP1_C2PMSG_53: u64 = 0x589D4;
pub const MP1_C2PMSG_54: u64 = 0x589D8;
pub const MP1_C2PMSG_66: u64 = 0x58A08;
pub const MP1_C2PMSG_75: u64 = 0x58A2C;
pub const MP1_C2PMSG_82: u64 = 0x58A48;
pub const MP1_C2PMSG_90: u64 = 0x58A68;

// MMHUB 3.0.0.
pub const MMVM_L2_PROTECTION_FAULT_STATUS: u64 = 0x69C30;
pub const MMVM_L2_PROTECTION_FAULT_ADDR_LO32: u64 = 0x69C34;
pub const MMVM_L2_PROTECTION_FAULT_ADDR_HI32: u64 = 0x69C38;
pub const MMVM_CONTEXT0_CNTL: u64 = 0x69D00;
pub const MMVM_INVALIDATE_ENG17_SEM: u64 = 0x69D88;
pub const MMVM_INVALIDATE_ENG17_REQ: u64 = 0x69DD0;
pub const MMVM_INVALIDATE_ENG17_ACK: u64 = 0x69E18;
pub const MMVM_CONTEXT0_BASE_LO32: u64 = 0x69EAC;
pub const MMVM_CONTEXT0_START_LO32: u64 = 0x69F2C;
pub const MMVM_CONTEXT0_END_LO32: u64 = 0x69FAC;
pub const MMMC_VM_FB_LOCATION_BASE: u64 = 0x6A3B0;
pub const MMMC_VM_FB_LOCATION_TOP: u64 = 0x6A3B4;
