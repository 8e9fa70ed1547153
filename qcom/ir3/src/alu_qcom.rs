//! The cat3 integer operations that only Qualcomm's own OpenCL compiler emits (`sad.s16`, `sad.s32`,
//! `madsh.u16`): Mesa's compiler never generates them and Mesa's ISA description names them without saying
//! what they compute, so the semantics here are this project's reading, checked by running openpilot's
//! Qualcomm-compiled kernels against their own OpenCL C source (docs/hw/adreno-kgsl-pm4.md §16.10).
use super::instr::{Instr, Op, Op3, Ty};

/// `sad.s32 d, a, b, c` = a + b + c (wrapping; a `(neg)` source is negated before the sum), `sad.s16` the
/// same on the (sign-extended) half-register values. Not "sum of absolute differences": Qualcomm's
/// compiler computes `3·x` as `sad.s32 d, x, x, x` and the high word of a 64-bit address as
/// `sad.s32 hi, base_hi, (neg)sign, carry` (§16.10).
///
/// `madsh.u16 d, a, b, c` = ((a & 0xffff) · (b >> 16)) << 16 + c, the same cross term as `madsh.m16`; the
/// kernels that use it only ever pass it b = 0 (§16.10), so this operand order is not confirmed by them.
#[inline(always)]
pub fn op3_i(op: Op3, a: u32, b: u32, c: u32) -> Result<u32, &'static str> {
    Ok(match op {
        Op3::SadS16 | Op3::SadS32 => a.wrapping_add(b).wrapping_add(c),
        Op3::MadshU16 => ((a & 0xFFFF).wrapping_mul(b >> 16) << 16).wrapping_add(c),
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
