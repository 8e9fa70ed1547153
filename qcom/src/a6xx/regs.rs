//! a6xx register addresses and field values used by the compute path (docs/hw/adreno-kgsl-pm4.md §7, new Mesa names; old names in
//! comments).

pub const SP_UPDATE_CNTL: u32 = 0xBB08; // HLSQ_INVALIDATE_CMD
pub const SP_CS_TSIZE: u32 = 0xA9BA; // SP_CS_TEX_COUNT
pub const SP_CS_USIZE: u32 = 0xAA00; // SP_CS_IBO_COUNT
pub const SP_MODE_CNTL: u32 = 0xAB00; // SP_MODE_CONTROL
pub const SP_PERFCTR_SHADER_MASK: u32 = 0xAE0F; // SP_PERFCTR_ENABLE
pub const TPL1_MODE_CNTL: u32 = 0xB309; // SP_TP_MODE_CNTL
pub const TPL1_DBG_ECO_CNTL: u32 = 0xB600;
pub const SP_CS_NDRANGE_0: u32 = 0xB990; // HLSQ_CS_NDRANGE_0
pub const SP_CS_CONST_CONFIG_0: u32 = 0xB997;
pub const SP_CS_WGE_CNTL: u32 = 0xB998;
pub const SP_CS_KERNEL_GROUP_X: u32 = 0xB999;
pub const SP_CS_CNTL_0: u32 = 0xA9B0;
pub const SP_CS_CNTL_1: u32 = 0xA9B1;
pub const SP_CS_BOOLEAN_CF_MASK: u32 = 0xA9B2;
pub const SP_CS_PROGRAM_COUNTER_OFFSET: u32 = 0xA9B3;
pub const SP_CS_BASE: u32 = 0xA9B4;
pub const SP_CS_PVT_MEM_PARAM: u32 = 0xA9B6;
pub const SP_CS_PVT_MEM_BASE: u32 = 0xA9B7;
pub const SP_CS_PVT_MEM_SIZE: u32 = 0xA9B9;
pub const SP_CS_CONFIG: u32 = 0xA9BB;
pub const SP_CS_INSTR_SIZE: u32 = 0xA9BC; // SP_CS_INSTRLEN
pub const SP_CS_PVT_MEM_STACK_OFFSET: u32 = 0xA9BD; // SP_CS_PVT_MEM_HW_STACK_OFFSET
pub const SP_REG_PROG_ID_0: u32 = 0xB983; // HLSQ_CONTROL_2_REG
pub const SP_CS_CONST_CONFIG: u32 = 0xB987; // HLSQ_CS_CNTL
pub const SP_CS_SAMPLER_BASE: u32 = 0xA9E2; // SP_CS_TEX_SAMP
pub const SP_CS_TEXMEMOBJ_BASE: u32 = 0xA9E6; // SP_CS_TEX_CONST
pub const SP_CS_UAV_BASE: u32 = 0xA9F2; // SP_CS_IBO
/// SP_CS_BINDLESS_BASE[0…4] (64-bit each, stride 2): DESC_SIZE bits 0–1, set address above (a6xx.xml).
pub const SP_CS_BINDLESS_BASE: u32 = 0xA9E8;
pub const TPL1_CS_BORDER_COLOR_BASE: u32 = 0xB180; // SP_PS_TP_BORDER_COLOR_BASE_ADDR
pub const CP_ALWAYS_ON_COUNTER: u32 = 0x980;

/// SP_UPDATE_CNTL CS_STATE | CS_UAV.
pub const UPDATE_CS_STATE_UAV: u32 = 0x60;
/// SP_MODE_CNTL for the IR3 path: ISAMMODE_GL(2)<<1 | CONSTANT_DEMOTION_ENABLE.
pub const SP_MODE_CNTL_IR3: u32 = 0x5;
/// TPL1_MODE_CNTL for the IR3 path: ISAMMODE_GL.
pub const TPL1_MODE_CNTL_IR3: u32 = 0x2;
/// SP_MODE_CNTL for a Qualcomm-compiled (CL) kernel: ISAMMODE_CL(1)<<1, no constant demotion
/// (docs/hw/adreno-kgsl-pm4.md §18).
pub const SP_MODE_CNTL_CL: u32 = 0x2;
/// TPL1_MODE_CNTL for a CL kernel: ISAMMODE_CL.
pub const TPL1_MODE_CNTL_CL: u32 = 0x1;
/// SP_PERFCTR_SHADER_MASK CS bit.
pub const PERFCTR_CS: u32 = 0x20;
/// SP_CS_CONST_CONFIG_0 value tinygrad writes inside the NDRANGE block (overwritten later on the IR3 path).
pub const CONST_CONFIG_0_DEFAULT: u32 = 0x00CC_C0CF;
/// "register not used" id.
pub const REGID_UNUSED: u32 = 0xFC;
/// SP_CS_CONST_CONFIG as tinygrad writes it: CONSTLEN 256 unshifted lands on bit 8 = ENABLED (docs/hw/adreno-kgsl-pm4.md §7 note).
pub const CS_CONST_CONFIG: u32 = 0x100;
/// SP_CS_CONFIG ENABLED bit.
pub const CS_CONFIG_ENABLED: u32 = 0x100;
/// SP_CS_CNTL_1 CONSTANTRAMMODE = CONSTLEN_256 (2) << 5.
pub const CS_CNTL_1_CONSTLEN_256: u32 = 2 << 5;
/// CP_SET_MARKER mode RM6_COMPUTE.
pub const MARKER_RM6_COMPUTE: u32 = 8;
/// CP_WAIT_REG_MEM dword 0: function WRITE_GE (5) | POLL_MEMORY (1) << 4.
pub const WAIT_REG_MEM_GE_MEMORY: u32 = 0x15;
/// CP_REG_TO_MEM dword 0: REG = CP_ALWAYS_ON_COUNTER, CNT = 2, 64B (bit 30).
pub const REG_TO_MEM_ALWAYS_ON_64: u32 = 0x4008_0980;

/// CP_LOAD_STATE6 state types, sources and blocks.
pub mod load_state {
    pub const ST_SHADER: u32 = 0;
    pub const ST_CONSTANTS: u32 = 1;
    /// UBO descriptors (2 dwords each, docs/hw/adreno-kgsl-pm4.md §16.12).
    pub const ST6_UBO: u32 = 2;
    pub const ST6_UAV: u32 = 3;
    pub const SS6_INDIRECT: u32 = 2;
    pub const SB6_CS_TEX: u32 = 5;
    pub const SB6_CS_SHADER: u32 = 13;

    /// CP_LOAD_STATE6 dword 0 (DST_OFF 0).
    pub const fn d0(state_type: u32, block: u32, num_unit: u32) -> u32 {
        state_type << 14 | SS6_INDIRECT << 16 | block << 18 | (num_unit & 0x3FF) << 22
    }
}

/// Texture / image descriptor fields.
pub mod tex {
    pub const FMT6_16_16_16_16_FLOAT: u32 = 0x62;
    pub const FMT6_32_32_32_32_FLOAT: u32 = 0x82;
    pub const TEX_2D: u32 = 1;
    /// SAMP_0: WRAP_S/T/R = CLAMP_TO_BORDER (3).
    pub const SAMP_0_CLAMP_TO_BORDER: u32 = 0x1B60;
    /// SAMP_1: UNNORM_COORDS | CUBEMAPSEAMLESSFILTOFF.
    pub const SAMP_1_UNNORM: u32 = 0x30;
    /// TEX_CONST_6: PLANE_PITCH 0x400000 << 8.
    pub const CONST_6_PLANE_PITCH: u32 = 0x4000_0000;
    /// TEX_CONST_7 raw value tinygrad writes (unexplained, docs/hw/adreno-kgsl-pm4.md §15).
    pub const CONST_7: u32 = 13;
}
