//! Output verification: numpy-`allclose`-style comparison of raw little-endian tensors, as used by
//! `modelrt verify` and the embedded self-check (`|got - want| <= atol + rtol * |want|`, NaN equal
//! to NaN).
//!
//! A bundle records one `atol`/`rtol` for all its outputs, chosen for float32 arithmetic. An output
//! whose own type is narrower cannot be checked tighter than that type resolves: the reference
//! (onnxruntime, or tinygrad on the host) and the device round differently at every step, so they
//! differ by units in the last place however right the program is. [`compare_reference`] therefore
//! never compares a floating output tighter than [`dtype_floor`]: 20 units in the last place at 1.0
//! of the output's own type (20 × its machine epsilon), for `atol` and `rtol` alike — float16
//! 20 × 2⁻¹⁰ ≈ 1.95e-2 (the exporter's own float16 cross-check with onnxruntime uses 2e-2),
//! bfloat16 20 × 2⁻⁷ ≈ 0.156; float32 (2.4e-6) and float64 floors lie below any tolerance a bundle
//! records, and integer and bool outputs keep the recorded tolerance.
use modelrt_hal::target::DType;

/// Result of comparing one tensor.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Comparison {
    /// Largest absolute difference.
    pub max_abs: f64,
    /// Largest relative difference (`|got - want| / |want|`, over elements with `want != 0`).
    pub max_rel: f64,
    /// Number of elements outside tolerance.
    pub mismatches: u64,
    /// Index of the worst element (largest excess over its tolerance).
    pub worst_index: u64,
    /// Number of elements compared.
    pub count: u64,
}

impl Comparison {
    /// True if every element is within tolerance.
    pub fn ok(&self) -> bool {
        self.mismatches == 0
    }
}

/// Convert an IEEE 754 binary16 value to f32 ([`crate::half`]).
pub use crate::half::f16_to_f32;

/// Element `i` of a raw tensor as f64, or `None` past the end.
pub fn element(dtype: DType, bytes: &[u8], i: usize) -> Option<f64> {
    let n = dtype.size();
    let at = i.checked_mul(n)?;
    let b = bytes.get(at..at.checked_add(n)?)?;
    Some(match dtype {
        DType::F32 => f32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64,
        DType::F16 => f16_to_f32(u16::from_le_bytes([b[0], b[1]])) as f64,
        DType::BF16 => f32::from_bits((u16::from_le_bytes([b[0], b[1]]) as u32) << 16) as f64,
        DType::F64 => f64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
        DType::I8 => b[0] as i8 as f64,
        DType::U8 | DType::Bool => b[0] as f64,
        DType::I16 => i16::from_le_bytes([b[0], b[1]]) as f64,
        DType::U16 => u16::from_le_bytes([b[0], b[1]]) as f64,
        DType::I32 => i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64,
        DType::U32 => u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64,
        DType::I64 => i64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]) as f64,
        DType::U64 => u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]) as f64,
    })
}

/// The floor of a reference comparison for an output of `dtype` (module doc): 20 × the type's machine
/// epsilon (the gap between 1.0 and the next representable value) for floating types, 0 otherwise.
pub fn dtype_floor(dtype: DType) -> f64 {
    const ULPS: f64 = 20.0;
    let fraction_bits: u64 = match dtype {
        DType::F16 => 10,
        DType::BF16 => 7,
        DType::F32 => 23,
        DType::F64 => 52,
        _ => return 0.0,
    };
    // 2^-fraction_bits, built from its exponent field (no_std has no `exp2`)
    ULPS * f64::from_bits((1023 - fraction_bits) << 52)
}

/// The `(atol, rtol)` a reference comparison of a `dtype` output uses: the recorded ones, each
/// raised to [`dtype_floor`].
pub fn reference_tolerance(dtype: DType, atol: f64, rtol: f64) -> (f64, f64) {
    let floor = dtype_floor(dtype);
    (atol.max(floor), rtol.max(floor))
}

/// [`compare`] of an output with its reference at [`reference_tolerance`]: what `modelrt verify`,
/// the embedded self-checks and the compile's pre-write check use.
pub fn compare_reference(
    dtype: DType,
    got: &[u8],
    want: &[u8],
    atol: f64,
    rtol: f64,
) -> Comparison {
    let (atol, rtol) = reference_tolerance(dtype, atol, rtol);
    compare(dtype, got, want, atol, rtol)
}

/// Compare `got` against `want` (same dtype and length; a length difference counts every missing
/// element as a mismatch).
pub fn compare(dtype: DType, got: &[u8], want: &[u8], atol: f64, rtol: f64) -> Comparison {
    let n = dtype.size();
    let count = (got.len().max(want.len()) / n) as u64;
    let mut c = Comparison {
        max_abs: 0.0,
        max_rel: 0.0,
        mismatches: 0,
        worst_index: 0,
        count,
    };
    let mut worst_excess = f64::NEG_INFINITY;
    for i in 0..count as usize {
        let (g, w) = match (element(dtype, got, i), element(dtype, want, i)) {
            (Some(g), Some(w)) => (g, w),
            _ => {
                c.mismatches += 1;
                continue;
            }
        };
        if g.is_nan() && w.is_nan() {
            continue;
        }
        let diff = if g == w { 0.0 } else { (g - w).abs() };
        let excess = if diff.is_nan() {
            f64::INFINITY
        } else {
            diff - (atol + rtol * w.abs())
        };
        if diff.is_nan() || diff > c.max_abs {
            c.max_abs = if diff.is_nan() { f64::INFINITY } else { diff };
        }
        if w != 0.0 && diff.is_finite() {
            let rel = diff / w.abs();
            if rel > c.max_rel {
                c.max_rel = rel;
            }
        }
        if excess > 0.0 {
            c.mismatches += 1;
        }
        if excess > worst_excess {
            worst_excess = excess;
            c.worst_index = i as u64;
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f16_conversion_matches_ieee_values() {
        assert_eq!(f16_to_f32(0x3c00), 1.0);
        assert_eq!(f16_to_f32(0xc000), -2.0);
        assert_eq!(f16_to_f32(0x7bff), 65504.0);
        assert_eq!(f16_to_f32(0x0001), 5.960_464_5e-8);
        assert_eq!(f16_to_f32(0x3555), 0.333_251_95);
        assert!(f16_to_f32(0x7c00).is_infinite());
        assert!(f16_to_f32(0x7e00).is_nan());
    }

    fn f32s(v: &[f32]) -> [u8; 12] {
        let mut out = [0u8; 12];
        for (i, x) in v.iter().enumerate() {
            out[4 * i..4 * i + 4].copy_from_slice(&x.to_le_bytes());
        }
        out
    }

    /// The floors against the IEEE 754 / bfloat16 field widths: the gap between 1.0 and the next
    /// value, read off the bit patterns (1.0 and 1.0 + 1 ulp) with the independent converters.
    #[test]
    fn floors_are_twenty_ulps_at_one_of_each_type() {
        let gap16 = f16_to_f32(0x3c01) as f64 - 1.0;
        assert_eq!(dtype_floor(DType::F16), 20.0 * gap16);
        assert!((dtype_floor(DType::F16) - 1.953_125e-2).abs() < 1e-12);
        let gap_bf16 = f32::from_bits(0x3f81 << 16) as f64 - 1.0;
        assert_eq!(dtype_floor(DType::BF16), 20.0 * gap_bf16);
        assert_eq!(dtype_floor(DType::F32), 20.0 * f32::EPSILON as f64);
        assert_eq!(dtype_floor(DType::F64), 20.0 * f64::EPSILON);
        for d in [DType::I8, DType::U8, DType::I32, DType::I64, DType::Bool] {
            assert_eq!(dtype_floor(d), 0.0, "{d:?}");
        }
        // float32's floor is below the recorded 1e-4: the recorded tolerance stands
        assert_eq!(reference_tolerance(DType::F32, 1e-4, 1e-4), (1e-4, 1e-4));
        // a recorded tolerance above the floor stands too (a --image bundle's 5e-2)
        assert_eq!(reference_tolerance(DType::F16, 5e-2, 5e-2), (5e-2, 5e-2));
    }

    fn f16s(v: [u16; 2]) -> [u8; 4] {
        let [a, b] = [v[0].to_le_bytes(), v[1].to_le_bytes()];
        [a[0], a[1], b[0], b[1]]
    }

    /// A float16 output one ulp off (at 0.5..1, 2⁻¹¹ = 4.883e-4) fails the
    /// recorded float32 tolerance but is within its own type's floor; 0.05 off still fails.
    #[test]
    fn float16_outputs_are_compared_at_their_own_resolution() {
        // 0.75 = 0x3a00; one ulp above = 0x3a01; 0.8 ≈ 0x3a66
        let want = f16s([0x3a00, 0x3c00]);
        let one_ulp = f16s([0x3a01, 0x3c00]);
        assert!(!compare(DType::F16, &one_ulp, &want, 1e-4, 1e-4).ok());
        let c = compare_reference(DType::F16, &one_ulp, &want, 1e-4, 1e-4);
        assert!(c.ok(), "{c:?}");
        assert_eq!(c.max_abs, 4.8828125e-4);
        let far = f16s([0x3a66, 0x3c00]);
        let c = compare_reference(DType::F16, &far, &want, 1e-4, 1e-4);
        assert_eq!((c.mismatches, c.worst_index), (1, 0), "{c:?}");
        // float32 outputs keep the recorded tolerance
        let (a, b) = (f32s(&[0.75, 1.0, 0.0]), f32s(&[0.7505, 1.0, 0.0]));
        assert!(!compare_reference(DType::F32, &b, &a, 1e-4, 1e-4).ok());
    }

    #[test]
    fn allclose_semantics() {
        let want = f32s(&[1.0, -2.0, 100.0]);
        let ok = compare(
            DType::F32,
            &f32s(&[1.00005, -2.0, 100.009]),
            &want,
            1e-4,
            1e-4,
        );
        assert!(ok.ok(), "{ok:?}");
        let bad = compare(DType::F32, &f32s(&[1.0, -2.1, 100.0]), &want, 1e-4, 1e-4);
        assert_eq!(bad.mismatches, 1);
        assert_eq!(bad.worst_index, 1);
        assert!((bad.max_abs - 0.1).abs() < 1e-6);
        let nan = compare(
            DType::F32,
            &f32s(&[f32::NAN, -2.0, 100.0]),
            &want,
            1e-4,
            1e-4,
        );
        assert_eq!(nan.mismatches, 1);
        let short = compare(DType::F32, &want[..8], &want, 0.0, 0.0);
        assert_eq!(short.mismatches, 1);
    }
}
