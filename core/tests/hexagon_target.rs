//! Hexagon bundles (`Target::Hexagon`): a DSP kernel runs on one hardware thread, so its metadata is the CPU one
//! with `threads == 1`; anything else is refused by validation with one clear error.
mod common;

use common::Fixture;
use modelrt_core::bundle::writer::write_bundle;
use modelrt_core::Bundle;
use modelrt_hal::target::{CpuKernelMeta, KernelMeta, Target};

#[test]
fn hexagon_kernels_must_be_single_threaded() {
    let f = Fixture::new();
    let mut spec = f.spec();
    spec.target = Target::Hexagon { version: 65 };
    assert!(
        spec.kernels
            .iter()
            .any(|k| matches!(k.meta, KernelMeta::Cpu(m) if m.threads > 1)),
        "the fixture has a multi-threaded kernel"
    );
    let err = write_bundle(&spec)
        .map_err(|e| e.to_string())
        .and_then(|b| Bundle::parse(&b).map(|_| ()).map_err(|e| e.to_string()))
        .unwrap_err();
    assert!(
        err.contains("Hexagon kernel with more than 1 thread"),
        "{err}"
    );
    for k in &mut spec.kernels {
        k.meta = KernelMeta::Cpu(CpuKernelMeta { threads: 1 });
    }
    let bytes = write_bundle(&spec).expect("single-threaded Hexagon kernels are accepted");
    let b = Bundle::parse(&bytes).expect("and validate");
    assert_eq!(b.body().target, Target::Hexagon { version: 65 });
}
