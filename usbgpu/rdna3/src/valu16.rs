//! 16-bit VALU operations (docs/hw/rdna3-isa.md §7): f16 arithmetic, conversions and roundings
//! (VOP1/VOP2/VOP3), 16-bit integer VOP3 operations and the packed 16-bit integer VOP3P operations.
//!
//! Each 16-bit source is the low half of its operand (op_sel = 0, the only form decoded). A 16-bit
//! result fills the low half of the destination VGPR and keeps the high half (RDNA3's 16-bit results
//! name one half of a VGPR); `v_pack_b32_f16` and the packed operations write whole dwords.
use super::decode::Inst;
use super::f16;
use super::operand::Src;
use super::ops::Op;
use super::wave::{Lanes, Wave};

/// Whether `op` is executed here.
pub fn handles(op: Op) -> bool {
    use Op::*;
    op.is_packed16()
        || op.is_packed_f16()
        || matches!(
            op,
            VCvtF16U16
                | VCvtF16I16
                | VCvtU16F16
                | VCvtI16F16
                | VRcpF16
                | VSqrtF16
                | VRsqF16
                | VLogF16
                | VExpF16
                | VFloorF16
                | VCeilF16
                | VTruncF16
                | VRndneF16
                | VSinF16
                | VCosF16
                | VAddF16
                | VSubF16
                | VSubrevF16
                | VMulF16
                | VFmacF16
                | VFmamkF16
                | VFmaakF16
                | VMaxF16
                | VMinF16
                | VFmaF16
                | VPackB32F16
                | VAddNcU16
                | VSubNcU16
                | VMulLoU16
                | VLshlrevB16
                | VLshrrevB16
                | VMaxU16
                | VMaxI16
                | VMinU16
                | VMinI16
        )
}

fn is_int16(op: Op) -> bool {
    use Op::*;
    matches!(
        op,
        VAddNcU16
            | VSubNcU16
            | VMulLoU16
            | VLshlrevB16
            | VLshrrevB16
            | VMaxU16
            | VMaxI16
            | VMinU16
            | VMinI16
    ) || op.is_packed16()
}

/// Execute one of the operations [`handles`] accepts; `Err` names what is not modelled.
pub fn exec(w: &mut Wave, i: &Inst) -> Result<(), &'static str> {
    use Op::*;
    let op = i.op;
    if is_int16(op) {
        if i.clamp {
            return Err("clamp on a 16-bit integer operation is not modelled");
        }
        if i.abs != 0 || i.neg != 0 {
            return Err("abs/neg on a 16-bit integer operation is not modelled");
        }
        if i.src[..2].iter().any(|s| {
            matches!(
                s,
                Src::Const {
                    code: 240..=248,
                    ..
                }
            )
        }) {
            return Err("a float inline constant on a 16-bit integer operand is not modelled");
        }
    }
    if op.is_packed_f16() {
        return packed_f16(w, i);
    }
    let a = w.fetch(i, 0);
    if op.is_packed16() {
        let b = w.fetch(i, 1);
        let r: Lanes = core::array::from_fn(|l| {
            let lo = packed(op, a[l] as u16, b[l] as u16);
            let hi = packed(op, (a[l] >> 16) as u16, (b[l] >> 16) as u16);
            u32::from(hi) << 16 | u32::from(lo)
        });
        w.write(i.dst, &r);
        return Ok(());
    }
    let half: Lanes = match op {
        VCvtF16U16 => map(&a, |x| {
            f16::round(f64::from(x as u16), core::cmp::Ordering::Equal)
        }),
        VCvtF16I16 => map(&a, |x| {
            f16::round(f64::from(x as u16 as i16), core::cmp::Ordering::Equal)
        }),
        VCvtU16F16 => map(&a, f16::to_u16),
        VCvtI16F16 => map(&a, f16::to_i16),
        VRcpF16 => map(&a, |x| f16::unary(x, |v| 1.0 / v)),
        VSqrtF16 => map(&a, |x| f16::unary(x, f64::sqrt)),
        VRsqF16 => map(&a, |x| f16::unary(x, |v| 1.0 / v.sqrt())),
        VLogF16 => map(&a, |x| f16::unary(x, f64::log2)),
        VExpF16 => map(&a, |x| f16::unary(x, f64::exp2)),
        VSinF16 => map(&a, |x| {
            f16::unary(x, |v| (v * core::f64::consts::TAU).sin())
        }),
        VCosF16 => map(&a, |x| {
            f16::unary(x, |v| (v * core::f64::consts::TAU).cos())
        }),
        VFloorF16 => map(&a, |x| f16::round_with(x, f32::floor)),
        VCeilF16 => map(&a, |x| f16::round_with(x, f32::ceil)),
        VTruncF16 => map(&a, |x| f16::round_with(x, f32::trunc)),
        VRndneF16 => map(&a, |x| f16::round_with(x, f32::round_ties_even)),
        _ => {
            let b = w.fetch(i, 1);
            match op {
                VAddF16 => map2(&a, &b, f16::add),
                VSubF16 => map2(&a, &b, f16::sub),
                VSubrevF16 => map2(&a, &b, |x, y| f16::sub(y, x)),
                VMulF16 => map2(&a, &b, f16::mul),
                VMaxF16 => map2(&a, &b, f16::max),
                VMinF16 => map2(&a, &b, f16::min),
                VFmacF16 => {
                    let c = w.v[usize::from(i.dst)];
                    core::array::from_fn(|l| f16::fma(a[l], b[l], c[l]))
                }
                VFmamkF16 => {
                    let k = w.scalar(i.src[2]);
                    core::array::from_fn(|l| f16::fma(a[l], k, b[l]))
                }
                VFmaakF16 => {
                    let k = w.scalar(i.src[2]);
                    core::array::from_fn(|l| f16::fma(a[l], b[l], k))
                }
                VFmaF16 => {
                    let c = w.fetch(i, 2);
                    core::array::from_fn(|l| f16::fma(a[l], b[l], c[l]))
                }
                VPackB32F16 => {
                    if i.clamp {
                        return Err("clamp on v_pack_b32_f16 is not modelled");
                    }
                    // D[31:16] = S1.f16, D[15:0] = S0.f16 (abs/neg already applied to each half).
                    let r = map2(&a, &b, |x, y| (y & 0xffff) << 16 | (x & 0xffff));
                    w.write(i.dst, &r);
                    return Ok(());
                }
                _ => map2(&a, &b, |x, y| u32::from(int16(op, x as u16, y as u16))),
            }
        }
    };
    let mut half = half;
    if i.clamp {
        match op {
            VCvtU16F16 | VCvtI16F16 => {
                return Err("clamp on an f16 → integer conversion is not modelled")
            }
            _ => half.iter_mut().for_each(|x| *x = f16::clamp01(*x)),
        }
    }
    let old = w.v[usize::from(i.dst)];
    let r: Lanes = core::array::from_fn(|l| old[l] & 0xffff_0000 | half[l] & 0xffff);
    w.write(i.dst, &r);
    Ok(())
}

/// A packed f16 operation: the low lane reads half `op_sel[k]` of source k and negates it when `neg_lo[k]`,
/// the high lane half `op_sel_hi[k]` and `neg_hi[k]`; each lane rounds once to f16 (clamp: to [0, 1]).
fn packed_f16(w: &mut Wave, i: &Inst) -> Result<(), &'static str> {
    use Op::*;
    let raw: [Lanes; 3] = core::array::from_fn(|k| match i.src[k] {
        Src::V(r) => w.v[usize::from(r)],
        other => [w.scalar(other); super::wave::LANES],
    });
    let lane = |l: usize, hi: bool| -> u32 {
        let (sel, neg) = if hi {
            (i.op_sel_hi, i.abs)
        } else {
            (i.op_sel, i.neg)
        };
        let x: [u32; 3] = core::array::from_fn(|k| {
            let half = if sel >> k & 1 == 1 {
                raw[k][l] >> 16
            } else {
                raw[k][l] & 0xffff
            };
            half ^ if neg >> k & 1 == 1 { 0x8000 } else { 0 }
        });
        let r = match i.op {
            VPkFmaF16 => f16::fma(x[0], x[1], x[2]),
            VPkAddF16 => f16::add(x[0], x[1]),
            VPkMulF16 => f16::mul(x[0], x[1]),
            VPkMinF16 => f16::min(x[0], x[1]),
            _ => f16::max(x[0], x[1]),
        };
        if i.clamp {
            f16::clamp01(r)
        } else {
            r
        }
    };
    let r: Lanes = core::array::from_fn(|l| lane(l, true) << 16 | lane(l, false));
    w.write(i.dst, &r);
    Ok(())
}

fn map(a: &Lanes, f: impl Fn(u32) -> u32) -> Lanes {
    core::array::from_fn(|l| f(a[l]))
}

fn map2(a: &Lanes, b: &Lanes, f: impl Fn(u32, u32) -> u32) -> Lanes {
    core::array::from_fn(|l| f(a[l], b[l]))
}

/// A 16-bit integer VOP3 operation on the low halves: add/sub/mul wrap mod 2^16; shifts use S0[3:0]
/// (`D = S1 << S0`, logical `>>`); min/max compare as signed or unsigned 16-bit values.
fn int16(op: Op, x: u16, y: u16) -> u16 {
    use Op::*;
    match op {
        VAddNcU16 => x.wrapping_add(y),
        VSubNcU16 => x.wrapping_sub(y),
        VMulLoU16 => x.wrapping_mul(y),
        VLshlrevB16 => y << (x & 15),
        VLshrrevB16 => y >> (x & 15),
        VMaxU16 => x.max(y),
        VMinU16 => x.min(y),
        VMaxI16 => (x as i16).max(y as i16) as u16,
        _ => (x as i16).min(y as i16) as u16,
    }
}

/// One 16-bit lane of a packed integer operation (wrapping; no clamp).
fn packed(op: Op, x: u16, y: u16) -> u16 {
    use Op::*;
    match op {
        VPkMulLoU16 => x.wrapping_mul(y),
        VPkAddI16 | VPkAddU16 => x.wrapping_add(y),
        _ => x.wrapping_sub(y),
    }
}
