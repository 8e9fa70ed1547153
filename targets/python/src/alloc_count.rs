//! The extension's global allocator: the system allocator plus a count of every allocation made by
//! Rust code in this module (the runtime, PyO3, rust-numpy; not Python's or numpy's own, which go
//! through CPython's allocators). `modelrt._rust_allocations()` reads the count, so the Python
//! suite can check that `Model.run(feeds, outputs=...)` allocates nothing per step in the very
//! extension that ships (the cost is one relaxed atomic add per allocation).
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

use pyo3::prelude::*;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

/// [`System`], counting `alloc`, `alloc_zeroed` and `realloc` calls.
pub struct Counting;

// SAFETY: every method forwards to `System` with the caller's arguments unchanged; the counter
// neither allocates nor touches the memory.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract for `GlobalAlloc::alloc`, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract for `GlobalAlloc::alloc_zeroed`, passed on.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract for `GlobalAlloc::realloc`, passed on.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract for `GlobalAlloc::dealloc`, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// How many heap allocations Rust code in modelrt has made in this process so far (a diagnostic
/// for tests: the difference over a span of calls is what they allocated on the Rust side).
#[pyfunction]
pub fn _rust_allocations() -> u64 {
    ALLOCATIONS.load(Ordering::Relaxed)
}
