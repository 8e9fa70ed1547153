//! Test support shared by the tests that drive one CL-mode dispatch through the KGSL model with a hand-written
//! IB (`qcom_cl_kernels` via `qcom_cl/kgsl_run.rs`, and `ir3_ubo`): the device bring-up, the IB writer, the
//! dispatch's register blocks from docs/hw/adreno-kgsl-pm4.md §7 with the CL differences of §16.11 (ISAMMODE_CL,
//! no CONST_CONFIG_0 write after the NDRANGE block, CP_RUN_OPENCL with payload 0), and the submission.
//! A caller writes [`Dispatch::head`], then any state of its own (UBO descriptors, a bindless base), then
//! [`Dispatch::tail`], and submits with [`submit`].
use modelrt_qcom::a6xx::regs::{self, load_state as ls};
use modelrt_qcom::adreno::{AdrenoDevice, AdrenoOptions};
use modelrt_qcom::emu::kgsl::{KgslModel, ModelConfig};
use modelrt_qcom::kgsl::{alloc_obj, CommandObject, KgslError, KgslIo};
use modelrt_qcom::pm4::{event, op, pkt4_hdr, pkt7_hdr};

/// An indirect buffer being written.
pub struct Ib(pub Vec<u32>);

impl Ib {
    pub fn cmd(&mut self, opcode: u8, payload: &[u32]) {
        self.0.push(pkt7_hdr(opcode, payload.len() as u16));
        self.0.extend_from_slice(payload);
    }
    pub fn reg(&mut self, r: u32, vals: &[u32]) {
        self.0.push(pkt4_hdr(r, vals.len() as u8));
        self.0.extend_from_slice(vals);
    }
    pub fn load(&mut self, st: u32, sb: u32, units: u32, addr: u64) {
        self.cmd(
            op::CP_LOAD_STATE6_FRAG,
            &[ls::d0(st, sb, units), addr as u32, (addr >> 32) as u32],
        );
    }
}

/// A KGSL model that executes shaders, opened as a device (tinygrad's bring-up order, §3: dummy object first,
/// draw context 1, border colours), and the dummy object's address: the model takes a dispatch's closing
/// CACHE_FLUSH_TS only into it, and the address comes from the device's own map, not from the mapping order.
pub fn open_device() -> Result<(AdrenoDevice<KgslModel>, u64), String> {
    let model = KgslModel::new(ModelConfig {
        execute_shaders: true,
        ..Default::default()
    });
    let dev = AdrenoDevice::open(model, AdrenoOptions::default()).map_err(|e| e.to_string())?;
    let dummy = dev
        .address_map()
        .into_iter()
        .find(|(n, _, _)| n == "dummy")
        .map(|(_, a, _)| a)
        .ok_or("no dummy object")?;
    Ok((dev, dummy))
}

/// Stack offset of the dispatches here: private memory 0, PVT_MEM_PARAM 0, a stack object of 4 × this (§8.5).
pub const STACK_OFF: u32 = 0x1000;

/// One CL-mode dispatch's parameters.
pub struct Dispatch {
    pub dummy: u64,
    pub sp_mode_cntl: u32,
    pub groups: [u32; 3],
    pub local: [u32; 3],
    /// SP_CS_CNTL_0 (register footprint) and SP_CS_CNTL_1's low bits (shared-memory size).
    pub cntl0: u32,
    pub shared: u32,
    pub prg_offset: u32,
    /// Shader object, its size in 128-byte units, the stack object, the kernel-argument (constants) object.
    pub lib: u64,
    pub units: u32,
    pub stack: u64,
    pub args: u64,
}

impl Dispatch {
    /// Barrier, compute mode, the NDRANGE and CS_CNTL blocks, constants and shader loads.
    pub fn head(&self, ib: &mut Ib) {
        let dummy = self.dummy;
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
        ib.reg(regs::SP_MODE_CNTL, &[self.sp_mode_cntl]);
        ib.reg(regs::SP_PERFCTR_SHADER_MASK, &[regs::PERFCTR_CS]);
        ib.reg(regs::TPL1_MODE_CNTL, &[regs::TPL1_MODE_CNTL_CL]);
        ib.reg(regs::TPL1_DBG_ECO_CNTL, &[0]);
        ib.cmd(op::CP_WAIT_FOR_IDLE, &[]);
        let ([gx, gy, gz], [lx, ly, lz]) = (self.groups, self.local);
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
        let (l, s) = (self.lib, self.stack);
        ib.reg(
            regs::SP_CS_CNTL_0,
            &[
                self.cntl0,
                regs::CS_CNTL_1_CONSTLEN_256 | self.shared,
                0,
                self.prg_offset,
                l as u32,
                (l >> 32) as u32,
                0,
                s as u32,
                (s >> 32) as u32,
                0,
            ],
        );
        ib.load(ls::ST_CONSTANTS, ls::SB6_CS_SHADER, 256, self.args);
        ib.load(ls::ST_SHADER, ls::SB6_CS_SHADER, self.units, l);
    }

    /// Program id, private memory, instruction size, CP_RUN_OPENCL and the closing timestamp.
    pub fn tail(&self, ib: &mut Ib) {
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
        ib.reg(regs::SP_CS_PVT_MEM_STACK_OFFSET, &[STACK_OFF]);
        ib.reg(regs::SP_CS_INSTR_SIZE, &[self.units]);
        ib.reg(regs::SP_CS_CONFIG, &[regs::CS_CONFIG_ENABLED]);
        ib.cmd(op::CP_RUN_OPENCL, &[0]);
        let dummy = self.dummy;
        ib.cmd(
            op::CP_EVENT_WRITE,
            &[event::CACHE_FLUSH_TS, dummy as u32, (dummy >> 32) as u32, 0],
        );
    }
}

/// Copy `ib` into a GPU object and submit it on draw context 1.
pub fn submit(m: &mut KgslModel, ib: &Ib) -> Result<(), KgslError> {
    let bytes: Vec<u8> = ib.0.iter().flat_map(|d| d.to_le_bytes()).collect();
    let obj = alloc_obj(m, bytes.len() as u64)?;
    obj.write(0, &bytes)?;
    let cmd = CommandObject {
        gpuaddr: obj.gpu_addr(),
        size: bytes.len() as u64,
        flags: 1,
        ..Default::default()
    };
    m.gpu_command(1, &[cmd]).map(|_| ())
}
