//! Keeping the arrays lent to one `Model.run` from being resized or freed until it returns. The
//! run holds a strong reference to every array, so none is freed; what could still move an
//! array's memory is `ndarray.resize(..., refcheck=False)` — from a callback, or from another
//! Python thread while the GIL is released — which reallocates the data the run reads or writes.
//! numpy refuses to resize an array that has a weak reference ("cannot resize an array that
//! references or is referenced by another object"), whatever `refcheck` says, and does *not*
//! refuse for an exported buffer (a `memoryview`, rust-numpy's borrows: numpy 2.4 reallocates
//! under them). So the run holds a weak reference to each array and to every `ndarray` on its
//! `base` chain (a view's memory belongs to its base) for the call.
use heapless::Vec as StackVec;
use modelrt_core::bundle::MAX_IO;
use numpy::PyUntypedArray;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyWeakrefReference;

use crate::rawbuf;

/// How many `ndarray`s of one array's base chain are pinned at most (numpy collapses chains of
/// views, so a chain is rarely longer than two).
const MAX_CHAIN: usize = 8;

/// Weak references held for one run (dropped with it).
pub struct Pins<'py>(StackVec<Bound<'py, PyWeakrefReference>, { 4 * MAX_IO * MAX_CHAIN }>);

impl<'py> Pins<'py> {
    pub fn new() -> Self {
        Pins(StackVec::new())
    }

    /// Pin `a` and every `ndarray` its memory comes from; `name` names it in an error.
    pub fn pin(&mut self, name: &str, a: &Bound<'py, PyUntypedArray>) -> PyResult<()> {
        let mut cur = a.clone();
        for _ in 0..MAX_CHAIN {
            let w = PyWeakrefReference::new(&cur)?;
            self.0
                .push(w)
                .map_err(|_| PyValueError::new_err(format!("too many arrays to pin ({name})")))?;
            match rawbuf::base(&cur).map(|b| b.cast_into::<PyUntypedArray>()) {
                Some(Ok(b)) => cur = b,
                // No base, or a base that is not an ndarray (bytes, bytearray, mmap: those
                // refuse to resize while numpy holds their buffer).
                _ => return Ok(()),
            }
        }
        Err(PyValueError::new_err(format!(
            "'{name}' is a view of more than {MAX_CHAIN} arrays: pass a copy"
        )))
    }
}

impl Default for Pins<'_> {
    fn default() -> Self {
        Pins::new()
    }
}
