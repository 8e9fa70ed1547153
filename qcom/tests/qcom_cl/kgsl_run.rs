//! One Qualcomm-compiled kernel through the KGSL model's CP_RUN_OPENCL path: GPU objects allocated through the
//! model's ioctls, the kernel-argument region filled as tinygrad's QCOM (CL) path fills it, and a CL-mode IB
//! written here from docs/hw/adreno-kgsl-pm4.md §7 with the CL differences of the fact sheet (§16.11): ISAMMODE_CL
//! in SP_MODE_CNTL (0x2) and TPL1_MODE_CNTL (0x1), no CONST_CONFIG_0 write after the NDRANGE block, CP_RUN_OPENCL
//! with payload 0 instead of CP_EXEC_CS, the shader loaded in ceil(size/128) units.
use modelrt_qcom::a6xx::cl_container::{ArgKind, ClContainer};
use modelrt_qcom::emu::kgsl::{ExecStats, KgslModel};
use modelrt_qcom::kgsl::alloc_obj;

use super::cl_stream::{open_device, submit as submit_ib, Dispatch, Ib, STACK_OFF};

/// SP_MODE_CNTL as tinygrad's QCOM (CL) path writes it: ISAMMODE_CL (1) << 1, no constant demotion.
pub const SP_MODE_CNTL_CL: u32 = 0x2;

/// Run `k` over `groups` × `local` on the KGSL model with `bufs` (updated in place); the model's counters.
pub fn run(
    k: &ClContainer<'_>,
    groups: [u32; 3],
    local: [u32; 3],
    bufs: &mut [Vec<u8>],
) -> Result<ExecStats, String> {
    run_with(k, groups, local, bufs, SP_MODE_CNTL_CL)
}

/// [`run`] with SP_MODE_CNTL written as `sp_mode_cntl` (to see the model refuse a wrong mode).
pub fn run_with(
    k: &ClContainer<'_>,
    groups: [u32; 3],
    local: [u32; 3],
    bufs: &mut [Vec<u8>],
    sp_mode_cntl: u32,
) -> Result<ExecStats, String> {
    let (dev, dummy) = open_device()?;
    dev.with_kgsl(|m| submit(m, dummy, k, groups, local, bufs, sp_mode_cntl))
}

fn submit(
    m: &mut KgslModel,
    dummy: u64,
    k: &ClContainer<'_>,
    groups: [u32; 3],
    local: [u32; 3],
    bufs: &mut [Vec<u8>],
    sp_mode_cntl: u32,
) -> Result<ExecStats, String> {
    let e = |x: modelrt_qcom::kgsl::KgslError| x.to_string();
    let objs: Vec<_> = bufs
        .iter()
        .map(|b| alloc_obj(m, b.len() as u64))
        .collect::<Result<_, _>>()
        .map_err(e)?;
    for (o, b) in objs.iter().zip(bufs.iter()) {
        o.write(0, b).map_err(e)?;
    }
    let image = k.image();
    let units = (image.len() as u32).div_ceil(128);
    let lib = alloc_obj(m, units as u64 * 128).map_err(e)?;
    lib.write(0, image).map_err(e)?;
    m.name_shader(lib.gpu_addr(), k.name());
    let stack = alloc_obj(m, 4 * STACK_OFF as u64).map_err(e)?;
    let args = alloc_obj(m, 4096).map_err(e)?;
    let mut region = vec![0u8; 4096];
    for a in k.args() {
        if a.kind != ArgKind::Buffer {
            return Err("only buffer arguments are handled here".into());
        }
        let at = a.offset_bytes as usize;
        let addr = objs[a.index as usize].gpu_addr();
        region[at..at + 8].copy_from_slice(&addr.to_le_bytes());
    }
    for c in k.consts() {
        let at = c.offset_bytes as usize;
        region[at..at + c.size as usize].copy_from_slice(&c.value.to_le_bytes()[..c.size as usize]);
    }
    args.write(0, &region).map_err(e)?;

    let d = Dispatch {
        dummy,
        sp_mode_cntl,
        groups,
        local,
        cntl0: k.hregs << 1 | k.fregs << 7 | k.branchstack << 14,
        shared: 1.max((k.shmem as i64 - 1).div_euclid(1024)) as u32,
        prg_offset: k.prg_offset,
        lib: lib.gpu_addr(),
        units,
        stack: stack.gpu_addr(),
        args: args.gpu_addr(),
    };
    let mut ib = Ib(Vec::new());
    d.head(&mut ib);
    d.tail(&mut ib);
    submit_ib(m, &ib).map_err(e)?;
    for (o, b) in objs.iter().zip(bufs.iter_mut()) {
        o.read(0, b).map_err(e)?;
    }
    Ok(m.exec_stats())
}
