//! UBOs through the KGSL model: a hand-written PM4 stream (docs/hw/adreno-kgsl-pm4.md §7, CL mode as in
//! `qcom_cl/kgsl_run.rs`) loads two UBO descriptors with CP_LOAD_STATE6 (ST6_UBO, SB6_CS_SHADER; the A6XX_UBO
//! layout of §16.12: address, then size in vec4 from bit 17), and a hand-assembled kernel reads them with `ldc`.
//! The same kernel in its bindless form reads the descriptors from a descriptor set whose address the stream
//! writes to SP_CS_BINDLESS_BASE[0] (§16.13).
//! Expected values from the buffer contents by hand: UBO data dword j = 0x2000 + j, UBO 1 starts 16 dwords in,
//! so fiber l gets UBO 1 dword 4·l + 1 = 0x2011 + 4·l and UBO 0 dword 4·l = 0x2000 + 4·l.
use modelrt_qcom::a6xx::regs::{self, load_state as ls};
use modelrt_qcom::kgsl::alloc_obj;

mod cl_stream;
use cl_stream::{open_device, submit, Dispatch, Ib, STACK_OFF};

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
    let (dev, dummy) = open_device()?;
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
        let stack = alloc_obj(m, 4 * STACK_OFF as u64).map_err(e)?;
        let args = alloc_obj(m, 4096).map_err(e)?;
        args.write(0, &out.gpu_addr().to_le_bytes()).map_err(e)?;

        let dispatch = Dispatch {
            dummy,
            sp_mode_cntl: regs::SP_MODE_CNTL_CL,
            groups: [1, 1, 1],
            local: [FIBERS, 1, 1],
            cntl0: 5 << 7,
            shared: 1,
            prg_offset: 0,
            lib: lib.gpu_addr(),
            units: 1,
            stack: stack.gpu_addr(),
            args: args.gpu_addr(),
        };
        let mut ib = Ib(Vec::new());
        dispatch.head(&mut ib);
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
        dispatch.tail(&mut ib);
        submit(m, &ib).map_err(e)?;
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
