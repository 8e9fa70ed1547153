//! The byte ranges of the buffers a caller hands to `mrt_model_run`, checked before any slice is
//! built over them: an output may share no byte with another output or with any input (Rust
//! slices must not alias a mutable one; an in-place call would be undefined behaviour), and no
//! range may wrap around the address space or exceed `isize::MAX` bytes. Inputs may share memory
//! with each other (they are only read). Safe code over addresses; nothing is dereferenced.
use crate::error::CError;
use crate::info::TensorInfo;

/// `[start, end)` of a buffer, as addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Range {
    pub start: usize,
    pub end: usize,
}

impl Range {
    /// The range of `len` bytes at address `start`, or `None` if it wraps or is too long for a
    /// slice.
    pub fn new(start: usize, len: usize) -> Option<Range> {
        if len > isize::MAX as usize {
            return None;
        }
        Some(Range {
            start,
            end: start.checked_add(len)?,
        })
    }

    /// Whether the two ranges share a byte (an empty range shares none).
    pub fn overlaps(self, other: Range) -> bool {
        self.start < other.end
            && other.start < self.end
            && self.start != self.end
            && other.start != other.end
    }
}

/// One buffer for the message: "output 1 (q)".
fn label(kind: &str, i: usize, t: &TensorInfo) -> String {
    format!("{kind} {i} ({})", t.name.to_string_lossy())
}

/// The range of buffer `i` of `kind` (`addr`, `size` bytes), refusing one that wraps or is too
/// long for a slice.
pub fn range(
    kind: &str,
    i: usize,
    t: &TensorInfo,
    addr: usize,
    size: usize,
) -> Result<Range, CError> {
    Range::new(addr, size).ok_or_else(|| {
        CError::invalid(format!(
            "{} at {addr:#x} with {size} bytes runs past the end of the address space",
            label(kind, i, t)
        ))
    })
}

/// Refuse an output that shares a byte with another output or with an input.
pub fn check_disjoint(
    inputs: &[TensorInfo],
    ins: &[Range],
    outputs: &[TensorInfo],
    outs: &[Range],
) -> Result<(), CError> {
    for (i, o) in outs.iter().enumerate() {
        if let Some(j) = outs[..i].iter().position(|q| q.overlaps(*o)) {
            return Err(CError::invalid(format!(
                "{} overlaps {}: outputs must not share memory with each other or with an input",
                label("output", i, &outputs[i]),
                label("output", j, &outputs[j])
            )));
        }
        if let Some(j) = ins.iter().position(|q| q.overlaps(*o)) {
            return Err(CError::invalid(format!(
                "{} overlaps {}: outputs must not share memory with each other or with an input \
                 (copy the input first for an in-place call)",
                label("output", i, &outputs[i]),
                label("input", j, &inputs[j])
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use modelrt_hal::target::DType;
    use std::ffi::CString;

    fn t(name: &str) -> TensorInfo {
        TensorInfo {
            name: CString::new(name).unwrap(),
            dtype: DType::F32.into(),
            dims: vec![4],
            nbytes: 16,
        }
    }

    fn r(start: usize, len: usize) -> Range {
        Range::new(start, len).unwrap()
    }

    #[test]
    fn overlap_is_a_shared_byte() {
        assert!(r(0, 16).overlaps(r(15, 16)));
        assert!(r(15, 16).overlaps(r(0, 16)));
        assert!(r(0, 16).overlaps(r(4, 4)), "contained");
        assert!(!r(0, 16).overlaps(r(16, 16)), "adjacent");
        assert!(!r(0, 16).overlaps(r(8, 0)), "empty");
        assert!(Range::new(usize::MAX - 3, 16).is_none(), "wraps");
        assert!(Range::new(0, isize::MAX as usize + 1).is_none(), "too long");
    }

    #[test]
    fn outputs_must_not_share_memory() {
        let (ti, to) = ([t("x")], [t("y"), t("q")]);
        assert!(check_disjoint(&ti, &[r(0, 16)], &to, &[r(16, 16), r(32, 16)]).is_ok());
        let e = check_disjoint(&ti, &[r(0, 16)], &to, &[r(16, 16), r(24, 16)]).unwrap_err();
        assert!(
            e.message.starts_with("output 1 (q) overlaps output 0 (y)"),
            "{}",
            e.message
        );
        let e = check_disjoint(&ti, &[r(0, 16)], &to, &[r(100, 16), r(8, 16)]).unwrap_err();
        assert!(
            e.message.starts_with("output 1 (q) overlaps input 0 (x)"),
            "{}",
            e.message
        );
        // Inputs may share memory with each other.
        let ti = [t("a"), t("b")];
        assert!(check_disjoint(&ti, &[r(0, 16), r(0, 16)], &to, &[r(16, 16), r(32, 16)]).is_ok());
    }
}
