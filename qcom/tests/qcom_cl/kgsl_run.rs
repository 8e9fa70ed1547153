//! One Qualcomm-compiled kernel through the KGSL model's CP_RUN_OPENCL path: GPU objects allocated through the
//! model's ioctls, the kernel-argument region filled as tinygrad's QCOM (CL) path fills it, and a CL-mode IB
//! written here from docs/hw/adreno-kgsl-pm4.md §7 with the CL differences of the fact sheet (§16.11): ISAMMODE_CL
//! in SP_MODE_CNTL (0x2) and TPL1_MODE_CNTL (0x1), no CONST_CONFIG_0 write after the NDRANGE block, CP_RUN_OPENCL
//! with payload 0 instead of CP_EXEC_CS, the shader loaded in ceil(size/128) units.
use modelrt_qcom::a6xx::cl_container::{ArgKind, ClContainer};
use modelrt_qcom::a6xx::regs::{self, load_state as ls};
use modelrt_qcom::adreno::{AdrenoDevice, AdrenoOptions};
use modelrt_qcom::emu::kgsl::{ExecStats, KgslModel, ModelConfig};
use modelrt_qcom::kgsl::{alloc_obj, CommandObject, KgslIo};
use modelrt_qcom::pm4::{event, op, pkt4_hdr, pkt7_hdr};

struct Ib(Vec<u32>);

impl Ib {
    fn cmd(&mut self, opcode: u8, payload: &[u32]) {
        self.0.push(pkt7_hdr(opcode, payload.len() as u16));
        self.0.extend_from_slice(payload);
    }
    fn reg(&mut self, r: u32, vals: &[u32]) {
        self.0.push(pkt4_hdr(r, vals.len() as u8));
        self.0.extend_from_slice(vals);
    }
    fn load(&mut self, st: u32, sb: u32, units: u32, addr: u64) {
        self.cmd(
            op::CP_LOAD_STATE6_FRAG,
            &[ls::d0(st, sb, units), addr as u32, (addr >> 32) as u32],
        );
    }
}

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
    let model = KgslModel::new(ModelConfig {
        execute_shaders: true,
        ..Default::default()
    });
    // The device's bring-up (tinygrad's order, §3): dummy object first, draw context 1, border colours.
    let dev = AdrenoDevice::open(model, AdrenoOptions::default()).map_err(|e| e.to_string())?;
    // The model takes a dispatch's closing CACHE_FLUSH_TS only into the dummy object (the bring-up's first
    // allocation); its address comes from the device's own address map, not from the mapping order.
    let dummy = dev
        .address_map()
        .into_iter()
        .find(|(n, _, _)| n == "dummy")
        .map(|(_, a, _)| a)
        .ok_or("no dummy object")?;
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
    // Private memory 0: PVT_MEM_PARAM 0, stack offset 0x1000, a stack object of 4 × that (§8.5).
    let stack_off = 0x1000u32;
    let stack = alloc_obj(m, 4 * stack_off as u64).map_err(e)?;
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

    let mut ib = Ib(Vec::new());
    // memory_barrier(): the model wants a cache invalidate in the IB before a dispatch.
    ib.cmd(
        op::CP_EVENT_WRITE,
        &[event::CACHE_FLUSH_TS, dummy as u32, (dummy >> 32) as u32, 0],
    );
    ib.cmd(op::CP_EVENT_WRITE, &[event::CACHE_INVALIDATE]);
    ib.cmd(op::CP_WAIT_MEM_WRITES, &[]);
    ib.cmd(op::CP_WAIT_FOR_IDLE, &[]);
    ib.cmd(op::CP_SET_MARKER, &[regs::MARKER_RM6_COMPUTE]);
    ib.reg(regs::SP_UPDATE_CNTL, &[regs::UPDATE_CS_STATE_UAV]);
    ib.reg(regs::SP_UPDATE_CNTL, &[0]);
    ib.reg(regs::SP_CS_TSIZE, &[0x80]);
    ib.reg(regs::SP_CS_USIZE, &[0x40]);
    ib.reg(regs::SP_MODE_CNTL, &[sp_mode_cntl]);
    ib.reg(regs::SP_PERFCTR_SHADER_MASK, &[regs::PERFCTR_CS]);
    ib.reg(regs::TPL1_MODE_CNTL, &[0x1]);
    ib.reg(regs::TPL1_DBG_ECO_CNTL, &[0]);
    ib.cmd(op::CP_WAIT_FOR_IDLE, &[]);
    let ([gx, gy, gz], [lx, ly, lz]) = (groups, local);
    let nd0 = 3 | (lx - 1) << 2 | (ly - 1) << 12 | (lz - 1) << 22;
    ib.reg(
        regs::SP_CS_NDRANGE_0,
        &[
            nd0,
            gx * lx,
            0,
            gy * ly,
            0,
            gz * lz,
            0,
            regs::CONST_CONFIG_0_DEFAULT,
            regs::REGID_UNUSED,
            gx,
            gy,
            gz,
        ],
    );
    let shared = 1.max((k.shmem as i64 - 1).div_euclid(1024)) as u32;
    let (l, s) = (lib.gpu_addr(), stack.gpu_addr());
    ib.reg(
        regs::SP_CS_CNTL_0,
        &[
            k.hregs << 1 | k.fregs << 7 | k.branchstack << 14,
            regs::CS_CNTL_1_CONSTLEN_256 | shared,
            0,
            k.prg_offset,
            l as u32,
            (l >> 32) as u32,
            0,
            s as u32,
            (s >> 32) as u32,
            0,
        ],
    );
    ib.load(ls::ST_CONSTANTS, ls::SB6_CS_SHADER, 256, args.gpu_addr());
    ib.load(ls::ST_SHADER, ls::SB6_CS_SHADER, units, l);
    ib.reg(
        regs::SP_REG_PROG_ID_0,
        &[
            0xFCFC_FCFC,
            0xFCFC_FCFC,
            0xFCFC_FCFC,
            0xFC,
            regs::CS_CONST_CONFIG,
        ],
    );
    ib.reg(regs::SP_CS_PVT_MEM_STACK_OFFSET, &[stack_off]);
    ib.reg(regs::SP_CS_INSTR_SIZE, &[units]);
    ib.reg(regs::SP_CS_CONFIG, &[regs::CS_CONFIG_ENABLED]);
    ib.cmd(op::CP_RUN_OPENCL, &[0]);
    ib.cmd(
        op::CP_EVENT_WRITE,
        &[event::CACHE_FLUSH_TS, dummy as u32, (dummy >> 32) as u32, 0],
    );

    let bytes: Vec<u8> = ib.0.iter().flat_map(|d| d.to_le_bytes()).collect();
    let obj = alloc_obj(m, bytes.len() as u64).map_err(e)?;
    obj.write(0, &bytes).map_err(e)?;
    let cmd = CommandObject {
        gpuaddr: obj.gpu_addr(),
        size: bytes.len() as u64,
        flags: 1,
        ..Default::default()
    };
    m.gpu_command(1, &[cmd]).map_err(e)?;
    for (o, b) in objs.iter().zip(bufs.iter_mut()) {
        o.read(0, b).map_err(e)?;
    }
    Ok(m.exec_stats())
}
