//! cat3 integer operations as Qualcomm's own OpenCL compiler uses them (`sad.s16`/`sad.s32`, `madsh.u16`,
//! `sel.s16`/`sel.s32`). The tinygrad kernels Mesa compiles for our tests use none of them, and Mesa's ISA
//! description names them without saying what they compute, so the semantics here are this project's reading,
//! checked by running openpilot's Qualcomm-compiled kernels against their own OpenCL C source
//! (docs/hw/adreno-kgsl-pm4.md §16.11).
use crate::instr::{Instr, Op, Op2, Op3, Ty};

/// `sad.s32 d, a, b, c` = a + b + c (wrapping; a `(neg)` source is negated before the sum), `sad.s16` the
/// same on the (sign-extended) half-register values. Not "sum of absolute differences": Qualcomm's
/// compiler computes `3·x` as `sad.s32 d, x, x, x` and the high word of a 64-bit address as
/// `sad.s32 hi, base_hi, (neg)sign, carry` (§16.11).
///
/// `sel.s32 d, a, b, c` = b ≥ 0 ? a : c (signed; `sel.s16` on the sign-extended half value), not b ≠ 0 as
/// `sel.b32`: the source's `(i < 0) ? i + n : i` compiles to `add.s t, i, n; sel.s32 d, i, i, t`, and with a
/// zero test every i = 0 would read element n (§16.11).
///
/// `madsh.u16 d, a, b, c` = ((a & 0xffff) · (b >> 16)) << 16 + c, the same cross term as `madsh.m16`; the
/// kernels that use it only ever pass it b = 0 (§16.11), so this operand order is not confirmed by them.
#[inline(always)]
pub fn op3_i(op: Op3, a: u32, b: u32, c: u32) -> Result<u32, &'static str> {
    Ok(match op {
        Op3::SadS16 | Op3::SadS32 => a.wrapping_add(b).wrapping_add(c),
        Op3::MadshU16 => ((a & 0xFFFF).wrapping_mul(b >> 16) << 16).wrapping_add(c),
        Op3::SelS16 | Op3::SelS32 => {
            if b as i32 >= 0 {
                a
            } else {
                c
            }
        }
        _ => return Err("operation not executed by the interpreter"),
    })
}

/// Whether a cat1 instruction's explicit rounding mode is executed: `(even)` (round to nearest even) on an
/// integer → f32 conversion, which is how the interpreter converts integers to f32 anyway (§16.4). Qualcomm's
/// compiler writes it on every `cov.s32f32`; other explicit modes are refused.
pub fn round_executed(ins: &Instr) -> bool {
    const EVEN: u8 = 1;
    match ins.op {
        Op::Mov { src_ty, dst_ty, .. } => {
            ins.round == EVEN
                && matches!(
                    src_ty,
                    Ty::S32 | Ty::U32 | Ty::S16 | Ty::U16 | Ty::U8 | Ty::U8x32
                )
                && dst_ty == Ty::F32
        }
        _ => false,
    }
}

/// cat2 with `(ei)` (bit 47, which Mesa prints as `(ei)` and uses only on `bary.f`): on `add.u` Qualcomm's
/// compiler uses it as a halving add, (a + b) >> 1 computed in 33 bits, to keep the carry of a sum of partial
/// products (`add.u (ei)t, lo, mid` then `shr.b t, t, 15` = (lo + mid) >> 16 in its 32×32 → 64-bit multiply).
/// Any other operation with the bit set is refused.
pub fn op2_ei(op: Op2) -> Result<fn(u32, u32) -> u32, &'static str> {
    match op {
        Op2::AddU => Ok(|a, b| ((a as u64 + b as u64) >> 1) as u32),
        _ => Err("(ei) on this operation is not executed by the interpreter"),
    }
}

/// Whether a cat3 operation with a destination of precision `dst_half` reads its sources from full registers
/// although its opcode is a 16-bit one: `mad.u16` converting to a full destination (the DST_CONV bit). Mesa
/// prints its sources as half registers, but Qualcomm's compiler feeds it the low 16 bits of full registers
/// no instruction of the kernel writes as half ones (`mad.u16 r5.y, hc28.y, hr2.w, hr5.y` after
/// `shr.b r2.w, x, 16` and `shr.b r5.y, p, 16`), and the kernels then match their OpenCL C source (§16.11).
pub fn widening_mad(op: Op3, dst_half: bool) -> bool {
    op == Op3::MadU16 && !dst_half
}
