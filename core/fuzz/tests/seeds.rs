//! The seed corpus is what the fuzzers mutate, so it must be valid, pass the run rule, and compute
//! what tinygrad's kernel source says (`targets/cpu/tests/fixtures/cpu/tinygrad_E_1024_4.c`:
//! `out = max(a*b, 0) + 1.5`), checked here against values worked out by hand.
use modelrt_core::{Bundle, Executor};
use modelrt_core_fuzz::{reseal, runnable, seed_bundles};
use modelrt_cpu::CpuDevice;

#[test]
fn seeds_validate_run_and_compute_the_kernel() {
    let seeds = seed_bundles();
    assert_eq!(seeds.len(), 2);
    for (name, bytes) in seeds {
        let b = Bundle::parse(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(runnable(&b), "{name} must be runnable");
        assert_eq!(reseal(&bytes).as_deref(), Some(&bytes[..]), "{name}");
        let mut exec = Executor::load(b, CpuDevice::new(1).unwrap()).unwrap();
        // x[i] = (i % 5) * 0.25, w[i] = (i % 7) - 2.
        let x: Vec<u8> = (0..4096)
            .flat_map(|i| (((i % 5) as f32) * 0.25).to_le_bytes())
            .collect();
        let mut y = vec![0u8; 4096 * 4];
        exec.run(&[&x], &mut [&mut y]).unwrap();
        let y: Vec<f32> = y
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        // i=0: x=0, w=-2 → 1.5; i=3: x=0.75, w=1 → 2.25; i=4: x=1, w=2 → 3.5;
        // i=6: x=0.25, w=4 → 2.5; i=1: x=0.25, w=-1 → max(-0.25,0)+1.5 = 1.5.
        assert_eq!(
            (y[0], y[1], y[3], y[4], y[6]),
            (1.5, 1.5, 2.25, 3.5, 2.5),
            "{name}"
        );
    }
}

#[test]
fn a_changed_kernel_object_is_not_runnable() {
    let (_, bytes) = seed_bundles().remove(0);
    // Flip one byte of the kernel object (it is stored verbatim in the body).
    let obj = modelrt_core_fuzz::E_1024_4;
    let at = bytes
        .windows(obj.len())
        .position(|w| w == obj)
        .expect("kernel object in the bundle");
    let mut patched = bytes.clone();
    patched[at + obj.len() / 2] ^= 0x40;
    let patched = reseal(&patched).unwrap();
    let b = Bundle::parse(&patched).expect("still a valid bundle");
    assert!(
        !runnable(&b),
        "a changed kernel object must not be executed"
    );
}

/// `capi_load_run`'s finding of 2026-12-03 (docs/fuzzing.md), the input as libFuzzer saved it: argument
/// bytes, then a bundle whose `E_1024_4` launch stores (its first parameter) into a weight the CPU
/// backend may serve in place from the read-only file mapping. The C API maps the file, so running it
/// faulted (SIGSEGV at the kernel's first store); the run rule must turn such a bundle away.
#[test]
fn a_launch_storing_to_an_in_place_weight_is_not_runnable() {
    let data = include_bytes!("data/capi_store_to_in_place_weight.bin");
    let bundle = &data[modelrt_core_fuzz::CAPI_ARGS..];
    let sealed = reseal(bundle).unwrap();
    let mut parsed = 0;
    for bytes in [bundle, &sealed[..]] {
        let Ok(b) = Bundle::parse(bytes) else {
            continue;
        };
        parsed += 1;
        let body = b.body();
        let stores_to_weight = body.run.iter().chain(body.init.iter()).any(|s| {
            let Ok(
                modelrt_core::bundle::Step::Launch { args, .. }
                | modelrt_core::bundle::Step::LaunchThreads { args, .. },
            ) = s
            else {
                return false;
            };
            matches!(args.first(), Some(modelrt_core::bundle::ArgRef::Buffer { buffer, .. })
                if b.in_place_weight(*buffer).is_ok())
        });
        assert!(stores_to_weight, "the saved input is the case described");
        assert!(
            !runnable(&b),
            "a kernel storing to read-only weight pages must not be run"
        );
    }
    assert!(parsed > 0, "the saved bundle parses (as is or resealed)");
}
