//! The whole `Executor::run` path (input upload, submit on the CPU backend's thread pool, output
//! download) on a real tinygrad bundle — the embedded demo — performs no heap allocation across 100
//! runs, under a counting global allocator.

mod noalloc_common;

use std::sync::atomic::Ordering;

use modelrt_targets::cpu::CpuDevice;
use noalloc_common::{Counting, ALLOCATIONS, COUNTING};

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn hundred_executor_runs_of_a_real_bundle_allocate_nothing() {
    use modelrt_core::{Bundle, Executor};
    let path = format!(
        "{}/assets/demo-{}.mrt",
        env!("CARGO_MANIFEST_DIR"),
        std::env::consts::ARCH
    );
    let bytes = std::fs::read(path).unwrap();
    let bundle = Bundle::parse(&bytes).unwrap();
    let r = bundle.body().reference.unwrap();
    let input = r.inputs.get(0).unwrap().data.to_vec();
    let want = r.outputs.get(0).unwrap().data.to_vec();
    let mut ex = Executor::load(bundle, CpuDevice::new(2).unwrap()).unwrap();
    let mut out = vec![0u8; want.len()];
    ex.run(&[&input], &mut [&mut out]).unwrap(); // warm-up
    COUNTING.store(true, Ordering::SeqCst);
    for _ in 0..100 {
        ex.run(&[&input], &mut [&mut out]).unwrap();
    }
    COUNTING.store(false, Ordering::SeqCst);
    assert_eq!(
        ALLOCATIONS.swap(0, Ordering::SeqCst),
        0,
        "allocations during 100 Executor::run"
    );
    let c = modelrt_core::verify::compare(modelrt_hal::target::DType::F32, &out, &want, 1e-4, 1e-4);
    assert!(c.ok(), "{c:?}");
}
