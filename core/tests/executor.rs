//! Executor tests against the interpreting mock device: init phase, copies, launches, IO checks.
mod common;

use common::{bytes_f32, f32_bytes, Fixture, MockDevice, N};
use modelrt_core::bundle::writer::write_bundle;
use modelrt_core::bundle::Bundle;
use modelrt_core::verify::compare;
use modelrt_core::{ExecError, Executor};
use modelrt_hal::target::DType;

#[test]
fn runs_schedule_and_matches_reference() {
    let fx = Fixture::new();
    let bytes = write_bundle(&fx.spec()).unwrap();
    let bundle = Bundle::parse(&bytes).unwrap();
    let mut ex = Executor::load(bundle, MockDevice::default()).unwrap();
    let mut out = vec![0u8; N * 4];
    ex.run(&[&fx.ref_in], &mut [&mut out]).unwrap();
    let c = compare(DType::F32, &out, &fx.ref_out, 1e-6, 1e-6);
    assert!(c.ok(), "{c:?}");
    // A second run with other data gives other, correct results (no stale state).
    let x2: Vec<f32> = (0..N).map(|i| i as f32).collect();
    ex.run(&[&f32_bytes(&x2)], &mut [&mut out]).unwrap();
    let w: Vec<f32> = (0..N).map(|i| i as f32 * 0.5 - 3.0).collect();
    let want: Vec<f32> = (0..N)
        .map(|i| (x2[i] * w[i] + 2.0 * w[i]).max(0.0))
        .collect();
    assert_eq!(bytes_f32(&out), want);
    // init (1) + two runs.
    assert_eq!(ex.device_mut().submits, 3);
}

#[test]
fn wrong_inputs_are_refused() {
    let fx = Fixture::new();
    let bytes = write_bundle(&fx.spec()).unwrap();
    let mut ex = Executor::load(Bundle::parse(&bytes).unwrap(), MockDevice::default()).unwrap();
    let mut out = vec![0u8; N * 4];
    let e = ex.run(&[], &mut [&mut out]).unwrap_err();
    assert!(matches!(
        e,
        ExecError::Count {
            what: "inputs",
            expected: 1,
            got: 0
        }
    ));
    let e = ex.run(&[&fx.ref_in[..8]], &mut [&mut out]).unwrap_err();
    assert_eq!(e.to_string(), "inputs 0 has 8 bytes, the bundle expects 64");
    let mut short = vec![0u8; 4];
    assert!(matches!(
        ex.run(&[&fx.ref_in], &mut [&mut short]),
        Err(ExecError::Size {
            what: "outputs",
            ..
        })
    ));
}

#[test]
fn wrong_target_is_refused_at_load() {
    let fx = Fixture::new();
    let mut spec = fx.spec();
    spec.target = modelrt_hal::target::Target::Amd { gfx: 0x1100 };
    // Kernel metadata must match the target, so the writer already refuses this.
    assert!(write_bundle(&spec).is_err());
}

#[test]
fn arena_over_the_limit_is_refused_before_allocation() {
    use modelrt_core::bundle::BufferKind;
    use modelrt_core::exec::MAX_ARENA;
    let fx = Fixture::new();
    let mut spec = fx.spec();
    // An unused scratch buffer as large as the limit pushes the arena just past it.
    spec.buffer("huge", MAX_ARENA, DType::U8, BufferKind::Scratch, None);
    let bytes = write_bundle(&spec).unwrap();
    let bundle = Bundle::parse(&bytes).unwrap();
    let arena = bundle.body().arena_size;
    assert!(arena > MAX_ARENA);
    // The mock device would allocate (and zero) the whole arena: refused before that.
    let e = Executor::load(bundle, MockDevice::default())
        .err()
        .expect("refused");
    assert!(
        matches!(e, ExecError::ArenaTooLarge { bytes, limit: MAX_ARENA } if bytes == arena),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        format!(
            "the bundle's arena of {arena} bytes exceeds the 64 GiB limit ({MAX_ARENA} bytes); it was not loaded"
        )
    );
    // The fixture alone (a small arena) loads.
    let bytes = write_bundle(&fx.spec()).unwrap();
    assert!(Executor::load(Bundle::parse(&bytes).unwrap(), MockDevice::default()).is_ok());
}
