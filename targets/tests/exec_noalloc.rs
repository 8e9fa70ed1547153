//! The whole `Executor::run` path (input upload, submit on the CPU backend's thread pool, output
//! download) on a real tinygrad bundle — the embedded demo — performs no heap allocation across 100
//! runs, under a counting global allocator — with the weights copied into the arena and with them
//! read in place from the mapped bundle file.

mod noalloc_common;

use std::sync::atomic::Ordering;

use modelrt_cpu::CpuDevice;
use noalloc_common::{Counting, ALLOCATIONS, COUNTING};

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Both ways of loading: weights copied into the arena (bundle read), and weights read in place
/// from the mapped bundle file. One test, run in sequence: the allocation counter is global.
#[test]
fn hundred_executor_runs_of_a_real_bundle_allocate_nothing() {
    use modelrt_core::{Bundle, Executor};
    use modelrt_targets::bundle_file::BundleFile;
    let path = format!(
        "{}/assets/demo-{}.mrt",
        env!("CARGO_MANIFEST_DIR"),
        std::env::consts::ARCH
    );
    for map in [false, true] {
        let file = BundleFile::open(std::path::Path::new(&path), map).unwrap();
        let bundle = Bundle::parse(file.bytes()).unwrap();
        let r = bundle.body().reference.unwrap();
        let input = r.inputs.get(0).unwrap().data.to_vec();
        let want = r.outputs.get(0).unwrap().data.to_vec();
        let mut dev = CpuDevice::new(2).unwrap();
        if let Some(m) = file.mapping() {
            assert!(dev.bind_weights(&bundle, m).unwrap().bound > 0);
        }
        assert_eq!(file.mapping().is_some(), map);
        let mut ex = Executor::load(bundle, dev).unwrap();
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
            "allocations during 100 Executor::run (mapped: {map})"
        );
        let c =
            modelrt_core::verify::compare(modelrt_hal::target::DType::F32, &out, &want, 1e-4, 1e-4);
        assert!(c.ok(), "mapped: {map}: {c:?}");
    }
}
