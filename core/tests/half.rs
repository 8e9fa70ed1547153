//! `modelrt_core::half` against an independent reference: binary16 values computed from the IEEE 754
//! field definition in f64 (sign · 2^(e-15) · 1.m, denormals 2^-14 · 0.m), and narrowing checked by a
//! brute-force nearest-value search with ties to the even encoding.
use modelrt_core::half::{f16_bits_to_f32_bits, f16_to_f32, f32_to_f16};
use proptest::prelude::*;

/// The value of binary16 `h` from its fields (not for NaN).
fn ieee_value(h: u16) -> f64 {
    let s = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let e = i32::from((h >> 10) & 0x1f);
    let m = f64::from(h & 0x3ff);
    match e {
        0 => s * m * 2f64.powi(-24),
        0x1f => s * f64::INFINITY,
        _ => s * (1.0 + m / 1024.0) * 2f64.powi(e - 15),
    }
}

/// All finite non-negative binary16 encodings, ascending by value.
fn finite_positive() -> impl Iterator<Item = u16> {
    0u16..0x7c00
}

/// Nearest binary16 to `x` by search; ties go to the even encoding; |x| ≥ 65520 → ±inf.
fn nearest(x: f64) -> u16 {
    let sign = if x.is_sign_negative() { 0x8000 } else { 0 };
    let a = x.abs();
    if a >= 65520.0 {
        return sign | 0x7c00;
    }
    let mut best = 0u16;
    for h in finite_positive() {
        let d = (ieee_value(h) - a).abs();
        let bd = (ieee_value(best) - a).abs();
        if d < bd || (d == bd && h & 1 == 0 && best & 1 == 1) {
            best = h;
        }
    }
    sign | best
}

#[test]
fn widening_is_exact_for_every_non_nan_encoding() {
    for h in 0..=u16::MAX {
        if (h >> 10) & 0x1f == 0x1f && h & 0x3ff != 0 {
            continue;
        }
        let v = f16_to_f32(h);
        assert_eq!(f64::from(v), ieee_value(h), "{h:#06x}");
        assert_eq!(v.is_sign_negative(), h & 0x8000 != 0, "{h:#06x} sign");
    }
}

#[test]
fn table_values_from_the_standard() {
    assert_eq!(f16_to_f32(0x3c00), 1.0);
    assert_eq!(f16_to_f32(0x7bff), 65504.0);
    assert_eq!(f16_to_f32(0x0001), 2f32.powi(-24));
    assert_eq!(f16_to_f32(0x0400), 2f32.powi(-14));
    assert_eq!(f16_to_f32(0xfc00), f32::NEG_INFINITY);
    assert_eq!(f32_to_f16(65504.0), 0x7bff);
    assert_eq!(f32_to_f16(65519.99), 0x7bff);
    assert_eq!(f32_to_f16(65520.0), 0x7c00);
    assert_eq!(f32_to_f16(-1e9), 0xfc00);
    assert_eq!(
        f32_to_f16(1.0 + 2f32.powi(-11)),
        0x3c00,
        "tie to even (down)"
    );
    assert_eq!(
        f32_to_f16(1.0 + 3.0 * 2f32.powi(-11)),
        0x3c02,
        "tie to even (up)"
    );
    assert_eq!(
        f32_to_f16(2f32.powi(-25)),
        0x0000,
        "half the smallest denormal ties to 0"
    );
    assert_eq!(f32_to_f16(1.5 * 2f32.powi(-25)), 0x0001);
    assert_eq!(f32_to_f16(-0.0), 0x8000);
}

#[test]
fn nan_payloads_and_quiet_bits() {
    // Widening keeps a signalling NaN signalling and its payload; narrowing quiets.
    assert_eq!(f16_bits_to_f32_bits(0x7c01), 0x7f80_2000);
    assert_eq!(f16_bits_to_f32_bits(0xfe00), 0xffc0_0000);
    assert_eq!(f32_to_f16(f32::from_bits(0x7f80_2000)), 0x7e01);
    assert_eq!(f32_to_f16(f32::NAN) & 0x7e00, 0x7e00);
}

#[test]
fn narrowing_round_trips_every_finite_encoding() {
    for h in 0..=u16::MAX {
        if (h >> 10) & 0x1f == 0x1f && h & 0x3ff != 0 {
            continue;
        }
        assert_eq!(f32_to_f16(f16_to_f32(h)), h, "{h:#06x}");
    }
}

#[test]
fn midpoints_between_neighbours_tie_to_even() {
    for h in finite_positive().take(0x7bff) {
        let mid = (ieee_value(h) + ieee_value(h + 1)) / 2.0;
        let even = if h & 1 == 0 { h } else { h + 1 };
        // The midpoint of two adjacent binary16 values is exact in f32.
        assert_eq!(f32_to_f16(mid as f32), even, "{h:#06x}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    #[test]
    fn narrowing_picks_the_nearest_value(bits in any::<u32>()) {
        let x = f32::from_bits(bits);
        prop_assume!(!x.is_nan());
        prop_assert_eq!(f32_to_f16(x), nearest(f64::from(x)), "{:e}", x);
    }

    #[test]
    fn narrowing_near_one_picks_the_nearest_value(x in -70000.0f32..70000.0) {
        prop_assert_eq!(f32_to_f16(x), nearest(f64::from(x)), "{:e}", x);
    }
}
