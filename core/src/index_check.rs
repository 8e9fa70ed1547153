//! Range checks on index inputs (format 2.3, [`IndexCheck`]): before the first kernel of a run, every
//! integer input the compile recorded as an index (Gather's indices, ScatterND's index tuples, …) is
//! scanned against ONNX's valid range for what it indexes. tinygrad's kernels mask an out-of-range
//! gather to zero, so without this a bundle would return a plausible wrong answer where onnxruntime
//! refuses; with it `run` refuses and says which input, which element and which range.
//!
//! A bundle without checks pays nothing (the table is empty); the scan reads each checked element once.
use core::fmt;

use modelrt_hal::target::DType;

use crate::bundle::{Bundle, IndexCheck};

/// The first out-of-range element a check found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IndexViolation {
    /// The check's position in [`Bundle::index_checks`].
    pub check: u32,
    /// The input it reads (an index into the bundle's inputs).
    pub input: u32,
    /// Flat (row-major) index of the offending element.
    pub element: u64,
    /// Its value: [`value`](Self::value) reads it (kept as bits and a sign flag so that no 128-bit
    /// formatting code is linked).
    pub bits: u64,
    /// True when the input's type is unsigned (`bits` is the value), else `bits` is an `i64`.
    pub unsigned: bool,
    /// The valid range, inclusive.
    pub min: i64,
    pub max: i64,
}

/// An element's value as its type reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Value {
    Signed(i64),
    Unsigned(u64),
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Signed(v) => write!(f, "{v}"),
            Value::Unsigned(v) => write!(f, "{v}"),
        }
    }
}

impl fmt::Display for IndexViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "input {} element {} is {}, outside the valid range {}..={}",
            self.input,
            self.element,
            self.value(),
            self.min,
            self.max
        )
    }
}

impl IndexViolation {
    /// The offending value.
    pub fn value(&self) -> Value {
        if self.unsigned {
            Value::Unsigned(self.bits)
        } else {
            Value::Signed(self.bits as i64)
        }
    }

    /// The refusal with the input's name and what it indexes, read from `bundle`.
    pub fn describe<'v, 'b>(&'v self, bundle: &'v Bundle<'b>) -> Described<'v, 'b> {
        Described { v: self, bundle }
    }
}

/// [`IndexViolation::describe`]'s one-line message.
pub struct Described<'v, 'b> {
    v: &'v IndexViolation,
    bundle: &'v Bundle<'b>,
}

impl fmt::Display for Described<'_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.v;
        let name = self.bundle.body().inputs.get(v.input as usize).ok();
        let what = self.bundle.index_checks().get(v.check as usize).ok();
        match (name, what) {
            (Some(t), Some(c)) => write!(
                f,
                "input '{}' element {} is {}, outside the valid range {}..={} ({}); nothing was run",
                t.name,
                v.element,
                v.value(),
                v.min,
                v.max,
                c.what
            ),
            _ => write!(f, "{v}; nothing was run"),
        }
    }
}

/// Element `i` of little-endian integer tensor bytes `data` of type `dtype`, `None` for a type that
/// is not an integer or an element past the end.
fn element(data: &[u8], dtype: DType, i: usize) -> Option<i128> {
    let n = dtype.size();
    let b = data.get(i.checked_mul(n)?..i.checked_mul(n)?.checked_add(n)?)?;
    let mut w = [0u8; 8];
    w[..n.min(8)].copy_from_slice(&b[..n.min(8)]);
    let u = u64::from_le_bytes(w);
    Some(match dtype {
        DType::I8 => (u as u8 as i8) as i128,
        DType::I16 => (u as u16 as i16) as i128,
        DType::I32 => (u as u32 as i32) as i128,
        DType::I64 => (u as i64) as i128,
        DType::U8 | DType::U16 | DType::U32 | DType::U64 => u as i128,
        _ => return None,
    })
}

/// The first element of `data` (input bytes of type `dtype`) that `check` selects and that lies outside
/// its range: `(flat element index, value)`.
pub fn first_violation(check: &IndexCheck<'_>, dtype: DType, data: &[u8]) -> Option<(u64, i128)> {
    let (lo, hi) = (check.min as i128, check.max as i128);
    let n = data.len() / dtype.size().max(1);
    let period = (check.period as usize).max(1);
    (check.phase as usize..n).step_by(period).find_map(|i| {
        let v = element(data, dtype, i)?;
        (v < lo || v > hi).then_some((i as u64, v))
    })
}

/// Run every check of `bundle` on `input(i)` (input `i`'s bytes, `None` if the caller bound it in a
/// way this cannot read); `Err(None)` names an unreadable checked input by its index.
pub fn check_inputs<'i>(
    bundle: &Bundle<'_>,
    input: impl Fn(usize) -> Option<&'i [u8]>,
) -> Result<(), CheckError> {
    let checks = bundle.index_checks();
    for k in 0..checks.len() {
        let c = checks.get(k).map_err(|_| CheckError::Unreadable(0))?;
        let dtype = bundle
            .body()
            .inputs
            .get(c.input as usize)
            .map_err(|_| CheckError::Unreadable(c.input))?
            .dtype;
        let data = input(c.input as usize).ok_or(CheckError::Unreadable(c.input))?;
        if let Some((element, value)) = first_violation(&c, dtype, data) {
            return Err(CheckError::Range(IndexViolation {
                check: k as u32,
                input: c.input,
                element,
                bits: value as u64,
                unsigned: matches!(dtype, DType::U8 | DType::U16 | DType::U32 | DType::U64),
                min: c.min,
                max: c.max,
            }));
        }
    }
    Ok(())
}

/// Why [`check_inputs`] refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckError {
    /// An element is out of range.
    Range(IndexViolation),
    /// A checked input was not given as bytes (bound in place): it cannot be checked.
    Unreadable(u32),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(period: u32, phase: u32, min: i64, max: i64) -> IndexCheck<'static> {
        IndexCheck {
            input: 0,
            period,
            phase,
            min,
            max,
            what: "t",
        }
    }

    fn i64s(v: &[i64]) -> alloc::vec::Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn finds_the_first_out_of_range_int64() {
        let c = check(1, 0, -50, 49);
        assert_eq!(first_violation(&c, DType::I64, &i64s(&[0, -50, 49])), None);
        assert_eq!(
            first_violation(&c, DType::I64, &i64s(&[0, 1_000_000, 50])),
            Some((1, 1_000_000))
        );
        assert_eq!(
            first_violation(&c, DType::I64, &i64s(&[-51])),
            Some((0, -51))
        );
        assert_eq!(
            first_violation(&c, DType::I64, &i64s(&[i64::MIN])),
            Some((0, i64::MIN as i128))
        );
    }

    #[test]
    fn period_and_phase_select_one_column() {
        // [[0, 9], [1, 2]] with the second column limited to 0..=3: element 1 (9) is out of range.
        let data = i64s(&[0, 9, 1, 2]);
        assert_eq!(
            first_violation(&check(2, 1, 0, 3), DType::I64, &data),
            Some((1, 9))
        );
        assert_eq!(first_violation(&check(2, 0, 0, 3), DType::I64, &data), None);
    }

    #[test]
    fn narrow_and_unsigned_types_sign_extend_as_their_type() {
        let c = check(1, 0, -2, 1);
        assert_eq!(
            first_violation(&c, DType::I32, &(-2i32).to_le_bytes()),
            None
        );
        assert_eq!(
            first_violation(&c, DType::I32, &(-3i32).to_le_bytes()),
            Some((0, -3))
        );
        assert_eq!(
            first_violation(&c, DType::U64, &u64::MAX.to_le_bytes()),
            Some((0, u64::MAX as i128))
        );
        assert_eq!(first_violation(&c, DType::I8, &[0xff]), None);
        assert_eq!(first_violation(&c, DType::U8, &[0xff]), Some((0, 255)));
    }
}
