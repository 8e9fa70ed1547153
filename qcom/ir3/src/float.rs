//! The interpreter's binary16 → f32 widening: [`modelrt_core::half`] plus one rule of its own — a NaN comes out
//! quiet (docs/hw/adreno-kgsl-pm4.md §16.4) — served from a table of all 65536 values. Narrowing needs no rule of
//! its own (binary16 NaNs from [`modelrt_core::half::f32_to_f16`] are already quiet); callers use that directly.
use modelrt_core::half::f16_bits_to_f32_bits;

/// The f32 quiet bit (top mantissa bit).
const F32_QUIET: u32 = 0x0040_0000;

/// binary16 bits → f32 as a half register, `cov` or an fp16 image read gives it: exact, a NaN made quiet.
#[inline]
pub fn f16_to_f32(h: u16) -> f32 {
    static TABLE: std::sync::OnceLock<Box<[f32]>> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| (0..=u16::MAX).map(widen).collect())[h as usize]
}

/// One table entry.
fn widen(h: u16) -> f32 {
    let bits = f16_bits_to_f32_bits(h);
    let nan = bits & 0x7f80_0000 == 0x7f80_0000 && bits & 0x007f_ffff != 0;
    f32::from_bits(if nan { bits | F32_QUIET } else { bits })
}
