//! The one-line summary `run`, `verify` and `demo` print per output, in the terms of its dtype:
//! floats as min/max (and where)/mean and the first values; integers exactly (no fraction digits,
//! 64-bit values without rounding); bools as how many are true and the first values.
use modelrt_core::bundle::Bundle;
use modelrt_core::verify::element;
use modelrt_hal::target::DType;

use super::shape_str;

/// Values shown at the head of a summary.
const HEAD: usize = 6;

/// Element `i` of an integer or bool tensor, exactly.
fn integer(dtype: DType, bytes: &[u8], i: usize) -> Option<i128> {
    let n = dtype.size();
    let b = bytes.get(i * n..(i + 1) * n)?;
    let mut le = [0u8; 8];
    le[..n].copy_from_slice(b);
    let u = u64::from_le_bytes(le);
    Some(match dtype {
        DType::I8 => b[0] as i8 as i128,
        DType::I16 => i16::from_le_bytes([b[0], b[1]]) as i128,
        DType::I32 => i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as i128,
        DType::I64 => u as i64 as i128,
        _ => u as i128,
    })
}

/// `[a, b, c, …]` of the first [`HEAD`] values.
fn head<T>(vals: &[T], show: impl Fn(&T) -> String) -> String {
    let shown: Vec<String> = vals.iter().take(HEAD).map(show).collect();
    let more = if vals.len() > HEAD { ", …" } else { "" };
    format!("[{}{more}]", shown.join(", "))
}

/// Position and value of the largest element (the first, on ties).
fn arg_max<T: PartialOrd + Copy>(vals: &[T]) -> Option<(usize, T)> {
    let mut best: Option<(usize, T)> = None;
    for (i, v) in vals.iter().enumerate() {
        if best.is_none_or(|(_, b)| *v > b) {
            best = Some((i, *v));
        }
    }
    best
}

/// The summary of one output's values (after its name, shape and dtype).
pub(super) fn describe(dtype: DType, data: &[u8], n: usize) -> String {
    match dtype {
        DType::Bool => {
            let vals: Vec<bool> = (0..n)
                .filter_map(|i| integer(dtype, data, i))
                .map(|v| v != 0)
                .collect();
            let trues = vals.iter().filter(|v| **v).count();
            let first = vals
                .iter()
                .position(|v| *v)
                .map_or_else(String::new, |i| format!(" (first at {i})"));
            format!(
                "{trues} true of {}{first}  {}",
                vals.len(),
                head(&vals, bool::to_string)
            )
        }
        DType::F32 | DType::F16 | DType::BF16 | DType::F64 => {
            let vals: Vec<f64> = (0..n).filter_map(|i| element(dtype, data, i)).collect();
            float_summary(&vals)
        }
        _ => {
            let vals: Vec<i128> = (0..n).filter_map(|i| integer(dtype, data, i)).collect();
            let Some((arg, hi)) = arg_max(&vals) else {
                return "(empty)".into();
            };
            let lo = vals.iter().copied().min().unwrap_or(hi);
            let mean = vals.iter().map(|v| *v as f64).sum::<f64>() / vals.len() as f64;
            format!(
                "min {lo} max {hi} (at {arg}) mean {mean:.5}  {}",
                head(&vals, i128::to_string)
            )
        }
    }
}

/// The summary of float values: min, max (and where) and mean of the values that are not NaN, how
/// many are NaN or infinite, and the first values. An all-NaN output says so.
fn float_summary(vals: &[f64]) -> String {
    let shown = head(vals, |v| format!("{v:.5}"));
    if vals.is_empty() {
        return "(empty)".into();
    }
    let nans = vals.iter().filter(|v| v.is_nan()).count();
    let infs = vals.iter().filter(|v| v.is_infinite()).count();
    if nans == vals.len() {
        return format!("all NaN ({} of {})  {shown}", nans, vals.len());
    }
    let numbers: Vec<(usize, f64)> = vals
        .iter()
        .copied()
        .enumerate()
        .filter(|(_, v)| !v.is_nan())
        .collect();
    let (mut arg, mut hi) = numbers[0];
    for &(i, v) in &numbers {
        if v > hi {
            (arg, hi) = (i, v);
        }
    }
    let lo = numbers
        .iter()
        .map(|(_, v)| *v)
        .fold(f64::INFINITY, f64::min);
    let mean = numbers.iter().map(|(_, v)| v).sum::<f64>() / numbers.len() as f64;
    let mut special = Vec::new();
    if nans > 0 {
        special.push(format!("{nans} NaN"));
    }
    if infs > 0 {
        special.push(format!("{infs} inf"));
    }
    let special = if special.is_empty() {
        String::new()
    } else {
        format!(
            " ({} of {}; min/max/mean over the {} not NaN)",
            special.join(", "),
            vals.len(),
            numbers.len()
        )
    };
    format!("min {lo:.5} max {hi:.5} (at {arg}) mean {mean:.5}{special}  {shown}")
}

/// One line per output: `output NAME [shape] dtype: ` and its [`describe`] summary.
pub(super) fn print_output_summary(b: &Bundle<'_>, outputs: &[Vec<u8>]) -> anyhow::Result<()> {
    for (t, data) in b.body().outputs.iter().zip(outputs) {
        let t = t?;
        outln!(
            "output {} {} {}: {}",
            t.name,
            shape_str(&t.shape),
            t.dtype.name(),
            describe(t.dtype, data, t.numel() as usize)
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_are_summarised_exactly() {
        let v: Vec<u8> = [3i64, -7, i64::MAX, 0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        assert_eq!(
            describe(DType::I64, &v, 4),
            format!(
                "min -7 max {} (at 2) mean {:.5}  [3, -7, {}, 0]",
                i64::MAX,
                (3.0 - 7.0 + i64::MAX as f64) / 4.0,
                i64::MAX
            )
        );
        assert_eq!(
            describe(DType::U8, &[200, 1], 2),
            "min 1 max 200 (at 0) mean 100.50000  [200, 1]"
        );
    }

    #[test]
    fn bools_are_counted() {
        assert_eq!(
            describe(DType::Bool, &[0, 1, 0, 1, 1, 0, 0, 1], 8),
            "4 true of 8 (first at 1)  [false, true, false, true, true, false, …]"
        );
        assert_eq!(describe(DType::Bool, &[0], 1), "0 true of 1  [false]");
    }

    fn f32s(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    #[test]
    fn an_all_nan_output_says_all_nan() {
        let v = f32s(&[f32::NAN; 3]);
        assert_eq!(
            describe(DType::F32, &v, 3),
            "all NaN (3 of 3)  [NaN, NaN, NaN]"
        );
    }

    #[test]
    fn nans_and_infs_are_counted_and_left_out_of_min_max_mean() {
        let v = f32s(&[f32::NAN, 2.0, f32::NEG_INFINITY, 4.0]);
        assert_eq!(
            describe(DType::F32, &v, 4),
            "min -inf max 4.00000 (at 3) mean -inf (1 NaN, 1 inf of 4; min/max/mean over the 3 not NaN)  [NaN, 2.00000, -inf, 4.00000]"
        );
        let v = f32s(&[f32::NAN, 1.0, 3.0]);
        assert_eq!(
            describe(DType::F32, &v, 3),
            "min 1.00000 max 3.00000 (at 2) mean 2.00000 (1 NaN of 3; min/max/mean over the 2 not NaN)  [NaN, 1.00000, 3.00000]"
        );
    }

    #[test]
    fn floats_keep_the_float_summary() {
        let v: Vec<u8> = [1.5f32, -2.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        assert_eq!(
            describe(DType::F32, &v, 2),
            "min -2.00000 max 1.50000 (at 0) mean -0.25000  [1.50000, -2.00000]"
        );
    }
}
