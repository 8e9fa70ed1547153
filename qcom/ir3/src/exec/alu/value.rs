//! Per-fiber value semantics of cat1 conversions and cat2/cat3/cat4 ALU operations (docs/hw/adreno-kgsl-pm4.md
//! §16.4): pure functions of already-read operands, so the vectors in the tests can check them directly.
use super::qcom;
use crate::float::f16_to_f32;
use crate::instr::{Cond, Op2, Op3, Op4, Ty};
use modelrt_core::half::{f32_to_f16, round_f16};

/// A computed value before it is written to a full, half or predicate destination.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum V {
    F(f32),
    I(u32),
}

/// How an operation reads its sources.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    Float,
    /// Integer; `signed` sign-extends half sources.
    Int {
        signed: bool,
    },
    Bits,
}

pub fn class2(op: Op2) -> Class {
    use Op2::*;
    match op {
        AddF | MinF | MaxF | MulF | SignF | CmpsF(_) | AbsnegF | CmpvF(_) | FloorF | CeilF
        | RndneF | RndazF | TruncF => Class::Float,
        AddS | SubS | CmpsS(_) | MinS | MaxS | AbsnegS | CmpvS(_) | MulS24 | ClzS => {
            Class::Int { signed: true }
        }
        AddU | SubU | CmpsU(_) | MinU | MaxU | CmpvU(_) | MulU24 | MullU => {
            Class::Int { signed: false }
        }
        AndB | OrB | NotB | XorB | BfrevB | ClzB | ShlB | ShrB | AshrB | MgenB | GetbitB
        | CbitsB => Class::Bits,
    }
}

pub fn class3(op: Op3) -> Class {
    use Op3::*;
    match op {
        MadF16 | MadF32 | SelF16 | SelF32 => Class::Float,
        MadS16 | MadS24 | SelS16 | SelS32 | SadS16 | SadS32 => Class::Int { signed: true },
        MadU16 | MadshU16 | MadshM16 | MadU24 => Class::Int { signed: false },
        SelB16 | SelB32 | Shrm | Shlm | Shrg | Shlg | Andg => Class::Bits,
    }
}

/// fp32 denormals are flushed to a signed zero on arithmetic inputs and results (§16.4).
#[inline]
pub fn ftz(x: f32) -> f32 {
    // A zero exponent field with a non-zero mantissa is a denormal; keeping only the sign bit gives ±0 (and
    // leaves ±0 itself unchanged). Written on the bits so the lane loops stay branch-free.
    let b = x.to_bits();
    f32::from_bits(if b & 0x7F80_0000 == 0 {
        b & 0x8000_0000
    } else {
        b
    })
}

/// Round a float result to the operation's precision (f16 for half ALU ops, FTZ f32 otherwise).
pub fn prec(x: f32, full: bool) -> f32 {
    if full {
        ftz(x)
    } else {
        round_f16(x)
    }
}

fn cmp<T: PartialOrd>(c: Cond, a: T, b: T) -> bool {
    match c {
        Cond::Lt => a < b,
        Cond::Le => a <= b,
        Cond::Gt => a > b,
        Cond::Ge => a >= b,
        Cond::Eq => a == b,
        Cond::Ne => a != b,
    }
}

/// IEEE minNum/maxNum: a NaN operand yields the other operand; -0 orders below +0.
fn fminmax(a: f32, b: f32, max: bool) -> f32 {
    if a.is_nan() {
        return b;
    }
    if b.is_nan() {
        return a;
    }
    let a_first = if a == b {
        a.is_sign_negative() != max
    } else {
        (a < b) != max
    };
    if a_first {
        a
    } else {
        b
    }
}

/// cat2 on float sources (already converted to f32, modifiers applied).
#[inline(always)]
pub fn op2_f(op: Op2, a: f32, b: f32, full: bool) -> Result<V, &'static str> {
    use Op2::*;
    Ok(match op {
        AddF => V::F(prec(ftz(a) + ftz(b), full)),
        MulF => V::F(prec(ftz(a) * ftz(b), full)),
        MinF => V::F(fminmax(a, b, false)),
        MaxF => V::F(fminmax(a, b, true)),
        SignF => V::F(if a.is_nan() {
            a
        } else if a > 0.0 {
            1.0
        } else if a < 0.0 {
            -1.0
        } else {
            a
        }),
        AbsnegF => V::F(a),
        CmpsF(c) => V::I(cmp(c, a, b) as u32),
        CmpvF(c) => V::I(if cmp(c, a, b) { !0 } else { 0 }),
        FloorF => V::F(a.floor()),
        CeilF => V::F(a.ceil()),
        RndneF => V::F(a.round_ties_even()),
        RndazF => V::F(a.round()),
        TruncF => V::F(a.trunc()),
        _ => return Err("not a float cat2 operation"),
    })
}

/// cat2 on integer/bit sources (32-bit; half sources already extended per [`class2`]).
#[inline(always)]
pub fn op2_i(op: Op2, a: u32, b: u32) -> Result<u32, &'static str> {
    use Op2::*;
    let (sa, sb) = (a as i32, b as i32);
    Ok(match op {
        AddU | AddS => a.wrapping_add(b),
        SubU | SubS => a.wrapping_sub(b),
        CmpsU(c) => cmp(c, a, b) as u32,
        CmpsS(c) => cmp(c, sa, sb) as u32,
        CmpvU(c) => (cmp(c, a, b) as u32).wrapping_neg(),
        CmpvS(c) => (cmp(c, sa, sb) as u32).wrapping_neg(),
        MinU => a.min(b),
        MaxU => a.max(b),
        MinS => sa.min(sb) as u32,
        MaxS => sa.max(sb) as u32,
        AbsnegS => a,
        AndB => a & b,
        OrB => a | b,
        XorB => a ^ b,
        NotB => !a,
        MulU24 => (a & 0xFF_FFFF).wrapping_mul(b & 0xFF_FFFF),
        MulS24 => (((a << 8) as i32 >> 8).wrapping_mul((b << 8) as i32 >> 8)) as u32,
        MullU => (a & 0xFFFF).wrapping_mul(b & 0xFFFF),
        BfrevB => a.reverse_bits(),
        ClzB => a.leading_zeros(),
        ClzS => {
            if sa < 0 {
                (!a).leading_zeros()
            } else {
                a.leading_zeros()
            }
        }
        ShlB => a.wrapping_shl(b & 31),
        ShrB => a.wrapping_shr(b & 31),
        AshrB => (sa.wrapping_shr(b & 31)) as u32,
        GetbitB => (a >> (b & 31)) & 1,
        CbitsB => a.count_ones(),
        _ => return Err("operation not executed by the interpreter"),
    })
}

/// cat3 on float sources.
#[inline(always)]
pub fn op3_f(op: Op3, a: f32, b: f32, c: f32, full: bool) -> Result<V, &'static str> {
    Ok(match op {
        // Unfused: the product is rounded before the add (§16.4).
        Op3::MadF32 | Op3::MadF16 => {
            let p = prec(ftz(a) * ftz(b), full);
            V::F(prec(p + ftz(c), full))
        }
        _ => return Err("operation not executed by the interpreter"),
    })
}

/// cat3 on integer/bit sources.
#[inline(always)]
pub fn op3_i(op: Op3, a: u32, b: u32, c: u32) -> Result<u32, &'static str> {
    use Op3::*;
    Ok(match op {
        MadU24 => (a & 0xFF_FFFF).wrapping_mul(b & 0xFF_FFFF).wrapping_add(c),
        MadS24 => {
            (((a << 8) as i32 >> 8).wrapping_mul((b << 8) as i32 >> 8) as u32).wrapping_add(c)
        }
        MadU16 => (a & 0xFFFF).wrapping_mul(b & 0xFFFF).wrapping_add(c),
        MadS16 => ((a as i16 as i32).wrapping_mul(b as i16 as i32) as u32).wrapping_add(c),
        // Low half of src1 times high half of src2 (docs/hw/adreno-kgsl-pm4.md §16.4): the order Mesa's
        // imadsh_mix16 simplifications rely on, not the order its opcode comment states.
        MadshM16 => ((a & 0xFFFF).wrapping_mul(b >> 16) << 16).wrapping_add(c),
        // Qualcomm's compiler emits these (`sel.s*` selects on the sign); their semantics are ours, checked
        // against the kernels' OpenCL C source (docs/hw/adreno-kgsl-pm4.md §16.11).
        MadshU16 | SadS16 | SadS32 | SelS16 | SelS32 => qcom::op3_i(op, a, b, c)?,
        SelB16 | SelB32 => {
            if b != 0 {
                a
            } else {
                c
            }
        }
        Shrm => (b.wrapping_shr(a & 31)) & c,
        Shlm => (b.wrapping_shl(a & 31)) & c,
        Shrg => (b.wrapping_shr(a & 31)) | c,
        Shlg => (b.wrapping_shl(a & 31)) | c,
        Andg => (b & a) | c,
        _ => return Err("operation not executed by the interpreter"),
    })
}

/// cat4 (SFU). Reference: the correctly rounded f32 operations of Rust's std/libm (§16.4); half variants round
/// the f32 result to f16.
pub fn op4(op: Op4, a: f32, full: bool) -> f32 {
    let a = if full { ftz(a) } else { a };
    let r = match op {
        Op4::Rcp => 1.0 / a,
        Op4::Rsq | Op4::Hrsq => 1.0 / a.sqrt(),
        Op4::Log2 | Op4::Hlog2 => a.log2(),
        Op4::Exp2 | Op4::Hexp2 => a.exp2(),
        Op4::Sin => a.sin(),
        Op4::Cos => a.cos(),
        Op4::Sqrt => a.sqrt(),
    };
    let half = !full || matches!(op, Op4::Hrsq | Op4::Hlog2 | Op4::Hexp2);
    if half {
        round_f16(r)
    } else {
        ftz(r)
    }
}

/// Read a raw register/constant value as `ty` for a cat1 conversion.
#[inline(always)]
fn to_value(ty: Ty, raw: u32) -> V {
    match ty {
        Ty::F32 => V::F(f32::from_bits(raw)),
        Ty::F16 => V::F(f16_to_f32(raw as u16)),
        Ty::U32 => V::I(raw),
        Ty::S32 => V::I(raw),
        Ty::U16 => V::I(raw & 0xFFFF),
        Ty::S16 => V::I(raw as u16 as i16 as i32 as u32),
        Ty::U8 => V::I(raw & 0xFF),
        Ty::U8x32 => V::I(raw & 0xFF),
    }
}

fn signed(ty: Ty) -> bool {
    matches!(ty, Ty::S16 | Ty::S32)
}

/// Float → integer of `ty`: truncation toward zero, saturated to the type's range, NaN → 0.
#[inline(always)]
fn f2i(x: f32, ty: Ty) -> u32 {
    let (lo, hi) = match ty {
        Ty::S32 => (i32::MIN as f64, i32::MAX as f64),
        Ty::S16 => (i16::MIN as f64, i16::MAX as f64),
        Ty::U32 => (0.0, u32::MAX as f64),
        Ty::U16 => (0.0, u16::MAX as f64),
        _ => (0.0, u8::MAX as f64),
    };
    if x.is_nan() {
        return 0;
    }
    let t = (x.trunc() as f64).clamp(lo, hi);
    if signed(ty) {
        t as i64 as u32
    } else {
        t as u64 as u32
    }
}

/// cat1 `mov`/`cov`: the raw bits read as `src` converted to the raw bits of `dst` (16-bit results in the low
/// half). float→float rounds to nearest even; float→int truncates (saturating); int→float rounds to nearest.
#[inline(always)]
pub fn convert(src: Ty, dst: Ty, raw: u32) -> u32 {
    if src == dst {
        return match dst {
            Ty::F16 | Ty::U16 | Ty::S16 => raw & 0xFFFF,
            Ty::U8 => raw & 0xFF,
            _ => raw,
        };
    }
    let v = to_value(src, raw);
    match (v, dst) {
        (V::F(x), Ty::F32) => x.to_bits(),
        (V::F(x), Ty::F16) => f32_to_f16(x) as u32,
        (V::F(x), t) => {
            let r = f2i(x, t);
            if matches!(t, Ty::U16 | Ty::S16) {
                r & 0xFFFF
            } else {
                r
            }
        }
        (V::I(i), Ty::F32) => {
            if signed(src) {
                (i as i32 as f32).to_bits()
            } else {
                (i as f32).to_bits()
            }
        }
        (V::I(i), Ty::F16) => {
            let f = if signed(src) {
                i as i32 as f32
            } else {
                i as f32
            };
            f32_to_f16(f) as u32
        }
        (V::I(i), Ty::U16 | Ty::S16) => i & 0xFFFF,
        (V::I(i), Ty::U8) => i & 0xFF,
        (V::I(i), _) => i,
    }
}
