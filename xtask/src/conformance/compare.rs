//! Output comparison with the rules of ONNX's backend test runner (`onnx/backend/test/runner`,
//! `assert_similar_outputs`): the same number of outputs, then per output the same shape, the same
//! dtype, and `np.testing.assert_allclose(actual, expected, rtol, atol)`, i.e. for every element
//! `|actual - expected| <= atol + rtol * |expected|` computed in float64, NaN equal to NaN and an
//! infinity equal only to the same infinity. bfloat16 outputs get `rtol = max(rtol, 2^-6)` (two
//! bfloat16 ulps), as the runner does.
use modelrt_hal::target::DType;

/// One tensor: numpy dtype name (`float32`, `bfloat16`, …), shape and raw little-endian data.
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor {
    pub dtype: String,
    pub shape: Vec<u64>,
    pub data: Vec<u8>,
}

/// Outcome of comparing a run's outputs with the expected ones.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// Every output matches; the largest absolute error over all finite elements.
    Match { max_err: f64 },
    /// Something differs; one line saying what, and the error when values were compared.
    Mismatch {
        reason: String,
        max_err: Option<f64>,
    },
}

/// numpy dtype name → modelrt dtype (`None` for dtypes modelrt has no name for).
pub fn dtype_of(name: &str) -> Option<DType> {
    Some(match name {
        "float32" => DType::F32,
        "float16" => DType::F16,
        "bfloat16" => DType::BF16,
        "float64" => DType::F64,
        "int8" => DType::I8,
        "uint8" => DType::U8,
        "int16" => DType::I16,
        "uint16" => DType::U16,
        "int32" => DType::I32,
        "uint32" => DType::U32,
        "int64" => DType::I64,
        "uint64" => DType::U64,
        "bool" => DType::Bool,
        _ => return None,
    })
}

/// IEEE binary16 → f64.
fn f16_to_f64(h: u16) -> f64 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = i32::from((h >> 10) & 0x1f);
    let frac = f64::from(h & 0x3ff);
    match exp {
        0 => sign * frac * 2f64.powi(-24),
        31 if frac == 0.0 => sign * f64::INFINITY,
        31 => f64::NAN,
        _ => sign * (1.0 + frac / 1024.0) * 2f64.powi(exp - 15),
    }
}

/// Decode `data` as `dtype` into float64 values (numpy's promotion for `isclose`).
fn values(dtype: DType, data: &[u8]) -> Vec<f64> {
    let n = dtype.size();
    data.chunks_exact(n)
        .map(|c| match dtype {
            DType::F32 => f64::from(f32::from_le_bytes([c[0], c[1], c[2], c[3]])),
            DType::F16 => f16_to_f64(u16::from_le_bytes([c[0], c[1]])),
            DType::BF16 => f64::from(f32::from_bits(
                u32::from(u16::from_le_bytes([c[0], c[1]])) << 16,
            )),
            DType::F64 => f64::from_le_bytes(c.try_into().unwrap_or([0; 8])),
            DType::I8 => f64::from(c[0] as i8),
            DType::U8 => f64::from(c[0]),
            DType::Bool => f64::from(u8::from(c[0] != 0)),
            DType::I16 => f64::from(i16::from_le_bytes([c[0], c[1]])),
            DType::U16 => f64::from(u16::from_le_bytes([c[0], c[1]])),
            DType::I32 => f64::from(i32::from_le_bytes([c[0], c[1], c[2], c[3]])),
            DType::U32 => f64::from(u32::from_le_bytes([c[0], c[1], c[2], c[3]])),
            DType::I64 => i64::from_le_bytes(c.try_into().unwrap_or([0; 8])) as f64,
            DType::U64 => u64::from_le_bytes(c.try_into().unwrap_or([0; 8])) as f64,
        })
        .collect()
}

fn shape_str(s: &[u64]) -> String {
    let d: Vec<String> = s.iter().map(u64::to_string).collect();
    format!("[{}]", d.join(","))
}

/// `np.isclose(a, e, rtol, atol, equal_nan=True)` for one element.
fn close(a: f64, e: f64, rtol: f64, atol: f64) -> bool {
    if a.is_nan() || e.is_nan() {
        return a.is_nan() && e.is_nan();
    }
    if a.is_infinite() || e.is_infinite() {
        return a == e;
    }
    (a - e).abs() <= atol + rtol * e.abs()
}

/// Compare one output; `Ok(max_err)` or `Err((reason, max_err))`.
fn compare_one(
    i: usize,
    actual: &Tensor,
    expected: &Tensor,
    rtol: f64,
    atol: f64,
) -> Result<f64, (String, Option<f64>)> {
    if actual.shape != expected.shape {
        return Err((
            format!(
                "output {i} has shape {}, expected {}",
                shape_str(&actual.shape),
                shape_str(&expected.shape)
            ),
            None,
        ));
    }
    if actual.dtype != expected.dtype {
        return Err((
            format!(
                "output {i} has dtype {}, expected {}",
                actual.dtype, expected.dtype
            ),
            None,
        ));
    }
    let dt = dtype_of(&expected.dtype).ok_or_else(|| {
        (
            format!("output {i} has dtype {} (not comparable)", expected.dtype),
            None,
        )
    })?;
    let numel: u64 = expected.shape.iter().product();
    for (t, what) in [(actual, "output"), (expected, "expected output")] {
        if t.data.len() as u64 != numel * dt.size() as u64 {
            return Err((
                format!(
                    "{what} {i} has {} bytes, its shape needs {}",
                    t.data.len(),
                    numel * dt.size() as u64
                ),
                None,
            ));
        }
    }
    let rtol = if dt == DType::BF16 {
        rtol.max(2f64.powi(-6))
    } else {
        rtol
    };
    let (a, e) = (values(dt, &actual.data), values(dt, &expected.data));
    let mut max_err = 0f64;
    let mut bad = 0usize;
    for (&x, &y) in a.iter().zip(&e) {
        if x.is_finite() && y.is_finite() {
            max_err = max_err.max((x - y).abs());
        }
        if !close(x, y, rtol, atol) {
            bad += 1;
        }
    }
    if bad > 0 {
        return Err((
            format!(
                "output {i}: {bad} of {} values differ (max abs err {max_err:.3e}, rtol {rtol:e}, atol {atol:e})",
                a.len()
            ),
            Some(max_err),
        ));
    }
    Ok(max_err)
}

/// Compare all outputs of a run with the expected outputs, in graph-output order.
pub fn compare(actual: &[Tensor], expected: &[Tensor], rtol: f64, atol: f64) -> Verdict {
    if actual.len() != expected.len() {
        return Verdict::Mismatch {
            reason: format!("{} outputs, expected {}", actual.len(), expected.len()),
            max_err: None,
        };
    }
    let mut max_err = 0f64;
    for (i, (a, e)) in actual.iter().zip(expected).enumerate() {
        match compare_one(i, a, e, rtol, atol) {
            Ok(m) => max_err = max_err.max(m),
            Err((reason, max_err)) => return Verdict::Mismatch { reason, max_err },
        }
    }
    Verdict::Match { max_err }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32s(shape: &[u64], v: &[f32]) -> Tensor {
        Tensor {
            dtype: "float32".into(),
            shape: shape.to_vec(),
            data: v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        }
    }

    fn i64s(shape: &[u64], v: &[i64]) -> Tensor {
        Tensor {
            dtype: "int64".into(),
            shape: shape.to_vec(),
            data: v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        }
    }

    const RTOL: f64 = 1e-3;
    const ATOL: f64 = 1e-7;

    #[test]
    fn within_onnx_tolerance_matches_and_reports_the_max_error() {
        // |1.0005 - 1.0| = 5e-4 <= 1e-7 + 1e-3 * 1.0
        let v = compare(
            &[f32s(&[2], &[1.0005, -2.0])],
            &[f32s(&[2], &[1.0, -2.0])],
            RTOL,
            ATOL,
        );
        let Verdict::Match { max_err } = v else {
            panic!("{v:?}")
        };
        assert!((max_err - 5e-4).abs() < 1e-6, "{max_err}");
    }

    #[test]
    fn tolerance_is_relative_to_the_expected_value() {
        // |1.0 - 1.0015| = 1.5e-3 > 1e-7 + 1e-3 * 1.0015 (np.isclose is asymmetric: `expected` scales)
        let v = compare(&[f32s(&[1], &[1.0])], &[f32s(&[1], &[1.0015])], RTOL, ATOL);
        assert!(
            matches!(&v, Verdict::Mismatch { reason, max_err: Some(_) } if reason.contains("1 of 1 values differ")),
            "{v:?}"
        );
        // near zero only atol counts: 1e-6 off from 0.0 fails
        let v = compare(&[f32s(&[1], &[1e-6])], &[f32s(&[1], &[0.0])], RTOL, ATOL);
        assert!(matches!(v, Verdict::Mismatch { .. }), "{v:?}");
    }

    #[test]
    fn wrong_dtype_is_a_mismatch_even_with_equal_values() {
        let mut a = i64s(&[2], &[1, 2]);
        a.dtype = "int64".into();
        let e = Tensor {
            dtype: "int32".into(),
            shape: vec![2],
            data: [1i32, 2].iter().flat_map(|x| x.to_le_bytes()).collect(),
        };
        let v = compare(&[a], &[e], RTOL, ATOL);
        assert_eq!(
            v,
            Verdict::Mismatch {
                reason: "output 0 has dtype int64, expected int32".into(),
                max_err: None
            }
        );
    }

    #[test]
    fn wrong_shape_and_output_count_are_mismatches() {
        let v = compare(
            &[f32s(&[2, 3], &[0.0; 6])],
            &[f32s(&[3, 2], &[0.0; 6])],
            RTOL,
            ATOL,
        );
        assert!(
            matches!(&v, Verdict::Mismatch { reason, .. } if reason == "output 0 has shape [2,3], expected [3,2]"),
            "{v:?}"
        );
        let v = compare(&[], &[f32s(&[1], &[0.0])], RTOL, ATOL);
        assert!(
            matches!(&v, Verdict::Mismatch { reason, .. } if reason == "0 outputs, expected 1"),
            "{v:?}"
        );
    }

    #[test]
    fn nan_matches_nan_and_infinities_must_agree() {
        let ok = compare(
            &[f32s(&[2], &[f32::NAN, f32::INFINITY])],
            &[f32s(&[2], &[f32::NAN, f32::INFINITY])],
            RTOL,
            ATOL,
        );
        assert_eq!(ok, Verdict::Match { max_err: 0.0 });
        let bad = compare(
            &[f32s(&[1], &[f32::NEG_INFINITY])],
            &[f32s(&[1], &[f32::INFINITY])],
            RTOL,
            ATOL,
        );
        assert!(matches!(bad, Verdict::Mismatch { .. }));
        let bad = compare(
            &[f32s(&[1], &[0.0])],
            &[f32s(&[1], &[f32::NAN])],
            RTOL,
            ATOL,
        );
        assert!(matches!(bad, Verdict::Mismatch { .. }));
    }

    #[test]
    fn integers_use_the_same_formula_and_half_floats_decode() {
        // numpy promotes ints to float64 for isclose: 1000 vs 1001 is within rtol 1e-3 * 1001
        assert!(matches!(
            compare(&[i64s(&[1], &[1000])], &[i64s(&[1], &[1001])], RTOL, ATOL),
            Verdict::Match { .. }
        ));
        assert!(matches!(
            compare(&[i64s(&[1], &[1])], &[i64s(&[1], &[2])], RTOL, ATOL),
            Verdict::Mismatch { .. }
        ));
        // float16 0x3c00 = 1.0, 0xc000 = -2.0, 0x7c00 = inf; bfloat16 0x3f80 = 1.0
        assert_eq!(f16_to_f64(0x3c00), 1.0);
        assert_eq!(f16_to_f64(0xc000), -2.0);
        assert_eq!(f16_to_f64(0x7c00), f64::INFINITY);
        assert_eq!(f16_to_f64(0x0001), 2f64.powi(-24));
        assert_eq!(values(DType::BF16, &0x3f80u16.to_le_bytes()), vec![1.0]);
    }

    #[test]
    fn bfloat16_gets_two_ulps_of_relative_tolerance() {
        let bf = |w: u16| Tensor {
            dtype: "bfloat16".into(),
            shape: vec![1],
            data: w.to_le_bytes().to_vec(),
        };
        // 0x3f81 = 1.0078125 vs 1.0: off by 2^-7 <= 2^-6 * 1.0
        assert!(matches!(
            compare(&[bf(0x3f81)], &[bf(0x3f80)], RTOL, ATOL),
            Verdict::Match { .. }
        ));
        // 0x3f84 = 1.03125: off by 2^-5 > 2^-6
        assert!(matches!(
            compare(&[bf(0x3f84)], &[bf(0x3f80)], RTOL, ATOL),
            Verdict::Mismatch { .. }
        ));
    }
}
