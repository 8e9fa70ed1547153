//! IEEE 754 binary16 ("half") ↔ binary32 conversions — the one converter the workspace uses (bundle
//! verification, the IR3 and RDNA3 interpreters).
//!
//! Widening is exact: every binary16 value, denormals included, is an f32; a NaN keeps its sign and
//! payload (shifted into the top of the f32 mantissa) and stays signalling or quiet as it was — a
//! device that quiets NaNs on conversion does so on top of [`f16_bits_to_f32_bits`]. Narrowing rounds
//! to nearest, ties to even; results below the smallest normal become denormals or ±0, results at or
//! above 65520 become ±inf; a NaN becomes a quiet NaN with the top nine payload bits kept.

// Every converter is `#[inline]`: the interpreters call them once per value and are built with a higher
// dev-profile opt-level than this crate, so the code is generated (and optimised) in theirs.

/// binary16 bits → binary32 bits, exact (sign, denormals and NaN payloads kept).
#[inline]
pub const fn f16_bits_to_f32_bits(h: u16) -> u32 {
    let sign = ((h as u32) & 0x8000) << 16;
    let exp = ((h >> 10) & 0x1f) as u32;
    let man = (h & 0x3ff) as u32;
    match (exp, man) {
        (0, 0) => sign,
        (0, m) => {
            // Denormal: m · 2^-24. With p the index of m's top set bit, the value is 2^(p-24) · 1.f.
            let p = 31 - m.leading_zeros();
            sign | ((p + 127 - 24) << 23) | ((m << (23 - p)) & 0x7f_ffff)
        }
        (0x1f, m) => sign | 0x7f80_0000 | (m << 13),
        (e, m) => sign | ((e + 127 - 15) << 23) | (m << 13),
    }
}

/// binary16 bits → f32, exact.
#[inline]
pub fn f16_to_f32(h: u16) -> f32 {
    f32::from_bits(f16_bits_to_f32_bits(h))
}

/// binary32 bits → binary16 bits, round to nearest even (see the module doc for the edges).
#[inline]
pub const fn f32_bits_to_f16_bits(x: u32) -> u16 {
    let sign = ((x >> 16) & 0x8000) as u16;
    let exp = ((x >> 23) & 0xff) as i32;
    let man = x & 0x7f_ffff;
    if exp == 0xff {
        return if man == 0 {
            sign | 0x7c00
        } else {
            sign | 0x7e00 | ((man >> 13) & 0x1ff) as u16
        };
    }
    let e = exp - 127 + 15;
    if e >= 0x1f {
        return sign | 0x7c00;
    }
    if e <= 0 {
        // Denormal or zero result. Below half the smallest denormal (2^-25) everything rounds to ±0;
        // f32 denormal inputs (exp == 0) land here too.
        if e < -10 {
            return sign;
        }
        let m = man | 0x80_0000;
        let shift = (14 - e) as u32;
        let half = m >> shift;
        let rem = m & ((1 << shift) - 1);
        let mid = 1 << (shift - 1);
        let up = rem > mid || (rem == mid && half & 1 == 1);
        return sign | (half + up as u32) as u16;
    }
    let half = ((e as u32) << 10) | (man >> 13);
    let rem = man & 0x1fff;
    let up = rem > 0x1000 || (rem == 0x1000 && half & 1 == 1);
    // A carry out of the mantissa bumps the exponent, which is the right answer (up to ±inf).
    sign | (half + up as u32) as u16
}

/// f32 → binary16 bits, round to nearest even.
#[inline]
pub fn f32_to_f16(f: f32) -> u16 {
    f32_bits_to_f16_bits(f.to_bits())
}

/// Round an f32 to the nearest binary16 value and widen it again.
#[inline]
pub fn round_f16(f: f32) -> f32 {
    f16_to_f32(f32_to_f16(f))
}
