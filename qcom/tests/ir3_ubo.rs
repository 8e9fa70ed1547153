//! UBOs through the KGSL model: a hand-written PM4 stream (docs/hw/adreno-kgsl-pm4.md §7, CL mode as in
//! `qcom_cl/kgsl_run.rs`) loads two UBO descriptors with CP_LOAD_STATE6 (ST6_UBO, SB6_CS_SHADER; the A6XX_UBO
//! layout of §16.12: address, then size in vec4 from bit 17), and a hand-assembled kernel reads them with `ldc`.
//! The same kernel in its bindless form reads the descriptors from a descriptor set whose address the stream
//! writes to SP_CS_BINDLESS_BASE[0] (§16.13).
//! Expected values from the buffer contents by hand: UBO data dword j = 0x2000 + j, UBO 1 starts 16 dwords in,
//! so fiber l gets UBO 1 dword 4·l + 1 = 0x2011 + 4·l and UBO 0 dword 4·l = 0x2000 + 4·l.
use modelrt_qcom::a6xx::regs::{self, load_state as ls};
use modelrt_qcom::adreno::{AdrenoDevice, AdrenoOptions};
use modelrt_qcom::emu::kgsl::{KgslModel, ModelConfig};
use modelrt_qcom::kgsl::{alloc_obj, CommandObject, KgslIo};
use modelrt_qcom::pm4::{event, op, pkt4_hdr, pkt7_hdr};

fn r(n: u64, c: u64) -> u64 {
    n * 4 + c
}
const U32: u64 = 3;
/// `mov.u32u32 dst, cN` (field layout §16.3).
fn mov_c(dst: u64, c: u64) -> u64 {
    c | dst << 32 | U32 << 46 | U32 << 50 | 0b01 << 53 | 1 << 61
}
/// cat2 full-precision `op dst, s1, s2` on registers, and with an 11-bit immediate s2.
fn alu_rr(opc: u64, dst: u64, s1: u64, s2: u64) -> u64 {
    s1 | s2 << 16 | dst << 32 | 1 << 52 | opc << 53 | 2 << 61
}
fn alu_ri(opc: u64, dst: u64, s: u64, imm: i64) -> u64 {
    s | (0b100 << 11 | (imm as u64 & 0x7FF)) << 16 | dst << 32 | 1 << 52 | opc << 53 | 2 << 61
}
const ADD_U: u64 = 0b010000;
const MULL_U: u64 = 0b110010;
/// `stg.u32 g[addr], src, n`.
fn stg(addr: u64, src: u64, n: u64) -> u64 {
    src << 1 | 1 << 23 | n << 24 | 1 << 40 | addr << 41 | U32 << 49 | 3 << 54 | 6 << 61
}
/// `ldc.offsetK.1.imm dst, off, slot` with a register offset: the blob's `ldc.offset0.1.imm r0.x, r0.x, 0`
/// (c0260000_00478000) with its destination, K and slot fields set (§16.9).
fn ldc(dst: u64, k: u64, off: u64, slot: u64) -> u64 {
    0xc0260000_00478000 & !(0xFF << 32 | 3 << 9 | 0xFF << 24)
        | dst << 32
        | k << 9
        | off << 24
        | slot << 41
}
const END: u64 = 0b0110 << 55;

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

const FIBERS: u32 = 4;

/// Run the kernel over one work group of [`FIBERS`] with the UBO descriptors `desc(data address)`; the output
/// buffer (2 dwords per fiber) or the submission's error.
fn run(desc: impl Fn(u64) -> Vec<u32>) -> Result<Vec<u32>, String> {
    run_as(desc, false)
}

/// [`run`] with the UBO descriptors in bindless descriptor set 0 instead (64-byte entries, the set address
/// written to SP_CS_BINDLESS_BASE[0] with DESC_SIZE 3) and the kernel's `ldc`s in their `.base0` form.
fn run_as(desc: impl Fn(u64) -> Vec<u32>, bindless: bool) -> Result<Vec<u32>, String> {
    // Bit 8 = bindless, base bits 1–3 = 0.
    let b = if bindless { 1 << 8 } else { 0 };
    let words = [
        ldc(r(1, 0), 1, r(0, 0), 1) | b,
        ldc(r(1, 1), 0, r(0, 0), 0) | b,
        alu_ri(MULL_U, r(4, 0), r(0, 0), 8),
        mov_c(r(3, 0), 0),
        alu_rr(ADD_U, r(3, 0), r(3, 0), r(4, 0)),
        mov_c(r(3, 1), 1),
        stg(r(3, 0), r(1, 0), 2),
        END,
    ];
    let mut isa: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    isa.resize(128, 0);
    let model = KgslModel::new(ModelConfig {
        execute_shaders: true,
        ..Default::default()
    });
    let dev = AdrenoDevice::open(model, AdrenoOptions::default()).map_err(|e| e.to_string())?;
    // The model takes a dispatch's closing CACHE_FLUSH_TS only into the dummy object (the bring-up's first).
    let dummy = dev
        .address_map()
        .into_iter()
        .find(|(n, _, _)| n == "dummy")
        .map(|(_, a, _)| a)
        .ok_or("no dummy object")?;
    dev.with_kgsl(|m| {
        let e = |x: modelrt_qcom::kgsl::KgslError| x.to_string();
        let out = alloc_obj(m, 4096).map_err(e)?;
        let data = alloc_obj(m, 4096).map_err(e)?;
        let words: Vec<u8> = (0..64u32)
            .flat_map(|j| (0x2000 + j).to_le_bytes())
            .collect();
        data.write(0, &words).map_err(e)?;
        let descs = alloc_obj(m, 4096).map_err(e)?;
        let d = desc(data.gpu_addr());
        // Bindless: descriptor k at byte 64·k of the set.
        let entry = if bindless { 16 } else { 2 };
        let d_bytes: Vec<u8> = d
            .chunks_exact(2)
            .flat_map(|u| {
                let mut e = vec![0u32; entry];
                e[..2].copy_from_slice(u);
                e
            })
            .flat_map(|v| v.to_le_bytes())
            .collect();
        descs.write(0, &d_bytes).map_err(e)?;
        let lib = alloc_obj(m, 128).map_err(e)?;
        lib.write(0, &isa).map_err(e)?;
        m.name_shader(lib.gpu_addr(), "ldc_2ubo");
        let stack_off = 0x1000u32;
        let stack = alloc_obj(m, 4 * stack_off as u64).map_err(e)?;
        let args = alloc_obj(m, 4096).map_err(e)?;
        args.write(0, &out.gpu_addr().to_le_bytes()).map_err(e)?;

        let mut ib = Ib(Vec::new());
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
        ib.reg(regs::SP_MODE_CNTL, &[regs::SP_MODE_CNTL_CL]);
        ib.reg(regs::SP_PERFCTR_SHADER_MASK, &[regs::PERFCTR_CS]);
        ib.reg(regs::TPL1_MODE_CNTL, &[regs::TPL1_MODE_CNTL_CL]);
        ib.reg(regs::TPL1_DBG_ECO_CNTL, &[0]);
        ib.cmd(op::CP_WAIT_FOR_IDLE, &[]);
        let nd0 = 3 | (FIBERS - 1) << 2;
        ib.reg(
            regs::SP_CS_NDRANGE_0,
            &[
                nd0,
                FIBERS,
                0,
                1,
                0,
                1,
                0,
                regs::CONST_CONFIG_0_DEFAULT,
                regs::REGID_UNUSED,
                1,
                1,
                1,
            ],
        );
        let (l, s) = (lib.gpu_addr(), stack.gpu_addr());
        ib.reg(
            regs::SP_CS_CNTL_0,
            &[
                5 << 7,
                regs::CS_CNTL_1_CONSTLEN_256 | 1,
                0,
                0,
                l as u32,
                (l >> 32) as u32,
                0,
                s as u32,
                (s >> 32) as u32,
                0,
            ],
        );
        ib.load(ls::ST_CONSTANTS, ls::SB6_CS_SHADER, 256, args.gpu_addr());
        ib.load(ls::ST_SHADER, ls::SB6_CS_SHADER, 1, l);
        if bindless {
            let set = descs.gpu_addr() | 3;
            ib.reg(regs::SP_CS_BINDLESS_BASE, &[set as u32, (set >> 32) as u32]);
        } else {
            ib.load(
                ls::ST6_UBO,
                ls::SB6_CS_SHADER,
                d.len() as u32 / 2,
                descs.gpu_addr(),
            );
        }
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
        ib.reg(regs::SP_CS_INSTR_SIZE, &[1]);
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
        let loaded = if bindless { 0 } else { d.len() / 2 };
        assert_eq!(m.dispatches().last().map(|d| d.ubos.len()), Some(loaded));
        let mut res = vec![0u8; 8 * FIBERS as usize];
        out.read(0, &mut res).map_err(e)?;
        Ok(res
            .chunks_exact(4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect())
    })
}

/// A6XX_UBO descriptor dwords: address, then address bits 32–48 and the size in vec4 from bit 17.
fn ubo_desc(base: u64, vec4s: u32) -> [u32; 2] {
    [base as u32, (base >> 32) as u32 & 0x1_FFFF | vec4s << 17]
}

#[test]
fn ldc_reads_the_ubos_the_stream_loaded() {
    let out = run(|data| [ubo_desc(data, 4), ubo_desc(data + 64, 4)].concat()).unwrap();
    for l in 0..FIBERS {
        let l_ = l as usize;
        assert_eq!(
            out[2 * l_..2 * l_ + 2],
            [0x2011 + 4 * l, 0x2000 + 4 * l],
            "fiber {l}"
        );
    }
}

#[test]
fn bindless_ldc_reads_the_ubos_of_the_descriptor_set_the_stream_set() {
    let out = run_as(
        |data| [ubo_desc(data, 4), ubo_desc(data + 64, 4)].concat(),
        true,
    )
    .unwrap();
    for l in 0..FIBERS {
        let l_ = l as usize;
        assert_eq!(
            out[2 * l_..2 * l_ + 2],
            [0x2011 + 4 * l, 0x2000 + 4 * l],
            "fiber {l}"
        );
    }
}

#[test]
fn a_ubo_outside_every_object_or_read_past_its_size_is_an_error() {
    let e = run(|_| [ubo_desc(0x10, 4), ubo_desc(0x10, 4)].concat()).unwrap_err();
    assert!(e.contains("UBO 0"), "{e}");
    // UBO 1 of 2 vec4: fiber 2 reads its vec4 2.
    let e = run(|data| [ubo_desc(data, 4), ubo_desc(data + 64, 2)].concat()).unwrap_err();
    assert!(
        e.contains("kernel ldc_2ubo")
            && e.contains("GPU fault in fiber 2")
            && e.contains("past the end of the UBO"),
        "{e}"
    );
}
