//! Output verification: numpy-`allclose`-style comparison of raw little-endian tensors, as used by
//! `modelrt verify` and the embedded self-check (`|got - want| <= atol + rtol * |want|`, NaN equal
//! to NaN).
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
