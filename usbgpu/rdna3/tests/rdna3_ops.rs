//! Per-instruction vectors for the RDNA3 interpreter: edge values (NaN, ±0, denormals, overflow,
//! carries, inactive lanes) with the expected results worked out by hand from the ISA text and
//! IEEE-754 — each case's reasoning is in its comment; nothing here was produced by running the
//! interpreter. Kernels request RNE with denormals preserved and IEEE_MODE, so that is the mode.
mod rdna3_support;

use modelrt_rdna3::decode::decode;
use modelrt_rdna3::ops::Enc;
use modelrt_rdna3::wave::Wave;
use modelrt_rdna3::{salu, valu};
use rdna3_support::asm::*;

const F_INF: u32 = 0x7f80_0000;
const F_NINF: u32 = 0xff80_0000;
const F_ONE: u32 = 0x3f80_0000;
const QNAN: u32 = 0x7fc0_0000;

fn wave() -> Wave {
    let mut w = Wave::default();
    w.s[EXEC as usize] = u32::MAX;
    w
}

fn run(w: &mut Wave, words: &[u32]) {
    let i = decode(words).expect("test instruction decodes");
    assert_eq!(usize::from(i.len), words.len(), "instruction length");
    let r = match i.enc {
        Enc::Sop1 | Enc::Sop2 | Enc::Sopk | Enc::Sopc => salu::exec(w, &i),
        Enc::Vopd => valu::exec_vopd(w, &i),
        _ => valu::exec(w, &i),
    };
    r.expect("instruction executes");
}

/// Lanes 0.. of `v1`/`v2`/`v3` get the given values; returns v0 after `words`.
fn lanes(words: &[u32], a: &[u32], b: &[u32], c: &[u32]) -> Vec<u32> {
    let mut w = wave();
    for (r, vals) in [(1, a), (2, b), (3, c)] {
        for (l, &x) in vals.iter().enumerate() {
            w.v[r][l] = x;
        }
    }
    run(&mut w, words);
    w.v[0][..a.len().max(1)].to_vec()
}

#[test]
fn max_min_follow_ieee_mode_nan_and_signed_zero_rules() {
    // v_max_f32 v0, v1, v2. IEEE mode: −0 < +0, so max(+0,−0) = max(−0,+0) = +0; one quiet NaN
    // returns the other operand; a signalling NaN returns that NaN quieted (bit 22 set).
    let max = [vop2(16, 0, v(1), 2)];
    assert_eq!(
        lanes(
            &max,
            &[0, 0x8000_0000, QNAN, F_ONE, 0x7f80_0001],
            &[0x8000_0000, 0, F_ONE, QNAN, F_ONE],
            &[]
        ),
        [0, 0, F_ONE, F_ONE, 0x7fc0_0001]
    );
    // v_min_f32: min(+0, −0) = −0 either way round.
    let min = [vop2(15, 0, v(1), 2)];
    assert_eq!(
        lanes(&min, &[0, 0x8000_0000], &[0x8000_0000, 0], &[]),
        [0x8000_0000, 0x8000_0000]
    );
}

#[test]
fn f32_arithmetic_keeps_denormals_and_overflows_to_infinity() {
    // 2^-149 + 2^-149 = 2^-148 (0x00000002): kept, not flushed. FLT_MAX × 2 = +inf.
    // 0x00800000 (2^-126) × 0.5 = 2^-127 = denormal 0x00400000.
    let add = [vop2(3, 0, v(1), 2)];
    assert_eq!(lanes(&add, &[1], &[1], &[]), [2]);
    let mul = [vop2(8, 0, v(1), 2)];
    assert_eq!(
        lanes(
            &mul,
            &[0x7f7f_ffff, 0x0080_0000],
            &[0x4000_0000, 0x3f00_0000],
            &[]
        ),
        [F_INF, 0x0040_0000]
    );
}

#[test]
fn fma_rounds_once() {
    // a = 1 + 2^-23. a·a = 1 + 2^-22 + 2^-46 exactly; rounded alone it is 1 + 2^-22 (0x3f800002).
    // fma(a, a, −(1 + 2^-22)) keeps the 2^-46 (0x28800000); a separate multiply and add gives 0.
    let a = 0x3f80_0001;
    let fma = vop3(531, 0, [v(1), v(2), v(3)], 0, 0, false);
    assert_eq!(lanes(&fma, &[a], &[a], &[0xbf80_0002]), [0x2880_0000]);
    // v_fmac_f32 v0, v1, v2 accumulates into v0 the same way.
    let mut w = wave();
    w.v[1][0] = a;
    w.v[2][0] = a;
    w.v[0][0] = 0xbf80_0002;
    run(&mut w, &[vop2(43, 0, v(1), 2)]);
    assert_eq!(w.v[0][0], 0x2880_0000);
    // neg modifier on src2 (VOP3 NEG bit 2): fma(a, a, −(−(1 + 2^-22))) = 2 + 2^-21 + … rounds to
    // 0x40000002 (2 + 2^-21 is exactly representable: ulp(2) = 2^-22; the 2^-46 is dropped).
    let fma_neg = vop3(531, 0, [v(1), v(2), v(3)], 0, 0b100, false);
    assert_eq!(lanes(&fma_neg, &[a], &[a], &[0xbf80_0002]), [0x4000_0002]);
}

#[test]
fn float_to_int_conversions_saturate() {
    // v_cvt_i32_f32: NaN → 0, 3e9 → INT_MAX, −3e9 → INT_MIN, −1.5 → −1 (truncation).
    let i = [vop1(8, 0, v(1))];
    let (nan, big, nbig, m15) = (QNAN, 0x4f32_d05e, 0xcf32_d05e, 0xbfc0_0000);
    assert_eq!(
        lanes(&i, &[nan, big, nbig, m15], &[], &[]),
        [0, 0x7fff_ffff, 0x8000_0000, 0xffff_ffff]
    );
    // v_cvt_u32_f32: −1.0 → 0, 5e9 → UINT_MAX, NaN → 0, 2.9 → 2.
    let u = [vop1(7, 0, v(1))];
    assert_eq!(
        lanes(&u, &[0xbf80_0000, 0x4f95_02f9, nan, 0x4039_9999], &[], &[]),
        [0, u32::MAX, 0, 2]
    );
    // v_cvt_f32_u32(0xffffffff) = 2^32 after RNE (0x4f800000); v_cvt_f32_i32(2^24 + 1) ties to
    // even → 2^24 (0x4b800000).
    assert_eq!(
        lanes(&[vop1(6, 0, v(1))], &[u32::MAX], &[], &[]),
        [0x4f80_0000]
    );
    assert_eq!(
        lanes(&[vop1(5, 0, v(1))], &[16_777_217], &[], &[]),
        [0x4b80_0000]
    );
}

#[test]
fn f16_to_f32_is_exact_including_denormals() {
    // f16 0x0001 = 2^-24 → f32 0x33800000; 0x7c00 = +inf; 0xfc00 = −inf; 0x3c00 = 1.0;
    // 0x8000 = −0.
    assert_eq!(
        lanes(
            &[vop1(11, 0, v(1))],
            &[1, 0x7c00, 0xfc00, 0x3c00, 0x8000],
            &[],
            &[]
        ),
        [0x3380_0000, F_INF, F_NINF, F_ONE, 0x8000_0000]
    );
}

#[test]
fn fma_mix_converts_selected_f16_halves() {
    // v_fma_mix_f32 v0, v1, v2, v3 op_sel_hi:[1,1,0]: f16 1.5 (0x3e00) × f16 2.0 (0x4000)
    // + f32 0.25 = 3.25 (0x40500000).
    let mix = vop3p(32, 0, [v(1), v(2), v(3)], 0b011);
    assert_eq!(
        lanes(&mix, &[0x3e00], &[0x4000], &[0x3e80_0000]),
        [0x4050_0000]
    );
}

#[test]
fn transcendentals_hit_the_isa_special_values() {
    // v_exp_f32: 2^1 = 2, 2^−inf = +0, 2^−126 = 0x00800000, 2^−149 = 0x00000001 (denormal kept),
    // 2^128 = +inf.
    let c = |x: f32| x.to_bits();
    assert_eq!(
        lanes(
            &[vop1(37, 0, v(1))],
            &[F_ONE, F_NINF, c(-126.0), c(-149.0), c(128.0)],
            &[],
            &[]
        ),
        [0x4000_0000, 0, 0x0080_0000, 1, F_INF]
    );
    // v_log_f32: log2(8) = 3, log2(±0) = −inf, log2(−1) = NaN, log2(2^−149) = −149.
    let log = lanes(
        &[vop1(39, 0, v(1))],
        &[c(8.0), 0, 0x8000_0000, c(-1.0), 1],
        &[],
        &[],
    );
    assert_eq!(log[..3], [c(3.0), F_NINF, F_NINF]);
    assert!(f32::from_bits(log[3]).is_nan());
    assert_eq!(log[4], c(-149.0));
    // v_rcp_f32: 1/+0 = +inf, 1/−0 = −inf, 1/4 = 0.25, 1/inf = +0.
    assert_eq!(
        lanes(
            &[vop1(42, 0, v(1))],
            &[0, 0x8000_0000, c(4.0), F_INF],
            &[],
            &[]
        ),
        [F_INF, F_NINF, c(0.25), 0]
    );
    // v_rsq_f32: 1/sqrt(4) = 0.5, rsq(+0) = +inf, rsq(−0) = −inf, rsq(−1) = NaN.
    let rsq = lanes(
        &[vop1(46, 0, v(1))],
        &[c(4.0), 0, 0x8000_0000, c(-1.0)],
        &[],
        &[],
    );
    assert_eq!(rsq[..3], [c(0.5), F_INF, F_NINF]);
    assert!(f32::from_bits(rsq[3]).is_nan());
    // v_sqrt_f32: sqrt(−0) = −0, sqrt(2^−148) = 2^−74 (0x1a800000).
    assert_eq!(
        lanes(&[vop1(51, 0, v(1))], &[0x8000_0000, 2], &[], &[]),
        [0x8000_0000, 0x1a80_0000]
    );
}

#[test]
fn ldexp_rounds_once_into_denormals() {
    // 1.0 × 2^−149 = 0x00000001; 1.5 × 2^−149 is a tie between 1 and 2 units → even (2);
    // 1.0 × 2^128 = +inf; −0 stays −0.
    let ldexp = vop3(796, 0, [v(1), v(2), 0], 0, 0, false);
    assert_eq!(
        lanes(
            &ldexp,
            &[F_ONE, 0x3fc0_0000, F_ONE, 0x8000_0000],
            &[(-149i32) as u32, (-149i32) as u32, 128, 5],
            &[]
        ),
        [1, 2, F_INF, 0x8000_0000]
    );
}

#[test]
fn integer_multiplies_use_24_bits_and_high_halves() {
    // v_mul_u32_u24: 0x01000003 × 5 uses only the low 24 bits: 3 × 5 = 15.
    assert_eq!(
        lanes(&[vop2(11, 0, v(1), 2)], &[0x0100_0003], &[5], &[]),
        [15]
    );
    // v_mul_i32_i24: 0x00ffffff is −1 as a 24-bit signed value: −1 × 2 = −2.
    assert_eq!(
        lanes(&[vop2(9, 0, v(1), 2)], &[0x00ff_ffff], &[2], &[]),
        [0xffff_fffe]
    );
    // v_mad_u32_u24: 0xff000002 × 3 + 1 = 7.
    let mad = vop3(523, 0, [v(1), v(2), v(3)], 0, 0, false);
    assert_eq!(lanes(&mad, &[0xff00_0002], &[3], &[1]), [7]);
    // v_mul_hi_u32(0xffffffff, 0xffffffff) = high half of 0xfffffffe_00000001;
    // v_mul_hi_i32(−1, −1) = high half of 1 = 0.
    let hi_u = vop3(813, 0, [v(1), v(2), 0], 0, 0, false);
    assert_eq!(lanes(&hi_u, &[u32::MAX], &[u32::MAX], &[]), [0xffff_fffe]);
    let hi_i = vop3(814, 0, [v(1), v(2), 0], 0, 0, false);
    assert_eq!(lanes(&hi_i, &[u32::MAX], &[u32::MAX], &[]), [0]);
}

#[test]
fn sixty_four_bit_ops() {
    // v_mad_u64_u32 v[0:1], null, v1, v2, v[4:5]: 0xffffffff² + 0xffffffff
    // = 0xfffffffe_00000001 + 0xffffffff = 0xffffffff_00000000 (no carry out of 64 bits).
    let mut w = wave();
    w.v[1][0] = u32::MAX;
    w.v[2][0] = u32::MAX;
    w.v[4][0] = u32::MAX;
    w.v[5][0] = 0;
    run(&mut w, &vop3sd(766, 0, NULL, [v(1), v(2), v(4)]));
    assert_eq!((w.v[0][0], w.v[1][0]), (0, 0xffff_ffff));
    // v_lshlrev_b64 v[0:1], 33, v[2:3]: 1 << 33 = 0x2_00000000.
    let mut w = wave();
    w.v[2][0] = 1;
    run(&mut w, &vop3(828, 0, [int(33), v(2), 0], 0, 0, false));
    assert_eq!((w.v[0][0], w.v[1][0]), (0, 2));
    // v_cmp_lt_u64 vcc, v[1:2], v[3:4]: 0x1_00000000 < 0x0_ffffffff is false (lane 0);
    // 0x0_ffffffff < 0x1_00000000 is true (lane 1).
    let mut w = wave();
    w.v[1][..2].copy_from_slice(&[0, u32::MAX]);
    w.v[2][..2].copy_from_slice(&[1, 0]);
    w.v[3][..2].copy_from_slice(&[u32::MAX, 0]);
    w.v[4][..2].copy_from_slice(&[0, 1]);
    w.s[EXEC as usize] = 0b11;
    run(&mut w, &[vopc(89, v(1), 3)]);
    assert_eq!(w.s[VCC as usize], 0b10);
}

#[test]
fn carries_and_inactive_lanes() {
    // v_add_co_u32 v0, s10, v1, v2 with EXEC = lanes 0,1: lane 0 0xffffffff + 1 = 0 carry 1;
    // lane 1 1 + 1 = 2 carry 0; lane 2 inactive: v0 keeps 0x55, its carry bit is 0 even though
    // 0xffffffff + 1 would carry.
    let mut w = wave();
    w.s[EXEC as usize] = 0b011;
    w.v[0][2] = 0x55;
    w.v[1][..3].copy_from_slice(&[u32::MAX, 1, u32::MAX]);
    w.v[2][..3].copy_from_slice(&[1, 1, 1]);
    run(&mut w, &vop3sd(768, 0, s(10), [v(1), v(2), 0]));
    assert_eq!(w.v[0][..3], [0, 2, 0x55]);
    assert_eq!(w.s[10], 0b001);
    // v_add_co_ci_u32_e32 v0, vcc, v1, v2, vcc: carry in from VCC lane 1 only:
    // lane 0 5 + 6 + 0 = 11, lane 1 0xffffffff + 0 + 1 = 0 carry out.
    let mut w = wave();
    w.s[EXEC as usize] = 0b11;
    w.s[VCC as usize] = 0b10;
    w.v[1][..2].copy_from_slice(&[5, u32::MAX]);
    w.v[2][..2].copy_from_slice(&[6, 0]);
    run(&mut w, &[vop2(32, 0, v(1), 2)]);
    assert_eq!(w.v[0][..2], [11, 0]);
    assert_eq!(w.s[VCC as usize], 0b10);
    // A plain VALU write leaves inactive lanes alone: v_mov_b32 v0, 7 with EXEC = low 16 lanes.
    let mut w = wave();
    w.s[EXEC as usize] = 0xffff;
    w.v[0] = [9; 32];
    run(&mut w, &[vop1(1, 0, int(7))]);
    assert_eq!(w.v[0][15], 7);
    assert_eq!(w.v[0][16], 9);
}

#[test]
fn compares_handle_nan_and_write_zero_for_inactive_lanes() {
    // v_cmp_gt_f32 vcc, v1, v2 with (NaN, 1), (2, 1), (2, 1 but lane inactive):
    // ordered compare with NaN is false; 2 > 1 true; inactive lane 2 → 0.
    let mut w = wave();
    w.s[EXEC as usize] = 0b011;
    w.v[1][..3].copy_from_slice(&[QNAN, 0x4000_0000, 0x4000_0000]);
    w.v[2][..3].copy_from_slice(&[F_ONE, F_ONE, F_ONE]);
    run(&mut w, &[vopc(20, v(1), 2)]);
    assert_eq!(w.s[VCC as usize], 0b010);
    // v_cmp_neq_f32 (unordered or not equal) and v_cmp_nlt_f32 (not less than) are true on NaN.
    run(&mut w, &[vopc(29, v(1), 2)]);
    assert_eq!(w.s[VCC as usize] & 1, 1);
    run(&mut w, &[vopc(30, v(1), 2)]);
    assert_eq!(w.s[VCC as usize] & 1, 1);
    // v_cmpx_eq_u32 0, v3 writes EXEC (and not VCC): lanes where v3 == 0 among active lanes 0,1.
    let mut w = wave();
    w.s[EXEC as usize] = 0b011;
    w.s[VCC as usize] = 0xabcd;
    w.v[3][..3].copy_from_slice(&[0, 5, 0]);
    run(&mut w, &[vopc(202, int(0), 3)]);
    assert_eq!(w.s[EXEC as usize], 0b001);
    assert_eq!(w.s[VCC as usize], 0xabcd);
}

#[test]
fn clamp_saturates_float_results() {
    // v_add_f32_e64 v0, v1, v2 clamp: 0.75 + 0.75 = 1.5 → 1.0; −1 + 0 → 0; NaN → 0 (DX10_CLAMP).
    let add = vop3(256 + 3, 0, [v(1), v(2), 0], 0, 0, true);
    assert_eq!(
        lanes(
            &add,
            &[0x3f40_0000, 0xbf80_0000, QNAN],
            &[0x3f40_0000, 0, 0],
            &[]
        ),
        [F_ONE, 0, 0]
    );
    // |x| and −x source modifiers: v_add_f32_e64 v0, −|v1|, v2 with v1 = −2, v2 = 3 → 1.
    let add = vop3(256 + 3, 0, [v(1), v(2), 0], 0b001, 0b001, false);
    assert_eq!(lanes(&add, &[0xc000_0000], &[0x4040_0000], &[]), [F_ONE]);
}

#[test]
fn xor_add() {
    // v_xad_u32 v0, v1, -1, v2: (0x0000000f XOR 0xffffffff) + 1 = 0xfffffff0 + 1 = 0xfffffff1;
    // the add wraps: (0 XOR 0xffffffff) + 2 = 1.
    let xad = vop3(581, 0, [v(1), int(-1), v(2)], 0, 0, false);
    assert_eq!(lanes(&xad, &[0xf, 0], &[1, 2], &[]), [0xffff_fff1, 1]);
}

#[test]
fn bitfield_extracts() {
    // v_bfe_u32(0xabcd1234, 8, 8) = 0x12; v_bfe_i32(0x0000ff00, 8, 8) = 0xff sign-extended = −1.
    let u = vop3(528, 0, [v(1), int(8), int(8)], 0, 0, false);
    assert_eq!(lanes(&u, &[0xabcd_1234], &[], &[]), [0x12]);
    let i = vop3(529, 0, [v(1), int(8), int(8)], 0, 0, false);
    assert_eq!(lanes(&i, &[0x0000_ff00], &[], &[]), [u32::MAX]);
}

#[test]
fn vopd_reads_both_halves_before_writing() {
    // v_dual_mov_b32 v0, v1 :: v_dual_mov_b32 v1, v0 swaps v0 and v1: the Y half reads the old v0.
    let mut w = wave();
    w.v[0] = [10; 32];
    w.v[1] = [20; 32];
    run(&mut w, &vopd(8, 0, [v(1), 256], 8, 1, [v(0), 256]));
    assert_eq!((w.v[0][0], w.v[1][0]), (20, 10));
}

#[test]
fn scalar_carries_overflow_and_scc() {
    // s_add_u32 s0, s1, s2: 0xffffffff + 1 = 0, SCC = carry = 1; then s_addc_u32 s3, 0, 0 adds
    // SCC: 1, SCC = 0.
    let mut w = wave();
    w.s[1] = u32::MAX;
    w.s[2] = 1;
    run(&mut w, &[sop2(0, 0, s(1), s(2))]);
    assert_eq!((w.s[0], w.scc), (0, true));
    run(&mut w, &[sop2(4, 3, int(0), int(0))]);
    assert_eq!((w.s[3], w.scc), (1, false));
    // s_sub_u32: 0 − 1 = 0xffffffff with SCC = borrow = 1.
    run(&mut w, &[sop2(1, 4, int(0), int(1))]);
    assert_eq!((w.s[4], w.scc), (u32::MAX, true));
    // s_add_i32: 0x7fffffff + 1 = 0x80000000, SCC = signed overflow = 1.
    w.s[5] = 0x7fff_ffff;
    run(&mut w, &[sop2(2, 6, s(5), int(1))]);
    assert_eq!((w.s[6], w.scc), (0x8000_0000, true));
    // s_cselect_b32 s7, 1, 2 picks src0 when SCC = 1.
    run(&mut w, &[sop2(48, 7, int(1), int(2))]);
    assert_eq!(w.s[7], 1);
    // s_cmpk_lt_u32 s8, 0x8000 zero-extends (40000 < 32768 is false); s_cmpk_lt_i32 s8, 0x8000
    // sign-extends to −32768 (also false); s8 = −40000 < −32768 is true for the signed form.
    w.s[8] = 40_000;
    run(&mut w, &[sopk(13, 8, 0x8000)]);
    assert!(!w.scc);
    w.s[8] = (-40_000i32) as u32;
    run(&mut w, &[sopk(7, 8, 0x8000)]);
    assert!(w.scc);
    // s_bitcmp1_b32 s9, 3: bit 3 of 0b1000 is set.
    w.s[9] = 0b1000;
    run(&mut w, &[sopc(13, s(9), int(3))]);
    assert!(w.scc);
}

#[test]
fn saveexec_updates_exec_and_scc() {
    // s_and_saveexec_b32 s3, s2: s3 = old EXEC, EXEC = s2 & old EXEC, SCC = (EXEC != 0).
    let mut w = wave();
    w.s[EXEC as usize] = 0xff;
    w.s[2] = 0x0f;
    run(&mut w, &[sop1(32, 3, s(2))]);
    assert_eq!((w.s[3], w.s[EXEC as usize], w.scc), (0xff, 0x0f, true));
    w.s[2] = 0xf00;
    run(&mut w, &[sop1(32, 3, s(2))]);
    assert_eq!((w.s[3], w.s[EXEC as usize], w.scc), (0x0f, 0, false));
    // s_lshl_b64 s[4:5], s[6:7], 36: 1 << 36 → s5 = 0x10, SCC = result ≠ 0.
    w.s[6] = 1;
    w.s[7] = 0;
    run(&mut w, &[sop2(9, 4, s(6), int(36))]);
    assert_eq!((w.s[4], w.s[5], w.scc), (0, 0x10, true));
}

/// Lane 0 of `v0` after `words`, with v0 = `old`, v1 = `a`, v2 = `b` beforehand.
fn over(words: &[u32], old: u32, a: u32, b: u32) -> u32 {
    let mut w = wave();
    (w.v[0][0], w.v[1][0], w.v[2][0]) = (old, a, b);
    run(&mut w, words);
    w.v[0][0]
}

#[test]
fn sixteen_bit_integer_ops_read_low_halves_and_keep_the_destination_high_half() {
    // ISA (VOP3 opcodes 771, 824, 825): v_add_nc_u16 D.u16 = S0.u16 + S1.u16;
    // v_lshlrev_b16 D.u16 = S1.u16 << S0[3:0]; v_lshrrev_b16 D.u16 = S1.u16 >> S0[3:0].
    // Sources are their low 16 bits (op_sel = 0); the 16-bit result goes to the low half of the
    // VGPR and the high half keeps its old value (RDNA3 16-bit results name one half of a VGPR).
    const OLD: u32 = 0xdead_beef;
    let add = vop3(771, 0, [v(1), v(2), 0], 0, 0, false);
    // 0xfff0 + 0x0020 = 0x1_0010 → wraps to 0x0010; the sources' high halves (0x1234, 0xabcd)
    // are not read and no carry reaches bit 16: 0xdead_0010.
    assert_eq!(over(&add, OLD, 0x1234_fff0, 0xabcd_0020), 0xdead_0010);
    // 0x7fff + 1 = 0x8000: an unsigned add, no signed saturation.
    assert_eq!(over(&add, OLD, 0x7fff, 1), 0xdead_8000);
    // The pipeline's form `v_lshlrev_b16 v0, 8, v1`: 0x00ab << 8 = 0xab00.
    let shl8 = vop3(824, 0, [int(8), v(1), 0], 0, 0, false);
    assert_eq!(over(&shl8, OLD, 0x1234_00ab, 0), 0xdead_ab00);
    // 0xff00 << 8 = 0xff_0000: the bits shifted past bit 15 are dropped, not written to the
    // high half: 0xdead_0000.
    assert_eq!(over(&shl8, OLD, 0xff00, 0), 0xdead_0000);
    // Only S0[3:0] counts: 17 → 1; 0x8001 << 1 = 0x1_0002 → 0x0002.
    let shl17 = vop3(824, 0, [int(17), v(1), 0], 0, 0, false);
    assert_eq!(over(&shl17, OLD, 0x8001, 0), 0xdead_0002);
    // `v_lshrrev_b16 v0, 8, v1`: logical, and the source's high half is not shifted in:
    // 0x8000 >> 8 = 0x0080 (an arithmetic shift, or a 32-bit shift of 0xffff_8000, would leave
    // 0xff80 in the low half).
    let shr8 = vop3(825, 0, [int(8), v(1), 0], 0, 0, false);
    assert_eq!(over(&shr8, OLD, 0xffff_8000, 0), 0xdead_0080);
    // Shift 20 → 20 & 15 = 4: 0xf000 >> 4 = 0x0f00.
    let shr20 = vop3(825, 0, [int(20), v(1), 0], 0, 0, false);
    assert_eq!(over(&shr20, OLD, 0xf000, 0), 0xdead_0f00);
    // An inactive lane keeps its whole VGPR: EXEC = lane 0 only; lane 1 (0x0001 + 0x0001 if it
    // ran) keeps 0xdead_beef.
    let mut w = wave();
    w.s[EXEC as usize] = 1;
    for l in 0..2 {
        (w.v[0][l], w.v[1][l], w.v[2][l]) = (OLD, 1, 1);
    }
    run(&mut w, &add);
    assert_eq!((w.v[0][0], w.v[0][1]), (0xdead_0002, OLD));
    // clamp on a 16-bit integer op (saturation) is not modelled: refused, never ignored.
    let i = decode(&vop3(771, 0, [v(1), v(2), 0], 0, 0, true)).unwrap();
    assert!(valu::exec(&mut wave(), &i).is_err());
}

#[test]
fn cvt_f32_ubyte_converts_one_byte() {
    // v_cvt_f32_ubyteN (VOP1 17–20): D.f32 = (float)S0[8N+7:8N], unsigned; the whole VGPR is
    // written (a 32-bit result). Source 0x80ff_0201: byte 0 = 1 → 1.0 = 0x3f800000;
    // byte 1 = 2 → 2.0 = 0x40000000; byte 2 = 255 = 1.9921875 × 2^7 → exponent 127 + 7 = 0x86,
    // mantissa 0.9921875 × 2^23 = 0x7f0000 → 0x437f0000; byte 3 = 128 = 2^7 → 0x43000000.
    let want = [F_ONE, 0x4000_0000, 0x437f_0000, 0x4300_0000];
    for (n, want) in want.into_iter().enumerate() {
        let op = 17 + n as u32;
        assert_eq!(
            over(&[vop1(op, 0, v(1))], 0xdead_beef, 0x80ff_0201, 0),
            want,
            "ubyte{n}"
        );
        // The same operation in VOP3 (opcode 384 + VOP1 opcode).
        let e64 = vop3(384 + op, 0, [v(1), 0, 0], 0, 0, false);
        assert_eq!(over(&e64, 0, 0x80ff_0201, 0), want, "ubyte{n}_e64");
    }
}

// ---- 16-bit operations (docs/hw/rdna3-isa.md §7). f16 values: 1.0 = 0x3c00, 1.5 = 0x3e00, 2.0 = 0x4000,
// 3.0 = 0x4200, 0.5 = 0x3800, +inf = 0x7c00, −inf = 0xfc00, quiet NaN = 0x7e00; an f16 with exponent field
// E and mantissa M is (1 + M/1024)·2^(E−15), or M·2^-24 when E = 0.

fn is_f16_nan(x: u32) -> bool {
    x & 0x7fff > 0x7c00
}

#[test]
fn f16_multiply_rounds_once_to_nearest_even() {
    // v_mul_f16_e32 v0, v1, v2 (VOP2 53).
    let mul = [vop2(53, 0, v(1), 2)];
    assert_eq!(
        lanes(
            &mul,
            &[0x3e00, 0x5c00, 0x0400, 0x3c01, 0x3c03],
            &[0x4000, 0x5c00, 0x3800, 0x3e00, 0x3e00],
            &[]
        ),
        [
            // 1.5 × 2 = 3.
            0x4200,
            // 256 × 256 = 65536 ≥ 65520 (half an ulp above the largest finite, 65504): +inf.
            0x7c00, // 2^-14 × 0.5 = 2^-15: a denormal, 512 units of 2^-24.
            0x0200,
            // (1 + 2^-10) × 1.5 = 1.5 + 1.5 ulp: a tie between mantissas 0x201 and 0x202 → even.
            0x3e02,
            // (1 + 3·2^-10) × 1.5 = 1.5 + 4.5 ulp: a tie between 0x204 and 0x205 → even (down).
            0x3e04,
        ]
    );
}

#[test]
fn f16_add_ties_to_even_cancels_to_plus_zero_and_inf_minus_inf_is_nan() {
    // v_add_f16_e32 v0, v1, v2 (VOP2 50); 0x1000 = 2^-11 = half an ulp of 1.0.
    let add = [vop2(50, 0, v(1), 2)];
    let r = lanes(
        &add,
        &[0x3c00, 0x3c01, 0x3c00, 0x7c00],
        &[0x1000, 0x1000, 0xbc00, 0xfc00],
        &[],
    );
    // 1 + 2^-11: tie → 1.0 (even); (1 + 2^-10) + 2^-11: tie → 1 + 2^-9 (even); 1 + (−1) = +0.
    assert_eq!(r[..3], [0x3c00, 0x3c02, 0x0000]);
    assert!(is_f16_nan(r[3]), "inf + −inf = {:#x}", r[3]);
}

#[test]
fn f16_results_fill_the_low_half_and_keep_the_high_half() {
    let mut w = wave();
    w.v[0][0] = 0xabcd_1234;
    w.v[1][0] = 0x3e00;
    w.v[2][0] = 0xffff_4000; // a 16-bit source is the low half: 2.0
    run(&mut w, &[vop2(53, 0, v(1), 2)]);
    assert_eq!(w.v[0][0], 0xabcd_4200);
    // v_fmac_f16_e32 v0, v1, v2 (VOP2 54): D.f16 = S0 · S1 + D.f16 = 2 · 3 + 1 = 7 (0x4700).
    let mut w = wave();
    w.v[0][0] = 0x5555_3c00;
    w.v[1][0] = 0x4000;
    w.v[2][0] = 0x4200;
    run(&mut w, &[vop2(54, 0, v(1), 2)]);
    assert_eq!(w.v[0][0], 0x5555_4700);
}

#[test]
fn f16_fma_is_fused() {
    // v_fma_f16 v0, v1, v2, v3 (VOP3 584): (1 + 2^-10)² − (1 + 2^-9) = 2^-20 exactly = 16 units of 2^-24
    // (0x0010); rounding the product first (to 1 + 2^-9) would give 0.
    let fma = vop3(584, 0, [v(1), v(2), v(3)], 0, 0, false);
    assert_eq!(lanes(&fma, &[0x3c01], &[0x3c01], &[0xbc02]), [0x0010]);
    // Inline constants are f16 here: v_fma_f16 v0, v1, 2.0, -1.0 with v1 = 0.5 → 0.
    let k = vop3(584, 0, [v(1), TWO, 243], 0, 0, false);
    assert_eq!(lanes(&k, &[0x3800], &[], &[]), [0x0000]);
}

#[test]
fn f16_integer_conversions_round_saturate_and_truncate() {
    // v_cvt_f16_u16 (VOP1 80): 65535 → +inf (above 65520); 2049 is a tie between 2048 and 2050 → 2048
    // (0x6800, even mantissa); 3 → 0x4200.
    assert_eq!(
        lanes(&[vop1(80, 0, v(1))], &[65535, 2049, 3], &[], &[]),
        [0x7c00, 0x6800, 0x4200]
    );
    // v_cvt_f16_i16 (VOP1 81): −1 → 0xbc00, −32768 = −2^15 → 0xf800.
    assert_eq!(
        lanes(&[vop1(81, 0, v(1))], &[0xffff, 0x8000], &[], &[]),
        [0xbc00, 0xf800]
    );
    // v_cvt_i16_f16 (VOP1 83): −1.5 → −1 (truncation), +inf → 32767, NaN → 0, 65504 → 32767.
    assert_eq!(
        lanes(
            &[vop1(83, 0, v(1))],
            &[0xbe00, 0x7c00, 0x7e00, 0x7bff],
            &[],
            &[]
        ),
        [0xffff, 0x7fff, 0, 0x7fff]
    );
    // v_cvt_u16_f16 (VOP1 82): −1.5 → 0, 65504 → 65504 (0xffe0).
    assert_eq!(
        lanes(&[vop1(82, 0, v(1))], &[0xbe00, 0x7bff], &[], &[]),
        [0, 0xffe0]
    );
}

#[test]
fn f16_trunc_rcp_and_exp_hit_the_isa_special_values() {
    // v_trunc_f16 (VOP1 93): −1.5 → −1; 0.5 → +0; −0.5 → −0.
    assert_eq!(
        lanes(&[vop1(93, 0, v(1))], &[0xbe00, 0x3800, 0xb800], &[], &[]),
        [0xbc00, 0, 0x8000]
    );
    // v_rcp_f16 (VOP1 84): 1/2 = 0.5; 1/+0 = +inf; 1/−0 = −inf; 1/3 = 1.0101010101|01…b × 2^-2 → mantissa
    // 0x155 rounded down, exponent field 13: 0x3555.
    assert_eq!(
        lanes(&[vop1(84, 0, v(1))], &[0x4000, 0, 0x8000, 0x4200], &[], &[]),
        [0x3800, 0x7c00, 0xfc00, 0x3555]
    );
    // v_exp_f16 (VOP1 88): 2^1 = 2; 2^−inf = +0; 2^−24 (−24 = 0xce00) = the smallest denormal; 2^16 = +inf.
    assert_eq!(
        lanes(
            &[vop1(88, 0, v(1))],
            &[0x3c00, 0xfc00, 0xce00, 0x4c00],
            &[],
            &[]
        ),
        [0x4000, 0, 0x0001, 0x7c00]
    );
}

#[test]
fn sixteen_bit_compares_read_the_low_halves() {
    // v_cmp_lt_f16_e32 vcc, v1, v2 (VOPC 1): 1 < 2 (upper halves ignored); NaN < 1 is false; −0 < +0 is
    // false; −inf < −1 is true.
    let mut w = wave();
    let (a, b) = (
        [0xffff_3c00, 0x7e00, 0x8000, 0xfc00],
        [0x1234_4000, 0x3c00, 0x0000, 0xbc00],
    );
    for l in 0..4 {
        (w.v[1][l], w.v[2][l]) = (a[l], b[l]);
    }
    w.s[EXEC as usize] = 0b1111;
    run(&mut w, &[vopc(1, v(1), 2)]);
    assert_eq!(w.s[VCC as usize], 0b1001);
    // v_cmp_lt_i16 (VOPC 49) vs v_cmp_lt_u16 (VOPC 57) on 0xffff vs 1: −1 < 1 signed, 65535 > 1 unsigned.
    let mut w = wave();
    w.s[EXEC as usize] = 1;
    (w.v[1][0], w.v[2][0]) = (0x0000_ffff, 0xffff_0001);
    run(&mut w, &[vopc(49, v(1), 2)]);
    assert_eq!(w.s[VCC as usize], 1);
    run(&mut w, &[vopc(57, v(1), 2)]);
    assert_eq!(w.s[VCC as usize], 0);
}

#[test]
fn f16_class_test_reads_the_mask_bits() {
    // v_cmp_class_f16_e32 vcc, v1, v2 (VOPC 125): mask bits 0 sNaN, 1 qNaN, 2 −inf, 5 −0, 7 +denormal,
    // 9 +inf. Values: +inf, −inf, qNaN, sNaN (0x7d00: quiet bit 9 clear), +denormal, −0.
    let vals = [0x7c00, 0xfc00, 0x7e00, 0x7d00, 0x0001, 0x8000];
    let mask_of = |m: u32| {
        let mut w = wave();
        w.s[EXEC as usize] = 0b11_1111;
        for (l, &x) in vals.iter().enumerate() {
            (w.v[1][l], w.v[2][l]) = (x, m);
        }
        run(&mut w, &[vopc(125, v(1), 2)]);
        w.s[VCC as usize]
    };
    assert_eq!(mask_of(1 << 9 | 1 << 2), 0b00_0011);
    assert_eq!(mask_of(0b11), 0b00_1100);
    assert_eq!(mask_of(1 << 7 | 1 << 5), 0b11_0000);
}

#[test]
fn perm_selects_bytes_sign_fills_and_constants() {
    // v_perm_b32 v0, v1, v2, v3 (VOP3 580): bytes of {S0, S1} are S1's 0–3 then S0's 4–7.
    let perm = vop3(580, 0, [v(1), v(2), v(3)], 0, 0, false);
    // S0 = 0x11223344, S1 = 0x55667788; selector 0x05040100 picks bytes 0, 1 (0x88, 0x77) then 4, 5
    // (0x44, 0x33): the two low halves packed, 0x33447788.
    assert_eq!(
        lanes(&perm, &[0x1122_3344], &[0x5566_7788], &[0x0504_0100]),
        [0x3344_7788]
    );
    // Selectors 8–11 replicate the sign bit of byte 1, 3, 5, 7: S1 = 0x00008000 (byte 1 negative),
    // S0 = 0x80000000 (byte 7 negative) → 0xff, 0x00, 0x00, 0xff. 12 → 0x00, 13 → 0xff.
    assert_eq!(
        lanes(
            &perm,
            &[0x8000_0000, 0x8000_0000],
            &[0x0000_8000, 0x0000_8000],
            &[0x0b0a_0908, 0x0d0c_0d0c]
        ),
        [0xff00_00ff, 0xff00_ff00]
    );
}

#[test]
fn pack_and_packed_integer_ops_handle_both_halves() {
    // v_pack_b32_f16 v0, v1, v2 (VOP3 785): D = {S1.f16, S0.f16}.
    let pack = vop3(785, 0, [v(1), v(2), 0], 0, 0, false);
    assert_eq!(
        lanes(&pack, &[0xaaaa_3c00], &[0xbbbb_4000], &[]),
        [0x4000_3c00]
    );
    // VOP3P with op_sel_hi = [1,1,1] (LLVM's default): the low halves give the low result.
    // v_pk_add_u16 (10): 0xffff + 1 wraps to 0 in both halves.
    let add = vop3p(10, 0, [v(1), v(2), 0], 0b111);
    assert_eq!(lanes(&add, &[0xffff_0001], &[0x0001_ffff], &[]), [0]);
    // v_pk_mul_lo_u16 (1): low 0x100 · 0x100 = 0x10000 → 0; high 3 · 5 = 15.
    let mul = vop3p(1, 0, [v(1), v(2), 0], 0b111);
    assert_eq!(
        lanes(&mul, &[0x0003_0100], &[0x0005_0100], &[]),
        [0x000f_0000]
    );
    // v_pk_sub_i16 (3): low 5 − 7 = −2 (0xfffe); high 0 − 1 = −1.
    let sub = vop3p(3, 0, [v(1), v(2), 0], 0b111);
    assert_eq!(
        lanes(&sub, &[0x0000_0005], &[0x0001_0007], &[]),
        [0xffff_fffe]
    );
    // Any other op_sel_hi is refused, not guessed.
    assert!(decode(&vop3p(10, 0, [v(1), v(2), 0], 0)).is_err());
}

#[test]
fn sixteen_bit_integer_vop3_ops_wrap_and_compare_by_signedness() {
    let op2 = |op: u32, a: u32, b: u32| {
        lanes(&vop3(op, 0, [v(1), v(2), 0], 0, 0, false), &[a], &[b], &[])[0]
    };
    // v_sub_nc_u16 (772): 1 − 2 wraps to 0xffff. v_mul_lo_u16 (773): 0x100 · 0x101 = 0x10100 → 0x0100.
    assert_eq!(op2(772, 1, 2), 0xffff);
    assert_eq!(op2(773, 0x100, 0x101), 0x0100);
    // v_max_i16 (778) / v_min_i16 (780): −1 (0xffff) vs 1; v_max_u16 (777) / v_min_u16 (779): 65535 vs 1.
    assert_eq!(op2(778, 0xffff, 1), 1);
    assert_eq!(op2(780, 0xffff, 1), 0xffff);
    assert_eq!(op2(777, 0xffff, 1), 0xffff);
    assert_eq!(op2(779, 0xffff, 1), 1);
}

#[test]
fn scalar_sign_extension_of_a_byte_and_a_half() {
    // s_sext_i32_i8 s0, s1 (SOP1 14) / s_sext_i32_i16 (SOP1 15); SCC is left alone.
    let mut w = wave();
    w.scc = true;
    for (op, x, want) in [
        (14, 0x0000_0080, 0xffff_ff80),
        (14, 0x1234_567f, 0x0000_007f),
        (15, 0x0000_8000, 0xffff_8000),
        (15, 0xffff_7fff, 0x0000_7fff),
    ] {
        w.s[1] = x;
        run(&mut w, &[sop1(op, s(0), s(1))]);
        assert_eq!(w.s[0], want, "op {op} on {x:#x}");
        assert!(w.scc);
    }
}

#[test]
fn packed_f16_lanes_pick_halves_with_op_sel_and_negate_per_lane() {
    // v_pk_mul_f16 (VOP3P 16), default op_sel = [0,0], op_sel_hi = [1,1]: v1 = {2.0, 1.5}, v2 = {3.0, 2.0}
    // (high, low) → {6.0, 3.0} = 0x4600_4200.
    let (a, b) = (0x4000_3e00, 0x4200_4000);
    let mul = vop3p_mods(16, 0, [v(1), v(2), 0], [0, 0b111, 0, 0]);
    assert_eq!(lanes(&mul, &[a], &[b], &[]), [0x4600_4200]);
    // op_sel:[1,0] op_sel_hi:[0,1]: low lane = a.hi · b.lo = 2 · 2 = 4 (0x4400); high lane = a.lo · b.hi
    // = 1.5 · 3 = 4.5 (0x4480).
    let swap = vop3p_mods(16, 0, [v(1), v(2), 0], [0b01, 0b110, 0, 0]);
    assert_eq!(lanes(&swap, &[a], &[b], &[]), [0x4480_4400]);
    // v_pk_fma_f16 (14) neg_lo:[1,0,0] neg_hi:[0,1,0]: v1 = {1.0, 2.0}, v2 = {3.0, 3.0}, v3 = {0.5, 0.5}:
    // low = −2 · 3 + 0.5 = −5.5 (−1.375 · 2^2: 0xc580); high = 1 · −3 + 0.5 = −2.5 (0xc100).
    let fma = vop3p_mods(14, 0, [v(1), v(2), v(3)], [0, 0b111, 0b001, 0b010]);
    assert_eq!(
        lanes(&fma, &[0x3c00_4000], &[0x4200_4200], &[0x3800_3800]),
        [0xc100_c580]
    );
    // v_pk_add_f16 (15) v0, v1, -1.0 op_sel_hi:[1,0]: both lanes read the constant's f16 value (the low
    // half): {3.0, 1.0} + −1 = {2.0, +0}.
    let add = vop3p_mods(15, 0, [v(1), 243, 0], [0, 0b101, 0, 0]);
    assert_eq!(lanes(&add, &[0x4200_3c00], &[], &[]), [0x4000_0000]);
    // The high half of a constant is not guessed.
    assert!(decode(&vop3p_mods(15, 0, [v(1), 243, 0], [0, 0b111, 0, 0])).is_err());
}
