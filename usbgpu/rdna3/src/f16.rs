//! binary16 arithmetic of the 16-bit VALU operations (docs/hw/rdna3-isa.md §7): every f16 result is the
//! exact result rounded once to f16 — round to nearest even, denormals kept, overflow to ±inf.
//!
//! - add/sub/mul of two f16 values are exact in f64 (11-bit significands; the exponents stay far inside
//!   f64's range), so rounding the f64 result once ([`round`]) is the correctly rounded f16.
//! - The fused multiply-add's product is exact in f64 too; the sum is rounded to f64 with its rounding
//!   error recovered exactly (Knuth's TwoSum), and [`round`] uses the error's sign where the f64 sum sits
//!   exactly on an f16 midpoint.
//! - Division and square root via f64 are correctly rounded after the second rounding (53 ≥ 2·11 + 2
//!   bits, the double-rounding bound for these operations); the other transcendentals follow §8's choice.
//! - NaN and infinity operands go through the host's binary32 arithmetic on the exactly widened values,
//!   so NaN propagation and inf − inf = NaN follow the f32 rules; narrowing keeps NaNs quiet.
//!
//! Operands and results are f16 bit patterns in the low 16 bits of a `u32`.
use core::cmp::Ordering;

use modelrt_core::half::{f16_bits_to_f32_bits, f32_bits_to_f16_bits};

use super::float as fp;

/// The low 16 bits of `x` as an f32 (exact).
pub fn widen32(x: u32) -> f32 {
    f32::from_bits(f16_bits_to_f32_bits(x as u16))
}

/// The low 16 bits of `x` as an f64 (exact).
pub fn wide(x: u32) -> f64 {
    f64::from(widen32(x))
}

fn narrow32(x: f32) -> u32 {
    u32::from(f32_bits_to_f16_bits(x.to_bits()))
}

/// Infinity or NaN.
fn special(x: u32) -> bool {
    x & 0x7c00 == 0x7c00
}

/// `x + r` rounded to f16 (nearest even), where `r` is an exact residual too small to matter except
/// on a tie; `tail` is its sign (`Equal`: `x` is exact).
pub fn round(x: f64, tail: Ordering) -> u32 {
    if x.is_nan() {
        return narrow32(x as f32);
    }
    let sign = if x.is_sign_negative() { 0x8000 } else { 0 };
    if x.is_infinite() {
        return sign | 0x7c00;
    }
    if x == 0.0 {
        return sign;
    }
    // |x| = m · 2^e with m an integer below 2^53.
    let b = x.abs().to_bits();
    let (m, e) = if b >> 52 == 0 {
        (b, -1074)
    } else {
        (b & ((1 << 52) - 1) | 1 << 52, (b >> 52) as i32 - 1075)
    };
    // The residual's sign in terms of the magnitude.
    let tail = if sign != 0 { tail.reverse() } else { tail };
    // |x| lies in [2^top, 2^(top+1)); f16's quantum there is 2^q (2^-24 in the denormal range).
    let top = 63 - m.leading_zeros() as i32 + e;
    let q = top.max(-14) - 10;
    // shift ≥ 42: m's lowest bit is always far below the quantum.
    let shift = (q - e) as u32;
    let (n, cmp) = if shift >= 64 {
        (0, Ordering::Less)
    } else {
        let rem = m & ((1u64 << shift) - 1);
        let half = 1u64 << (shift - 1);
        let c = match rem.cmp(&half) {
            Ordering::Equal => tail,
            other => other,
        };
        (m >> shift, c)
    };
    let up = cmp == Ordering::Greater || (cmp == Ordering::Equal && n & 1 == 1);
    let n = n + u64::from(up);
    // n · 2^q encodes as ((q + 24) << 10) + n for n < 2^11: the denormal range (q = −24) is n itself,
    // and a carry to n = 2^11 lands on the next exponent's leading value.
    let bits = (((q + 24) as u64) << 10) + n;
    sign | bits.min(0x7c00) as u32
}

/// One binary f16 operation: specials through f32, finite operands exactly in f64.
fn binary(a: u32, b: u32, f32op: fn(f32, f32) -> f32, f64op: fn(f64, f64) -> f64) -> u32 {
    if special(a) || special(b) {
        return narrow32(f32op(widen32(a), widen32(b)));
    }
    round(f64op(wide(a), wide(b)), Ordering::Equal)
}

/// `v_add_f16`.
pub fn add(a: u32, b: u32) -> u32 {
    binary(a, b, |x, y| x + y, |x, y| x + y)
}

/// `v_sub_f16` (`a − b`).
pub fn sub(a: u32, b: u32) -> u32 {
    binary(a, b, |x, y| x - y, |x, y| x - y)
}

/// `v_mul_f16`.
pub fn mul(a: u32, b: u32) -> u32 {
    binary(a, b, |x, y| x * y, |x, y| x * y)
}

/// `v_fma_f16` / `v_fmac_f16`: `a · b + c` with one rounding.
pub fn fma(a: u32, b: u32, c: u32) -> u32 {
    if special(a) || special(b) || special(c) {
        return narrow32(widen32(a).mul_add(widen32(b), widen32(c)));
    }
    let (p, z) = (wide(a) * wide(b), wide(c));
    let s = p + z;
    // TwoSum: p + z = s + err exactly.
    let bv = s - p;
    let err = (p - (s - bv)) + (z - bv);
    round(s, err.partial_cmp(&0.0).unwrap_or(Ordering::Equal))
}

/// `v_max_f16` (IEEE mode, as [`fp::max`]; the result is one of the operands, so narrowing is exact).
pub fn max(a: u32, b: u32) -> u32 {
    narrow32(f32::from_bits(fp::max(
        widen32(a).to_bits(),
        widen32(b).to_bits(),
    )))
}

/// `v_min_f16` (IEEE mode, as [`fp::min`]).
pub fn min(a: u32, b: u32) -> u32 {
    narrow32(f32::from_bits(fp::min(
        widen32(a).to_bits(),
        widen32(b).to_bits(),
    )))
}

/// Apply a unary f64 function and round once.
pub fn unary(a: u32, f: fn(f64) -> f64) -> u32 {
    round(f(wide(a)), Ordering::Equal)
}

/// `v_trunc/floor/ceil/rndne_f16`: an exact rounding to an integer (NaN quieted).
pub fn round_with(a: u32, f: fn(f32) -> f32) -> u32 {
    narrow32(f32::from_bits(fp::round_with(widen32(a).to_bits(), f)))
}

/// `v_cvt_i16_f16`: truncate toward zero, saturate, NaN → 0 (16-bit result).
pub fn to_i16(a: u32) -> u32 {
    u32::from(widen32(a) as i16 as u16)
}

/// `v_cvt_u16_f16`: truncate toward zero, saturate (negatives → 0), NaN → 0.
pub fn to_u16(a: u32) -> u32 {
    u32::from(widen32(a) as u16)
}

/// Clamp an f16 result to [0, 1], NaN → 0 (the VOP3 `clamp` bit under DX10_CLAMP).
pub fn clamp01(r: u32) -> u32 {
    let x = widen32(r);
    if x.is_nan() || x <= 0.0 {
        0
    } else if x >= 1.0 {
        0x3c00
    } else {
        r
    }
}

/// `v_cmp_class_f16`: whether `a`'s class is in `mask` (bit 0 signalling NaN, 1 quiet NaN, 2 −inf,
/// 3 −normal, 4 −denormal, 5 −0, 6 +0, 7 +denormal, 8 +normal, 9 +inf).
pub fn class(a: u32, mask: u32) -> bool {
    let (neg, exp, man) = (a & 0x8000 != 0, a >> 10 & 0x1f, a & 0x3ff);
    let bit = match (exp, man) {
        (0x1f, 0) => {
            if neg {
                2
            } else {
                9
            }
        }
        (0x1f, m) => {
            if m & 0x200 != 0 {
                1
            } else {
                0
            }
        }
        (0, 0) => {
            if neg {
                5
            } else {
                6
            }
        }
        (0, _) => {
            if neg {
                4
            } else {
                7
            }
        }
        _ => {
            if neg {
                3
            } else {
                8
            }
        }
    };
    mask >> bit & 1 == 1
}
