//! The bytes of a numpy array, viewed in place for one run without numpy's or rust-numpy's
//! book-keeping (rust-numpy's borrow tracking allocates a map entry per borrowed array, and `run`
//! must allocate nothing). The caller has checked what makes the view sound: the array is
//! C-contiguous with the expected byte length, writeable where written, and no byte range is lent
//! mutably twice ([`overlaps`]). Also numpy's C-level copy ([`c_copy`]: no Python-level method of
//! an `ndarray` subclass runs) and an array's `base` object (for [`crate::pin`]).
use numpy::npyffi::{self, flags, PY_ARRAY_API};
use numpy::{PyUntypedArray, PyUntypedArrayMethods};
use pyo3::prelude::*;

/// The array object's header.
fn header<'a>(a: &'a Bound<'_, PyUntypedArray>) -> &'a npyffi::PyArrayObject {
    // SAFETY: `a` is a live numpy array (its type was checked when it was cast), whose object
    // starts with the `PyArrayObject` header; the reference lives no longer than `a`.
    unsafe { &*a.as_array_ptr() }
}

/// Whether numpy lets the array be written.
pub fn writeable(a: &Bound<'_, PyUntypedArray>) -> bool {
    header(a).fields.flags & flags::NPY_ARRAY_WRITEABLE != 0
}

/// Whether the array has a data pointer.
pub fn has_data(a: &Bound<'_, PyUntypedArray>) -> bool {
    !header(a).fields.data.is_null()
}

/// The array's data range `[start, start + len)` as addresses.
pub fn range(a: &Bound<'_, PyUntypedArray>, len: usize) -> (usize, usize) {
    let start = header(a).fields.data as usize;
    (start, start + len)
}

/// Whether two address ranges share a byte.
pub fn overlaps(a: (usize, usize), b: (usize, usize)) -> bool {
    a.0 < b.1 && b.0 < a.1 && a.0 != a.1 && b.0 != b.1
}

/// The first `len` bytes of the C-contiguous array `a`.
///
/// # Safety
/// `a` is C-contiguous and holds at least `len` bytes, and no mutable view of an overlapping range
/// is alive while the returned slice is.
pub unsafe fn bytes<'a>(a: &'a Bound<'_, PyUntypedArray>, len: usize) -> &'a [u8] {
    let p = header(a).fields.data as *const u8;
    if len == 0 || p.is_null() {
        return &[];
    }
    // SAFETY: numpy's data pointer of a C-contiguous array addresses its `len` bytes (caller),
    // kept alive by `a`; no overlapping mutable view exists (caller).
    unsafe { std::slice::from_raw_parts(p, len) }
}

/// The first `len` bytes of the C-contiguous, writeable array `a`, mutably.
///
/// # Safety
/// `a` is C-contiguous, writeable and holds at least `len` bytes, and no other view of an
/// overlapping range is alive while the returned slice is.
#[allow(clippy::mut_from_ref)]
pub unsafe fn bytes_mut<'a>(a: &'a Bound<'_, PyUntypedArray>, len: usize) -> &'a mut [u8] {
    let p = header(a).fields.data as *mut u8;
    if len == 0 || p.is_null() {
        return &mut [];
    }
    // SAFETY: as in `bytes`; the range is writeable and lent to nobody else (caller).
    unsafe { std::slice::from_raw_parts_mut(p, len) }
}

/// A fresh, C-contiguous, aligned, base-class `ndarray` copy of `a` with the same dtype and shape,
/// made by numpy's C API (`PyArray_FromAny` with `NPY_ARRAY_ENSURECOPY | NPY_ARRAY_ENSUREARRAY`),
/// so no Python-level method of a subclass (`copy`, `__array__`, ...) decides its size.
pub fn c_copy<'py>(a: &Bound<'py, PyUntypedArray>) -> PyResult<Bound<'py, PyUntypedArray>> {
    let py = a.py();
    let fl = flags::NPY_ARRAY_C_CONTIGUOUS
        | flags::NPY_ARRAY_ALIGNED
        | flags::NPY_ARRAY_ENSURECOPY
        | flags::NPY_ARRAY_ENSUREARRAY;
    // SAFETY: `a` is a live array object (a borrowed reference kept alive by `a`); a NULL dtype
    // keeps the array's own (nothing is stolen); the result is a new reference or NULL with a
    // Python exception set, which `from_owned_ptr_or_err` turns into an error.
    let obj = unsafe {
        let p = PY_ARRAY_API.PyArray_FromAny(
            py,
            a.as_ptr(),
            std::ptr::null_mut(),
            0,
            0,
            fl,
            std::ptr::null_mut(),
        );
        Bound::from_owned_ptr_or_err(py, p)?
    };
    Ok(obj.cast_into::<PyUntypedArray>()?)
}

/// The array's `base` (the object owning its memory, or a further view), if any.
pub fn base<'py>(a: &Bound<'py, PyUntypedArray>) -> Option<Bound<'py, PyAny>> {
    let p = header(a).fields.base;
    // SAFETY: `base` is NULL or a strong reference held by the array, alive while `a` is; the new
    // `Bound` takes its own reference.
    unsafe { Bound::from_borrowed_ptr_or_opt(a.py(), p) }
}
