//! `mrt_model_run` allocates nothing: after a warm-up step, 100 steps of the demo bundle on the CPU
//! under a counting global allocator perform zero allocations (and still compute the outputs).
mod common;
#[path = "../../tests/noalloc_common/mod.rs"]
mod noalloc_common;

use std::sync::atomic::Ordering;

use common::*;
use modelrt::error::MRT_OK;
use modelrt::ffi::mrt_model_free;
use noalloc_common::{Counting, ALLOCATIONS, COUNTING};

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn hundred_runs_allocate_nothing() {
    let (ins, _, _, _) = reference();
    let (rc, m) = load(demo().to_str().unwrap(), Some("cpu"));
    assert_eq!(rc, MRT_OK, "{}", last_error());
    let mut outs = vec![vec![0u8; 128]];
    let io = Io::new(&ins, &mut outs);
    // SAFETY: `m` is NULL or a live handle; the buffers outlive the call.
    let rc = unsafe { io.run(m) };
    assert_eq!(rc, MRT_OK, "{}", last_error()); // warm-up
    let first = outs[0].clone();
    outs[0].fill(0);
    let io = Io::new(&ins, &mut outs);
    COUNTING.store(true, Ordering::SeqCst);
    let mut rcs = [0i32; 100];
    for rc in rcs.iter_mut() {
        // SAFETY: `m` is NULL or a live handle; the buffers outlive the call.
        *rc = unsafe { io.run(m) };
    }
    COUNTING.store(false, Ordering::SeqCst);
    assert_eq!(
        ALLOCATIONS.load(Ordering::SeqCst),
        0,
        "allocations during 100 runs"
    );
    assert!(rcs.iter().all(|&rc| rc == MRT_OK), "{}", last_error());
    assert_eq!(outs[0], first, "the runs computed the outputs");
    assert!(first.iter().any(|&b| b != 0));
    // SAFETY: live handle, freed once.
    unsafe { mrt_model_free(m) };
}
