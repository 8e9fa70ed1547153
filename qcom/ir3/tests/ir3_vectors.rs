//! Instruction vectors for the IR3 interpreter (`modelrt_ir3`). Each program is assembled here
//! from the field positions of Mesa's ISA description (src/freedreno/isa/ir3-cat*.xml, restated in
//! docs/hw/adreno-kgsl-pm4.md §16), independently of the decoder, and the expected values come from IEEE 754
//! and the documented semantics (§16.4), not from running the interpreter.
use modelrt_core::half::f32_to_f16;
use modelrt_ir3::float::f16_to_f32;
use modelrt_ir3::{run, run_threads, GpuMemory, Image, Launch, Program, SharedMemory};

const OUT: u64 = 0x10_0000;

/// One flat GPU object at [`OUT`].
struct Mem(Vec<u8>);

/// The offset of `[addr, addr + len)` in an object of `size` bytes at [`OUT`], or the fault.
fn offset(size: usize, addr: u64, len: usize) -> Result<usize, String> {
    let o = addr
        .checked_sub(OUT)
        .filter(|o| o + len as u64 <= size as u64);
    Ok(o.ok_or_else(|| format!("address {addr:#x} outside the test object"))? as usize)
}

impl GpuMemory for Mem {
    fn read(&mut self, addr: u64, out: &mut [u8]) -> Result<(), String> {
        SharedMemory::read(&View(&self.0), addr, out)
    }
    fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), String> {
        let o = offset(self.0.len(), addr, data.len())?;
        self.0[o..o + data.len()].copy_from_slice(data);
        Ok(())
    }
    fn shared_view(&self) -> Option<Box<dyn SharedMemory + '_>> {
        Some(Box::new(View(&self.0)))
    }
}

/// [`Mem`] read-only, for parallel dispatches.
struct View<'a>(&'a [u8]);

impl SharedMemory for View<'_> {
    fn read(&self, addr: u64, out: &mut [u8]) -> Result<(), String> {
        let o = offset(self.0.len(), addr, out.len())?;
        out.copy_from_slice(&self.0[o..o + out.len()]);
        Ok(())
    }
    fn check_write(&self, addr: u64, len: usize) -> Result<(), String> {
        offset(self.0.len(), addr, len).map(|_| ())
    }
}

fn r(n: u64, c: u64) -> u64 {
    n * 4 + c
}
// #multisrc forms (16 bits).
fn gpr(n: u64) -> u64 {
    n
}
fn cst(n: u64) -> u64 {
    1 << 12 | n
}
fn flut(i: u64) -> u64 {
    0b101 << 11 | i
}
fn imm(v: i64) -> u64 {
    0b100 << 11 | (v as u64 & 0x7FF)
}
const NEG: u64 = 1 << 14;
const ABS: u64 = 1 << 15;

fn cat2(opc: u64, dst: u64, s1: u64, s2: u64, full: bool, dst_conv: bool) -> u64 {
    s1 | s2 << 16 | dst << 32 | (dst_conv as u64) << 46 | (full as u64) << 52 | opc << 53 | 2 << 61
}
fn cmp2(opc: u64, cond: u64, dst: u64, s1: u64, s2: u64) -> u64 {
    cat2(opc, dst, s1, s2, true, false) | cond << 48
}
fn cat3(opc: u64, dst: u64, s1: u64, s2: u64, s3: u64) -> u64 {
    s1 | s3 << 16 | dst << 32 | s2 << 47 | opc << 55 | 3 << 61
}
/// cat3 with the alternative (immediate src1) encoding, full precision.
fn cat3alt(opc: u64, dst: u64, imm1: u64, s2: u64, s3: u64) -> u64 {
    cat3(opc, dst, 1 << 12 | imm1, s2, s3) | 1 << 13 | 1 << 42
}
fn cat4(opc: u64, dst: u64, s: u64) -> u64 {
    s | dst << 32 | 1 << 52 | opc << 53 | 4 << 61
}
fn mov_imm(ty: u64, dst: u64, v: u32) -> u64 {
    v as u64 | dst << 32 | ty << 46 | ty << 50 | 0b10 << 53 | 1 << 61
}
fn cov(src_ty: u64, dst_ty: u64, dst: u64, src: u64) -> u64 {
    src | dst << 32 | dst_ty << 46 | src_ty << 50 | 1 << 61
}
const F16: u64 = 0;
const F32: u64 = 1;
const U32: u64 = 3;
const END: u64 = 0b0110 << 55;
const PREDT: u64 = 1 << 49 | 0b1101 << 55;
const PREDE: u64 = 1 << 49 | 0b1111 << 55;
fn br(comp: u64, inv: bool, off: i32) -> u64 {
    off as u32 as u64 | (inv as u64) << 52 | comp << 53 | 0b0001 << 55
}
fn jump(off: i32) -> u64 {
    off as u32 as u64 | 0b0010 << 55
}
fn stg(ty: u64, addr: u64, src: u64, size: u64) -> u64 {
    src << 1 | 1 << 23 | size << 24 | 1 << 40 | addr << 41 | ty << 49 | 0b00011 << 54 | 6 << 61
}
fn ldg(ty: u64, dst: u64, addr: u64, size: u64) -> u64 {
    1 | addr << 14 | 1 << 23 | size << 24 | dst << 32 | ty << 49 | 6 << 61
}

// cat2 opcodes.
const ADD_F: u64 = 0;
const MAX_F: u64 = 2;
const MUL_F: u64 = 3;
const CMPS_F: u64 = 5;
const ADD_U: u64 = 0b010000;
const CMPS_S: u64 = 0b010101;
const SHL_B: u64 = 0b110110;
const MULL_U: u64 = 0b110010;
const ABSNEG_S: u64 = 0b011010;
const AND_B: u64 = 0b011100;

/// Append "out[lane] = r1.x" (address c0.x + 4·lane in r2.xy; c0.y = 0 high half) and `end`.
fn store_r1x(mut p: Vec<u64>) -> Vec<u64> {
    p.extend([
        cat2(SHL_B, r(3, 0), gpr(r(0, 0)), imm(2), true, false),
        cat2(ADD_U, r(2, 0), cst(0), gpr(r(3, 0)), true, false),
        cat2(ADD_U, r(2, 1), cst(1), imm(0), true, false),
        stg(U32, r(2, 0), r(1, 0), 1),
        END,
    ]);
    p
}

fn image(words: &[u64]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// Run `words` on `lanes` fibers with c0.x = OUT, extra constants from c1 on; returns the output dwords.
fn exec(words: &[u64], lanes: u32, consts: &[u32], init: &[u8]) -> Result<Vec<u32>, String> {
    let prog = Program::decode("vec", &image(words))?;
    let mut c = vec![OUT as u32, 0, 0, 0];
    c.extend_from_slice(consts);
    c.resize(1024, 0);
    let mut mem = Mem(vec![0u8; 4096]);
    mem.0[1024..1024 + init.len()].copy_from_slice(init);
    let launch = Launch {
        consts: &c,
        groups: [1, 1, 1],
        local: [lanes, 1, 1],
        wgid_reg: Some(192),
        lid_reg: Some(0),
        wgsize_reg: None,
        wgoffset_reg: None,
        textures: &[],
        uavs: &[],
        samplers: &[],
        ubos: &[],
        bindless: [0; 5],
        shared_bytes: 1024,
        items: None,
    };
    run(&prog, &launch, &mut mem)?;
    Ok(mem.0[..lanes as usize * 4]
        .chunks_exact(4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect())
}

/// r1.x = op(c1.x, c1.y) for float bit patterns.
fn binop_f(opc: u64, a: f32, b: f32) -> u32 {
    let p = store_r1x(vec![cat2(opc, r(1, 0), cst(4), cst(5), true, false)]);
    exec(&p, 1, &[a.to_bits(), b.to_bits()], &[]).unwrap()[0]
}

#[test]
fn add_and_mul_follow_ieee_with_fp32_denormals_flushed() {
    assert!(f32::from_bits(binop_f(ADD_F, f32::NAN, 1.0)).is_nan());
    assert_eq!(binop_f(ADD_F, 0.0, -0.0), 0.0f32.to_bits());
    assert_eq!(binop_f(ADD_F, -0.0, -0.0), (-0.0f32).to_bits());
    assert_eq!(binop_f(ADD_F, 1.0, f32::INFINITY), f32::INFINITY.to_bits());
    assert!(f32::from_bits(binop_f(ADD_F, f32::INFINITY, f32::NEG_INFINITY)).is_nan());
    // 0.1 + 0.2 rounds to nearest even in binary32: 0x3E99999A.
    assert_eq!(binop_f(ADD_F, 0.1, 0.2), 0x3E99_999A);
    // Denormal inputs and results are flushed to signed zero (§16.4).
    assert_eq!(binop_f(ADD_F, f32::from_bits(1), 0.0), 0);
    assert_eq!(binop_f(MUL_F, 1e-20, -1e-20), (-0.0f32).to_bits());
    assert_eq!(binop_f(MUL_F, 3.0, -0.5), (-1.5f32).to_bits());
}

#[test]
fn max_is_ieee_maxnum_and_compares_are_unordered_false() {
    assert_eq!(binop_f(MAX_F, f32::NAN, -2.0), (-2.0f32).to_bits());
    assert_eq!(binop_f(MAX_F, -0.0, 0.0), 0.0f32.to_bits());
    assert_eq!(binop_f(MAX_F, 0.0, -0.0), 0.0f32.to_bits());
    // cmps.f.lt (cond 0) / .ne (cond 5) with NaN.
    let cmp = |cond, a: f32, b: f32| {
        let p = store_r1x(vec![cmp2(CMPS_F, cond, r(1, 0), cst(4), cst(5))]);
        exec(&p, 1, &[a.to_bits(), b.to_bits()], &[]).unwrap()[0]
    };
    assert_eq!(cmp(0, f32::NAN, 1.0), 0);
    assert_eq!(cmp(5, f32::NAN, f32::NAN), 1);
    assert_eq!(cmp(0, -0.0, 0.0), 0);
    assert_eq!(cmp(4, -0.0, 0.0), 1);
}

#[test]
fn source_modifiers_and_float_lookup_immediates() {
    // r1.x = (abs)c1.x + (neg)(1.0)  → |−3| − 1 = 2
    let p = store_r1x(vec![cat2(
        ADD_F,
        r(1, 0),
        cst(4) | ABS,
        flut(2) | NEG,
        true,
        false,
    )]);
    assert_eq!(
        exec(&p, 1, &[(-3.0f32).to_bits()], &[]).unwrap()[0],
        2.0f32.to_bits()
    );
    // absneg.s (abs) on i32::MIN wraps (two's complement).
    let p = store_r1x(vec![cat2(ABSNEG_S, r(1, 0), cst(4) | ABS, 0, true, false)]);
    assert_eq!(exec(&p, 1, &[0x8000_0000], &[]).unwrap()[0], 0x8000_0000);
    let p = store_r1x(vec![cat2(ABSNEG_S, r(1, 0), cst(4) | NEG, 0, true, false)]);
    assert_eq!(exec(&p, 1, &[5], &[]).unwrap()[0], (-5i32) as u32);
}

#[test]
fn half_conversions_round_to_nearest_even_and_overflow_to_infinity() {
    // cov.f32f16 hr1.x, r1.y ; cov.f16f32 r1.x, hr1.x — fp32 → fp16 → fp32.
    let via_half = |x: f32| {
        let p = store_r1x(vec![
            mov_imm(F32, r(1, 1), x.to_bits()),
            cov(F32, F16, r(1, 0), r(1, 1)),
            cov(F16, F32, r(1, 0), r(1, 0)),
        ]);
        f32::from_bits(exec(&p, 1, &[], &[]).unwrap()[0])
    };
    assert_eq!(via_half(65504.0), 65504.0);
    assert_eq!(via_half(65519.0), 65504.0); // below the halfway point 65520
    assert_eq!(via_half(65520.0), f32::INFINITY); // ties to even → overflow
    assert_eq!(via_half(-1e6), f32::NEG_INFINITY);
    assert_eq!(via_half(2f32.powi(-24)), 2f32.powi(-24)); // smallest fp16 denormal is kept
    assert_eq!(via_half(2f32.powi(-26)), 0.0); // below half of it → +0
    assert_eq!(via_half(1.0 + 2f32.powi(-11)), 1.0); // tie → even mantissa
    assert_eq!(via_half(1.0 + 3.0 * 2f32.powi(-11)), 1.0 + 2f32.powi(-9)); // tie → even (up)
    assert!(via_half(f32::NAN).is_nan());
    assert_eq!(via_half(-0.0).to_bits(), (-0.0f32).to_bits());
    // Direct binary16 facts.
    assert_eq!(f16_to_f32(0x3C00), 1.0);
    assert_eq!(f16_to_f32(0x7BFF), 65504.0);
    assert_eq!(f16_to_f32(0x0001), 2f32.powi(-24));
    assert_eq!(f16_to_f32(0x03FF), 1023.0 * 2f32.powi(-24));
    assert_eq!(f16_to_f32(0x0400), 2f32.powi(-14));
    assert_eq!(f16_to_f32(0xFC00), f32::NEG_INFINITY);
    assert_eq!(f32_to_f16(2f32.powi(-14) * 0.5), 0x0200);
    // A binary16 NaN widens to a quiet f32 NaN with sign and payload kept (§16.4): signalling 0x7C01 (payload 1)
    // → quiet bit 22 set, payload at bit 13; an already quiet one is unchanged.
    assert_eq!(f16_to_f32(0x7C01).to_bits(), 0x7FC0_2000);
    assert_eq!(f16_to_f32(0xFE00).to_bits(), 0xFFC0_0000);
}

#[test]
fn half_alu_results_are_rounded_to_half() {
    // add.f in half precision: hr1.x = h(c1.x) + h(c1.y) where both consts are demoted to f16; 2048 + 1 = 2049
    // is not representable in binary16 (spacing 2 above 2048) and rounds to even 2048; then widen.
    let p = store_r1x(vec![
        cat2(ADD_F, r(1, 0), cst(4), cst(5), false, false),
        cov(F16, F32, r(1, 0), r(1, 0)),
    ]);
    assert_eq!(
        exec(&p, 1, &[2048f32.to_bits(), 1f32.to_bits()], &[]).unwrap()[0],
        2048f32.to_bits()
    );
    // Half overflow: 300 · 300 = 90000 > 65504 → +inf in binary16.
    let p = store_r1x(vec![
        cat2(MUL_F, r(1, 0), cst(4), cst(5), false, false),
        cov(F16, F32, r(1, 0), r(1, 0)),
    ]);
    assert_eq!(
        exec(&p, 1, &[300f32.to_bits(), 300f32.to_bits()], &[]).unwrap()[0],
        f32::INFINITY.to_bits()
    );
    let p = store_r1x(vec![
        cat2(ADD_F, r(1, 0), cst(4), cst(5), false, false),
        cov(F16, F32, r(1, 0), r(1, 0)),
    ]);
    // 2048 + 3 = 2051 → ties to 2052.
    assert_eq!(
        exec(&p, 1, &[2048f32.to_bits(), 3f32.to_bits()], &[]).unwrap()[0],
        2052f32.to_bits()
    );
}

#[test]
fn mad_is_unfused_and_sfu_ops_match_correctly_rounded_references() {
    // a = 1 + 2^-12: a·a = 1 + 2^-11 + 2^-24 rounds (tie, even) to 1 + 2^-11, so a·a − (1 + 2^-11) = 0
    // when the product is rounded first (a fused multiply-add would give 2^-24).
    let a = 1.0 + 2f32.powi(-12);
    let c = -(1.0 + 2f32.powi(-11));
    let p = store_r1x(vec![cat3(7, r(1, 0), 1 << 12 | 4, r(1, 1), 1 << 12 | 6)]);
    let mut words = vec![mov_imm(F32, r(1, 1), a.to_bits())];
    words.extend(p);
    assert_eq!(
        exec(&words, 1, &[a.to_bits(), 0, c.to_bits()], &[]).unwrap()[0],
        0
    );
    let sfu = |opc, x: f32| {
        let p = store_r1x(vec![cat4(opc, r(1, 0), cst(4))]);
        f32::from_bits(exec(&p, 1, &[x.to_bits()], &[]).unwrap()[0])
    };
    assert_eq!(sfu(0, 4.0), 0.25); // rcp
    assert_eq!(sfu(0, -0.0), f32::NEG_INFINITY);
    assert_eq!(sfu(3, 3.0), 8.0); // exp2
    assert_eq!(sfu(3, f32::NEG_INFINITY), 0.0);
    assert_eq!(sfu(2, 0.0), f32::NEG_INFINITY); // log2
    assert!(sfu(6, -1.0).is_nan()); // sqrt
    assert_eq!(sfu(1, 0.25), 2.0); // rsq
}

#[test]
fn integer_multiply_lowering_and_64bit_shift_merge() {
    // imul = madsh.m16(b, a, madsh.m16(a, b, mull.u(a, b))) (Mesa's imul lowering) must equal a·b mod 2^32.
    let (a, b) = (0x1234_5678u32, 0x9ABC_DEF1u32);
    let p = store_r1x(vec![
        mov_imm(U32, r(4, 0), a),
        mov_imm(U32, r(4, 1), b),
        cat2(MULL_U, r(1, 0), gpr(r(4, 0)), gpr(r(4, 1)), true, false),
        cat3(3, r(1, 0), r(4, 0), r(4, 1), r(1, 0)),
        cat3(3, r(1, 0), r(4, 1), r(4, 0), r(1, 0)),
    ]);
    assert_eq!(exec(&p, 1, &[], &[]).unwrap()[0], a.wrapping_mul(b));
    // shrg r1.x, 30, r4.x, r4.y = (r4.x >> 30) | r4.y: the high word of a 64-bit (x << 2).
    let p = store_r1x(vec![
        mov_imm(U32, r(4, 0), 0xC000_0001),
        mov_imm(U32, r(4, 1), 0x10),
        cat3alt(0b1010, r(1, 0), 30, r(4, 0), r(4, 1)),
    ]);
    assert_eq!(exec(&p, 1, &[], &[]).unwrap()[0], 0x13);
}

#[test]
fn madsh_m16_multiplies_low_half_of_src1_by_high_half_of_src2() {
    // Mesa's nir_opt_algebraic folds imadsh_mix16(a, b, c) to c when a's low half or b's high half is a zero
    // constant, and ir3 emits imadsh_mix16 as madsh.m16 in source order; those rules are right only if the
    // product is lo16(src1)·hi16(src2) (docs/hw/adreno-kgsl-pm4.md §16.4).
    let madsh = |a: u32, b: u32, c: u32| {
        let p = store_r1x(vec![
            mov_imm(U32, r(4, 0), a),
            mov_imm(U32, r(4, 1), b),
            mov_imm(U32, r(4, 2), c),
            cat3(3, r(1, 0), r(4, 0), r(4, 1), r(4, 2)),
        ]);
        exec(&p, 1, &[], &[]).unwrap()[0]
    };
    assert_eq!(
        madsh(0x0001_0003, 0x0005_0007, 0x10),
        ((3 * 5) << 16) + 0x10
    );
    // The two folding rules: a zero low half in src1, a zero high half in src2 leave c.
    assert_eq!(madsh(0x7FFF_0000, 0x1234_5678, 42), 42);
    assert_eq!(madsh(0x1234_5678, 0x0000_FFFF, 42), 42);
    // What Mesa leaves of imul(x, 0x90000): madsh.m16 d, x, 0x90000, 0 (vgg19's channel-block offset).
    for x in [1u32, 3, 0x1234] {
        assert_eq!(madsh(x, 0x9_0000, 0), x.wrapping_mul(0x9_0000));
    }
    // What it leaves of imul(x, 100): mull.u t, x, 100; madsh.m16 d, 100, x, t — right for x ≥ 2^16 too.
    let x = 0x0012_3456u32;
    let p = store_r1x(vec![
        mov_imm(U32, r(4, 0), x),
        mov_imm(U32, r(4, 1), 100),
        cat2(MULL_U, r(1, 0), gpr(r(4, 0)), gpr(r(4, 1)), true, false),
        cat3(3, r(1, 0), r(4, 1), r(4, 0), r(1, 0)),
    ]);
    assert_eq!(exec(&p, 1, &[], &[]).unwrap()[0], x * 100);
}

#[test]
fn repeat_advances_registers_marked_r() {
    // (rpt2)add.f r4.x, (r)r5.x, c1.x  → r4.xyz = r5.xyz + c1.x (c1.x does not advance).
    let words = store_r1x(vec![
        mov_imm(F32, r(5, 0), 1f32.to_bits()),
        mov_imm(F32, r(5, 1), 2f32.to_bits()),
        mov_imm(F32, r(5, 2), 4f32.to_bits()),
        cat2(ADD_F, r(4, 0), gpr(r(5, 0)), cst(4), true, false) | 2 << 40 | 1 << 43,
        cat2(ADD_F, r(1, 0), gpr(r(4, 0)), gpr(r(4, 1)), true, false),
        cat2(ADD_F, r(1, 0), gpr(r(1, 0)), gpr(r(4, 2)), true, false),
    ]);
    // (1+10) + (2+10) + (4+10) = 37
    assert_eq!(
        exec(&words, 1, &[10f32.to_bits()], &[]).unwrap()[0],
        37f32.to_bits()
    );
}

#[test]
fn predication_and_divergent_branches_leave_inactive_fibers_untouched() {
    // r1.x = 7 for every fiber; p0.x = (lid == 2); predt; r1.x = 99; prede → only fiber 2 has 99.
    let p = store_r1x(vec![
        mov_imm(U32, r(1, 0), 7),
        cmp2(CMPS_S, 4, 0xF8, gpr(r(0, 0)), imm(2)),
        PREDT,
        mov_imm(U32, r(1, 0), 99),
        PREDE,
    ]);
    assert_eq!(exec(&p, 4, &[], &[]).unwrap(), vec![7, 7, 99, 7]);
    // p0.y = (lid < 2); br !p0.y skips the "+100" for fibers ≥ 2, who then run "+1000"; all reconverge.
    let p = store_r1x(vec![
        mov_imm(U32, r(1, 0), 0),
        cmp2(CMPS_S, 0, 0xF9, gpr(r(0, 0)), imm(2)),
        br(1, true, 3),
        cat2(ADD_U, r(1, 0), gpr(r(1, 0)), imm(100), true, false),
        jump(2),
        cat2(ADD_U, r(1, 0), gpr(r(1, 0)), imm(1000), true, false),
        cat2(ADD_U, r(1, 0), gpr(r(1, 0)), gpr(r(0, 0)), true, false),
    ]);
    assert_eq!(exec(&p, 4, &[], &[]).unwrap(), vec![100, 101, 1002, 1003]);
}

#[test]
fn global_loads_and_an_out_of_object_address_is_a_gpu_fault() {
    // ldg.u32 r1.x, g[r6.x], 1 with r6.xy = OUT + 1024 + 4·lid.
    let mut init = Vec::new();
    for v in [11u32, 22, 33] {
        init.extend(v.to_le_bytes());
    }
    let p = store_r1x(vec![
        cat2(SHL_B, r(3, 0), gpr(r(0, 0)), imm(2), true, false),
        cat2(ADD_U, r(6, 0), cst(4), gpr(r(3, 0)), true, false),
        cat2(ADD_U, r(6, 1), cst(1), imm(0), true, false),
        ldg(U32, r(1, 0), r(6, 0), 1),
    ]);
    assert_eq!(
        exec(&p, 3, &[(OUT + 1024) as u32], &init).unwrap(),
        vec![11, 22, 33]
    );
    let e = exec(&p, 3, &[(OUT + 4094) as u32], &init).unwrap_err();
    assert!(
        e.contains("kernel vec") && e.contains("GPU fault") && e.contains("0x100ffe"),
        "{e}"
    );
}

/// a3xx-style cat6 load (`ldl` opc 1, `ldp` opc 2): `dst ← space[addr + off]`, `size` elements (ir3-cat6.xml
/// `#instruction-cat6-a3xx-ld`: bit 0 set, OFF 1–13 signed, SRC 14–21, bit 23 set, SIZE 24–31, DST 32–39).
fn ld_a3xx(opc: u64, ty: u64, dst: u64, addr: u64, off: i64, size: u64) -> u64 {
    1 | (off as u64 & 0x1FFF) << 1
        | addr << 14
        | 1 << 23
        | size << 24
        | dst << 32
        | ty << 49
        | opc << 54
        | 6 << 61
}
/// a3xx-style cat6 store (`stl` opc 4, `stp` opc 5): `space[addr + off] ← src` (`#instruction-cat6-a3xx-st`: SRC
/// 1–8, OFF_HI 9–13 signed, bit 23 set, SIZE 24–31, OFF_LO 32–39, bit 40 set, DST (address) 41–48).
fn st_a3xx(opc: u64, ty: u64, addr: u64, off: i64, src: u64, size: u64) -> u64 {
    let off = off as u64 & 0x1FFF;
    src << 1
        | (off >> 8) << 9
        | 1 << 23
        | size << 24
        | (off & 0xFF) << 32
        | 1 << 40
        | addr << 41
        | ty << 49
        | opc << 54
        | 6 << 61
}
const LDL: u64 = 1;
const LDP: u64 = 2;
const STL: u64 = 4;
const STP: u64 = 5;
/// cat7 `bar` with `.l` and `.w` (opcode 0 in bits 55–58, bit 49 set; `.w` bit 51, `.l` bit 53).
const BAR: u64 = 7 << 61 | 1 << 49 | 1 << 51 | 1 << 53;

#[test]
fn private_memory_is_per_fiber_byte_addressed_and_zero_until_stored() {
    // r4.x = 10·lid + 1, r4.y = 10·lid + 2; stp.u32 p[r5.x + 8], r4.x, 2 with r5.x = 16 (so bytes 24..32);
    // ldp.u32 r1.x, p[r6.x − 4], 1 with r6.x = 32 reads the second dword back; r1.y from byte 0 (never stored).
    let p = store_r1x(vec![
        cat2(MULL_U, r(4, 0), gpr(r(0, 0)), imm(10), true, false),
        cat2(ADD_U, r(4, 1), gpr(r(4, 0)), imm(2), true, false),
        cat2(ADD_U, r(4, 0), gpr(r(4, 0)), imm(1), true, false),
        mov_imm(U32, r(5, 0), 16),
        mov_imm(U32, r(6, 0), 32),
        st_a3xx(STP, U32, r(5, 0), 8, r(4, 0), 2),
        mov_imm(U32, r(4, 1), 777),
        ld_a3xx(LDP, U32, r(1, 0), r(6, 0), -4, 1),
        ld_a3xx(LDP, U32, r(1, 1), r(6, 0), -32, 1),
        cat2(ADD_U, r(1, 0), gpr(r(1, 0)), gpr(r(1, 1)), true, false),
    ]);
    assert_eq!(exec(&p, 4, &[], &[]).unwrap(), vec![2, 12, 22, 32]);
    // A negative private address is an error naming the fiber, not a wild access.
    let p = store_r1x(vec![
        mov_imm(U32, r(6, 0), 0),
        ld_a3xx(LDP, U32, r(1, 0), r(6, 0), -4, 1),
    ]);
    let e = exec(&p, 2, &[], &[]).unwrap_err();
    assert!(e.contains("private-memory") && e.contains("fiber"), "{e}");
}

#[test]
fn predicated_off_fibers_do_not_store() {
    // Every fiber stores 5 to p[0]; under predt (p0.x = lid ≥ 2) fibers 2, 3 store 9 and ldp reads p[0] back.
    let p = store_r1x(vec![
        mov_imm(U32, r(5, 0), 0),
        mov_imm(U32, r(4, 0), 5),
        st_a3xx(STP, U32, r(5, 0), 0, r(4, 0), 1),
        mov_imm(U32, r(4, 0), 9),
        cmp2(CMPS_S, 3, 0xF8, gpr(r(0, 0)), imm(2)),
        PREDT,
        st_a3xx(STP, U32, r(5, 0), 0, r(4, 0), 1),
        PREDE,
        ld_a3xx(LDP, U32, r(1, 0), r(5, 0), 0, 1),
    ]);
    assert_eq!(exec(&p, 4, &[], &[]).unwrap(), vec![5, 5, 9, 9]);
}

#[test]
fn shared_memory_is_per_work_group_and_bar_orders_it() {
    // Each of 3 work groups of 4 fibers: stl.u32 l[4·lid], 100·wg + lid; bar; ldl.u32 r1.x, l[4·((lid + 1) & 3)];
    // then out[4·wg + lid] = r1.x. Every group must see only its own neighbours' values, all written before any
    // read (the groups may run together; shared memory and the barrier are per group).
    let words = [
        cat2(SHL_B, r(3, 0), gpr(r(0, 0)), imm(2), true, false),
        cat2(MULL_U, r(4, 0), gpr(r(48, 0)), imm(100), true, false),
        cat2(ADD_U, r(4, 0), gpr(r(4, 0)), gpr(r(0, 0)), true, false),
        st_a3xx(STL, U32, r(3, 0), 0, r(4, 0), 1),
        BAR,
        cat2(ADD_U, r(3, 1), gpr(r(0, 0)), imm(1), true, false),
        cat2(AND_B, r(3, 1), gpr(r(3, 1)), imm(3), true, false),
        cat2(SHL_B, r(3, 1), gpr(r(3, 1)), imm(2), true, false),
        ld_a3xx(LDL, U32, r(1, 0), r(3, 1), 0, 1),
        // r3.x = 4·(4·wg + lid) + c0.x
        cat2(SHL_B, r(3, 0), gpr(r(48, 0)), imm(2), true, false),
        cat2(ADD_U, r(3, 0), gpr(r(3, 0)), gpr(r(0, 0)), true, false),
        cat2(SHL_B, r(3, 0), gpr(r(3, 0)), imm(2), true, false),
        cat2(ADD_U, r(2, 0), cst(0), gpr(r(3, 0)), true, false),
        cat2(ADD_U, r(2, 1), cst(1), imm(0), true, false),
        stg(U32, r(2, 0), r(1, 0), 1),
        END,
    ];
    let prog = Program::decode("shared", &image(&words)).unwrap();
    let mut c = vec![OUT as u32, 0, 0, 0];
    c.resize(1024, 0);
    let mut mem = Mem(vec![0u8; 4096]);
    let launch = Launch {
        consts: &c,
        groups: [3, 1, 1],
        local: [4, 1, 1],
        wgid_reg: Some(192),
        lid_reg: Some(0),
        wgsize_reg: None,
        wgoffset_reg: None,
        textures: &[],
        uavs: &[],
        samplers: &[],
        ubos: &[],
        bindless: [0; 5],
        shared_bytes: 16,
        items: None,
    };
    run(&prog, &launch, &mut mem).unwrap();
    let got: Vec<u32> = mem.0[..48]
        .chunks_exact(4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    assert_eq!(
        got,
        vec![1, 2, 3, 0, 101, 102, 103, 100, 201, 202, 203, 200]
    );
}

#[test]
fn unknown_encodings_name_kernel_offset_and_bits() {
    // cat2 opcode 0b001000 is unassigned in ir3-cat2.xml.
    let bad = cat2(0b001000, r(1, 0), 0, 0, true, false);
    let e = Program::decode("k_bad", &image(&[END, bad])).unwrap_err();
    assert!(
        e.contains("k_bad")
            && e.contains("byte offset 0x8")
            && e.contains(&format!("{:08x}", bad >> 32)),
        "{e}"
    );
    assert!(Program::decode("odd", &[0u8; 12]).is_err());
}

#[test]
fn images_fetch_with_border_and_store_converted_to_half() {
    // isam (f32)(xyzw)r4.x, r6.x, s#0, t#0 then stib.b.typed.2d.f32.4.imm r4.x, r6.x, 0.
    let isam = r(6, 0) << 1 | 1 | 0b1111 << 40 | 1 << 44 | r(4, 0) << 32 | 5 << 61;
    let stib = 1 << 9
        | 1 << 11
        | 3 << 12
        | 0b011101 << 14
        | 0b110 << 20
        | r(6, 0) << 24
        | r(4, 0) << 32
        | 1 << 49
        | 1 << 53
        | 6 << 61;
    let words = [
        mov_imm(U32, r(6, 0), 0),
        cat2(ADD_U, r(6, 0), gpr(r(0, 0)), imm(-1), true, false), // x = lid − 1 (−1 is outside)
        mov_imm(U32, r(6, 1), 0),
        isam,
        cat2(ADD_U, r(6, 0), gpr(r(0, 0)), imm(0), true, false), // store at x = lid
        stib,
        END,
    ];
    let prog = Program::decode("img", &image(&words)).unwrap();
    let mut mem = Mem(vec![0u8; 4096]);
    // Source: 2×1 RGBA32F at OUT+1024; destination: 3×1 RGBA16F at OUT+2048.
    for (k, v) in [1.5f32, -2.0, 65519.0, 1e9, 0.1, 0.2, 0.3, 0.4]
        .iter()
        .enumerate()
    {
        mem.0[1024 + 4 * k..1028 + 4 * k].copy_from_slice(&v.to_le_bytes());
    }
    let src = Image {
        base: OUT + 1024,
        width: 2,
        height: 1,
        pitch: 64,
        half: false,
    };
    let dst = Image {
        base: OUT + 2048,
        width: 3,
        height: 1,
        pitch: 64,
        half: true,
    };
    let c = vec![0u32; 1024];
    let launch = Launch {
        consts: &c,
        groups: [1, 1, 1],
        local: [3, 1, 1],
        wgid_reg: None,
        lid_reg: Some(0),
        wgsize_reg: None,
        wgoffset_reg: None,
        textures: &[src],
        uavs: &[dst],
        samplers: &[],
        ubos: &[],
        bindless: [0; 5],
        shared_bytes: 0,
        items: None,
    };
    run(&prog, &launch, &mut mem).unwrap();
    let h: Vec<u16> = mem.0[2048..2048 + 24]
        .chunks_exact(2)
        .map(|b| u16::from_le_bytes([b[0], b[1]]))
        .collect();
    // Texel 0: border (0); texel 1 = src texel 0; texel 2 = src texel 1 (0.1 etc. rounded to binary16).
    assert_eq!(&h[0..4], &[0, 0, 0, 0]);
    assert_eq!(&h[4..8], &[0x3E00, 0xC000, 0x7BFF, 0x7C00]);
    assert_eq!(&h[8..12], &[0x2E66, 0x3266, 0x34CD, 0x3666]);
}

#[test]
fn isam_s2en_takes_the_texture_index_per_fiber_from_a_half_register() {
    // ir3-cat5.xml: S2EN_BINDLESS (bit 51) with DESC_MODE 0 (uniform) or 4 (nonuniform) names a half-register pair
    // in SRC3 (bits 21–28): sampler index, then texture index. Listing strings are Mesa's own (tinymesa
    // `ir3_isa_disasm`, gpu 630) for these words; the first is from inception_v2's `--image` conv.
    let mesa = [
        (
            0xa008_1f94_0620_017d_u64,
            "isam.s2en.uniform.1d (f32)(xyzw)r37.x, r47.z, hr12.y",
        ),
        (
            0xa008_1f94_0620_017d | 4 << 29,
            "isam.s2en.nonuniform.1d (f32)(xyzw)r37.x, r47.z, hr12.y",
        ),
        (
            0xa008_1f94_0620_017d | 1 << 18,
            "isam.s2en.uniform (f32)(xyzw)r37.x, r47.z, hr12.y",
        ),
    ];
    for (w, want) in mesa {
        let p = Program::decode("s2en", &image(&[w])).unwrap();
        assert_eq!(p.listing(), [want]);
    }
    // Bindless descriptor modes (1–3, 5–7) stay unsupported.
    assert!(Program::decode("bindless", &image(&[0xa008_1f94_0620_017d | 5 << 29])).is_err());

    // Fiber f fetches texel (0, 0) of texture 16 + f; texture t holds (t, 0, 0, 0).
    const U16: u64 = 2;
    let isam = r(6, 0) << 1
        | 1
        | 1 << 18
        | r(12, 1) << 21
        | r(4, 0) << 32
        | 0b1111 << 40
        | 1 << 44
        | 1 << 51
        | 5 << 61;
    let words = store_r1x(vec![
        cat2(ADD_U, r(5, 0), gpr(r(0, 0)), imm(16), true, false),
        cov(U32, U16, r(12, 1), r(5, 0)),
        cov(U32, U16, r(12, 2), r(5, 0)),
        mov_imm(U32, r(6, 0), 0),
        mov_imm(U32, r(6, 1), 0),
        isam,
        cat2(ADD_U, r(1, 0), gpr(r(4, 0)), imm(0), true, false),
    ]);
    let prog = Program::decode("s2en", &image(&words)).unwrap();
    let mut mem = Mem(vec![0u8; 4096]);
    let textures: Vec<Image> = (0..20u64)
        .map(|t| {
            let at = 1024 + 16 * t as usize;
            mem.0[at..at + 4].copy_from_slice(&(t as f32).to_le_bytes());
            Image {
                base: OUT + at as u64,
                width: 1,
                height: 1,
                pitch: 64,
                half: false,
            }
        })
        .collect();
    let mut c = vec![OUT as u32, 0, 0, 0];
    c.resize(1024, 0);
    let launch = Launch {
        consts: &c,
        groups: [1, 1, 1],
        local: [4, 1, 1],
        wgid_reg: None,
        lid_reg: Some(0),
        wgsize_reg: None,
        wgoffset_reg: None,
        textures: &textures,
        uavs: &[],
        samplers: &[],
        ubos: &[],
        bindless: [0; 5],
        shared_bytes: 0,
        items: None,
    };
    run(&prog, &launch, &mut mem).unwrap();
    let out: Vec<f32> = mem.0[..16]
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    assert_eq!(out, [16.0, 17.0, 18.0, 19.0]);
}

proptest::proptest! {
    /// Any 64-bit word either decodes (and prints) or is reported as unknown; nothing panics.
    #[test]
    fn decoding_any_word_never_panics(w in proptest::prelude::any::<u64>()) {
        if let Ok(p) = Program::decode("fuzz", &w.to_le_bytes()) {
            let _ = p.listing();
        }
    }

    /// Random non-flow instructions (then `end`) execute or fail with an error; nothing panics.
    #[test]
    fn executing_random_instructions_never_panics(
        ws in proptest::collection::vec(proptest::prelude::any::<u64>(), 1..6)
    ) {
        let mut words: Vec<u64> = ws.into_iter().filter(|w| w >> 61 != 0).collect();
        words.push(END);
        let _ = exec(&words, 4, &[], &[]);
    }
}

/// `words` over `groups` work groups of 256 fibers (two per batch of 512), on `threads` threads, over a zeroed
/// 4096-byte object: the memory afterwards and the result.
fn run_groups(
    words: &[u64],
    groups: u32,
    threads: usize,
) -> (Vec<u8>, Result<modelrt_ir3::Dispatched, String>) {
    let prog = Program::decode("wide", &image(words)).unwrap();
    let mut c = vec![OUT as u32, 0, 0, 0];
    c.resize(1024, 0);
    let mut mem = Mem(vec![0u8; 4096]);
    let launch = Launch {
        consts: &c,
        groups: [groups, 1, 1],
        local: [256, 1, 1],
        wgid_reg: Some(192),
        lid_reg: Some(0),
        wgsize_reg: None,
        wgoffset_reg: None,
        textures: &[],
        uavs: &[],
        samplers: &[],
        ubos: &[],
        bindless: [0; 5],
        shared_bytes: 0,
        items: None,
    };
    let r = run_threads(&prog, &launch, &mut mem, threads);
    (mem.0, r)
}

#[test]
fn overlapping_stores_of_parallel_work_groups_leave_the_last_work_groups_bytes() {
    // out[lid] = 100·wg + lid for every one of 7 work groups (4 batches): the same 1024 bytes written 7 times.
    let p = store_r1x(vec![
        cat2(MULL_U, r(4, 0), gpr(r(48, 0)), imm(100), true, false),
        cat2(ADD_U, r(1, 0), gpr(r(4, 0)), gpr(r(0, 0)), true, false),
    ]);
    let want: Vec<u8> = (0..1024u32)
        .flat_map(|i| if i < 256 { 600 + i } else { 0 }.to_le_bytes())
        .collect();
    let (serial, s) = run_groups(&p, 7, 1);
    let s = s.unwrap();
    assert_eq!(serial, want, "serially the last work group (6) wins");
    assert_eq!(s.overlapping_bytes, 0, "not counted serially");
    for threads in [2, 3, 8] {
        let (mem, r) = run_groups(&p, 7, threads);
        let r = r.unwrap();
        assert_eq!(mem, want, "{threads} threads: work group 6 wins");
        assert_eq!(r.stats, s.stats, "{threads} threads: same counters");
        assert_eq!(
            r.stats.fiber_instrs,
            7 * 256 * 7,
            "7 instructions per fiber"
        );
        assert_eq!(
            r.overlapping_bytes,
            3 * 1024,
            "batches 2, 3 and 4 each rewrite the 1024 bytes"
        );
    }
}

#[test]
fn the_first_faulting_work_group_in_order_is_reported_when_run_in_parallel() {
    // out[256·wg + lid] = 256·wg + lid: work groups 4, 5, 6 store past the 4096-byte object.
    let words = [
        cat2(SHL_B, r(3, 0), gpr(r(48, 0)), imm(8), true, false),
        cat2(ADD_U, r(1, 0), gpr(r(3, 0)), gpr(r(0, 0)), true, false),
        cat2(SHL_B, r(3, 0), gpr(r(1, 0)), imm(2), true, false),
        cat2(ADD_U, r(2, 0), cst(0), gpr(r(3, 0)), true, false),
        cat2(ADD_U, r(2, 1), cst(1), imm(0), true, false),
        stg(U32, r(2, 0), r(1, 0), 1),
        END,
    ];
    let (serial, e) = run_groups(&words, 7, 1);
    let e = e.unwrap_err();
    assert!(
        e.starts_with("kernel wide: work groups (4, 0, 0)…(5, 0, 0):")
            && e.contains("GPU fault in fiber 0: address 0x101000 outside the test object"),
        "{e}"
    );
    let want: Vec<u8> = (0..1024u32).flat_map(u32::to_le_bytes).collect();
    assert_eq!(serial, want, "work groups 0-3 stored before the fault");
    for threads in [2, 3] {
        let (mem, r) = run_groups(&words, 7, threads);
        assert_eq!(r.unwrap_err(), e, "{threads} threads: the serial error");
        assert_eq!(mem, serial, "{threads} threads: the serial memory");
    }
}
