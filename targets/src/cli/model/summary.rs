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
            let (arg, hi) = arg_max(&vals).unwrap_or((0, f64::NEG_INFINITY));
            let lo = vals.iter().copied().fold(f64::INFINITY, f64::min);
            let mean = vals.iter().sum::<f64>() / vals.len().max(1) as f64;
            format!(
                "min {lo:.5} max {hi:.5} (at {arg}) mean {mean:.5}  {}",
                head(&vals, |v| format!("{v:.5}"))
            )
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
