//! Proves `Executor::run` performs no heap allocation: a counting global allocator observes 100 runs.
mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use common::{Fixture, MockDevice, N};
use modelrt_core::bundle::writer::write_bundle;
use modelrt_core::bundle::Bundle;
use modelrt_core::Executor;

struct Counting;
static COUNTING: AtomicBool = AtomicBool::new(false);
static ALLOCS: AtomicU64 = AtomicU64::new(0);

// SAFETY: defers to the system allocator; only adds a counter.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.load(Ordering::SeqCst) {
            ALLOCS.fetch_add(1, Ordering::SeqCst);
        }
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTING.load(Ordering::SeqCst) {
            ALLOCS.fetch_add(1, Ordering::SeqCst);
        }
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn run_does_not_allocate() {
    let fx = Fixture::new();
    let bytes = write_bundle(&fx.spec()).unwrap();
    let mut ex = Executor::load(Bundle::parse(&bytes).unwrap(), MockDevice::default()).unwrap();
    let mut out = vec![0u8; N * 4];
    ex.run(&[&fx.ref_in], &mut [&mut out]).unwrap();
    // Sanity: the counter works.
    COUNTING.store(true, Ordering::SeqCst);
    drop(std::hint::black_box(vec![1u8; 3]));
    assert_eq!(ALLOCS.swap(0, Ordering::SeqCst), 1);
    for _ in 0..100 {
        ex.run(&[&fx.ref_in], &mut [&mut out]).unwrap();
    }
    COUNTING.store(false, Ordering::SeqCst);
    assert_eq!(ALLOCS.load(Ordering::SeqCst), 0);
    assert_eq!(out, fx.ref_out);
}
