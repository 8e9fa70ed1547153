//! IEEE binary16 ↔ binary32 conversions (round to nearest even, denormals kept, NaN stays NaN) used by half
//! registers, `cov`, fp16 images and fp16 ALU results.

/// binary16 bits → f32 (exact), through a table of all 65536 values built once by [`decode_f16`].
#[inline]
pub fn f16_to_f32(h: u16) -> f32 {
    static TABLE: std::sync::OnceLock<Box<[f32]>> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| (0..=u16::MAX).map(decode_f16).collect())[h as usize]
}

/// binary16 bits → f32 (exact), computed from the fields.
fn decode_f16(h: u16) -> f32 {
    let sign = (h as u32 & 0x8000) << 16;
    let exp = (h >> 10) & 0x1F;
    let man = h as u32 & 0x3FF;
    let bits = match (exp, man) {
        (0, 0) => sign,
        (0, m) => {
            // Denormal: value = m · 2^-24; normalise into an f32.
            let p = 31 - m.leading_zeros();
            sign | ((p + 127 - 24) << 23) | ((m << (23 - p)) & 0x7F_FFFF)
        }
        (0x1F, 0) => sign | 0x7F80_0000,
        (0x1F, m) => sign | 0x7FC0_0000 | (m << 13),
        (e, m) => sign | ((e as u32 + 127 - 15) << 23) | (m << 13),
    };
    f32::from_bits(bits)
}

/// f32 → binary16 bits, rounding to nearest even; overflow gives ±inf, underflow denormals/±0.
pub fn f32_to_f16(f: f32) -> u16 {
    let x = f.to_bits();
    let sign = ((x >> 16) & 0x8000) as u16;
    let exp = ((x >> 23) & 0xFF) as i32;
    let man = x & 0x7F_FFFF;
    if exp == 0xFF {
        return if man == 0 {
            sign | 0x7C00
        } else {
            sign | 0x7E00 | (man >> 13) as u16
        };
    }
    let e = exp - 127 + 15;
    if e >= 0x1F {
        return sign | 0x7C00;
    }
    if e <= 0 {
        if e < -10 {
            return sign;
        }
        // Denormal result: shift the full mantissa (with its implicit 1) right.
        let m = man | 0x80_0000;
        let shift = (14 - e) as u32;
        let half = m >> shift;
        let rem = m & ((1 << shift) - 1);
        let mid = 1 << (shift - 1);
        let round = rem > mid || (rem == mid && half & 1 == 1);
        return sign | (half + round as u32) as u16;
    }
    let half = ((e as u32) << 10) | (man >> 13);
    let rem = man & 0x1FFF;
    let round = rem > 0x1000 || (rem == 0x1000 && half & 1 == 1);
    // A carry out of the mantissa correctly bumps the exponent (and overflows to inf at the top).
    sign | (half + round as u32) as u16
}

/// Round an f32 to the nearest binary16 value and back (what an fp16 ALU result holds).
pub fn round_f16(f: f32) -> f32 {
    f16_to_f32(f32_to_f16(f))
}
