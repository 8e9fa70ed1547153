//! Step-by-step traced runs (`modelrt_core::profile`) against the interpreting mock device: same
//! results as `Executor::run`, one slice per upload/step/download in schedule order, size checks.
mod common;

use common::{Fixture, MockDevice, MockQueue, N};
use modelrt_core::bundle::writer::write_bundle;
use modelrt_core::bundle::Bundle;
use modelrt_core::profile::{record_steps, traced_run, write_chrome_trace, Lane, Slice, SliceKind};
use modelrt_core::{ExecError, Executor};

#[test]
fn traced_run_matches_the_reference_with_one_slice_per_operation() {
    let fx = Fixture::new();
    let bytes = write_bundle(&fx.spec()).unwrap();
    let bundle = Bundle::parse(&bytes).unwrap();
    let mut ex = Executor::load(bundle.clone(), MockDevice::default()).unwrap();
    let mut queues = Vec::new();
    let n = record_steps(&bundle, ex.device_mut(), |q| queues.push(q)).unwrap();
    // The fixture's run schedule: copy, mul, add, relu_rows.
    assert_eq!(n, 4);
    assert_eq!(queues.len(), 4);
    let submits_before = ex.device_mut().submits;
    let mut out = vec![0u8; N * 4];
    let mut slices: Vec<Slice<'_>> = Vec::new();
    traced_run(
        &bundle,
        ex.device_mut(),
        &mut queues,
        &[&fx.ref_in],
        &mut [&mut out],
        |s| slices.push(s),
    )
    .unwrap();
    assert_eq!(out, fx.ref_out);
    assert_eq!(
        ex.device_mut().submits - submits_before,
        4,
        "one submit per step"
    );
    let kinds: Vec<(&SliceKind<'_>, Lane, u64)> =
        slices.iter().map(|s| (&s.kind, s.lane, s.bytes)).collect();
    assert_eq!(
        kinds,
        vec![
            (&SliceKind::Upload { name: "x" }, Lane::Transfer, 64),
            (&SliceKind::Copy { step: 0 }, Lane::Queue, 64),
            (
                &SliceKind::Launch {
                    step: 1,
                    kernel: 1,
                    name: "mul",
                    global: [1, 1, 1],
                    local: [1, 1, 1]
                },
                Lane::Queue,
                192
            ),
            (
                &SliceKind::Launch {
                    step: 2,
                    kernel: 0,
                    name: "add",
                    global: [1, 1, 1],
                    local: [1, 1, 1]
                },
                Lane::Queue,
                192
            ),
            (
                &SliceKind::Launch {
                    step: 3,
                    kernel: 2,
                    name: "relu_rows",
                    global: [2, 1, 1],
                    local: [1, 1, 1]
                },
                Lane::Queue,
                128
            ),
            (&SliceKind::Download { name: "y" }, Lane::Transfer, 64),
        ]
    );
    let mut json = String::new();
    write_chrome_trace(&mut json, "mock", &slices).unwrap();
    assert_eq!(json.matches("\"ph\":\"X\"").count(), 6);
}

#[test]
fn traced_run_refuses_wrong_sizes_and_foreign_queue_lists() {
    let fx = Fixture::new();
    let bytes = write_bundle(&fx.spec()).unwrap();
    let bundle = Bundle::parse(&bytes).unwrap();
    let mut ex = Executor::load(bundle.clone(), MockDevice::default()).unwrap();
    let mut queues = Vec::new();
    record_steps(&bundle, ex.device_mut(), |q| queues.push(q)).unwrap();
    let mut out = vec![0u8; N * 4];
    let mut refused = |queues: &mut [MockQueue], inputs: &[&[u8]], outputs: &mut [&mut [u8]]| {
        traced_run(&bundle, ex.device_mut(), queues, inputs, outputs, |_| {}).unwrap_err()
    };
    let e = refused(&mut queues, &[&fx.ref_in[..8]], &mut [&mut out]);
    assert!(matches!(
        e,
        ExecError::Size {
            what: "inputs",
            name_index: 0,
            expected: 64,
            got: 8
        }
    ));
    let mut short = vec![0u8; 4];
    let e = refused(&mut queues, &[&fx.ref_in], &mut [&mut short]);
    assert!(matches!(
        e,
        ExecError::Size {
            what: "outputs",
            ..
        }
    ));
    let e = refused(&mut queues[..3], &[&fx.ref_in], &mut [&mut out]);
    assert!(matches!(
        e,
        ExecError::Count {
            what: "step queues",
            expected: 4,
            got: 3
        }
    ));
}
