//! What a CP_RUN_OPENCL dispatch (a kernel from Qualcomm's OpenCL compiler, tinygrad's QCOM CL path) must find
//! programmed where it differs from a CP_EXEC_CS one (docs/hw/adreno-kgsl-pm4.md §7, §16.11): ISAMMODE_CL in
//! SP_MODE_CNTL (without constant demotion) and TPL1_MODE_CNTL, and SP_CS_CONST_CONFIG_0 as the NDRANGE block
//! left it — work-group id, size and offset registers and the local id, all four used by the kernels.
use crate::a6xx::regs;

/// SP_MODE_CNTL: ISAMMODE_CL (1) << 1 in CL mode, else the IR3 value.
pub(super) fn sp_mode_cntl(cl: bool) -> u32 {
    if cl {
        regs::SP_MODE_CNTL_CL
    } else {
        regs::SP_MODE_CNTL_IR3
    }
}

/// TPL1_MODE_CNTL: ISAMMODE_CL (1) in CL mode, else the IR3 value.
pub(super) fn tpl1_mode_cntl(cl: bool) -> u32 {
    if cl {
        regs::TPL1_MODE_CNTL_CL
    } else {
        regs::TPL1_MODE_CNTL_IR3
    }
}

/// A CL-mode SP_CS_CONST_CONFIG_0 must be the value the NDRANGE block writes, `0x00ccc0cf`: work-group id
/// r51.w, work-group size r48.x, work-group offset r51.x, local id r0.x (nothing rewrites it on this path).
pub(super) fn check_const_config_0(cc0: u32) -> Result<(), String> {
    if cc0 != regs::CONST_CONFIG_0_DEFAULT {
        return Err(format!(
            "SP_CS_CONST_CONFIG_0 {cc0:#x} in CL mode: expected {:#x} (wgid r51.w, wgsize r48.x, wgoffset r51.x, \
             local id r0.x)",
            regs::CONST_CONFIG_0_DEFAULT
        ));
    }
    Ok(())
}
