//! Format 2.3's `Step::LaunchThreads` (a launch whose last work group per dimension is partial, as tinygrad's QCOM
//! path launches fractional global sizes; docs/hw/adreno-kgsl-pm4.md §18.1): a bundle with one is stamped 2.3 and
//! carries 2.3's schema hash (one without stays a byte-identical 2.1 file), its thread counts must lie inside the
//! last groups, a signed 2.3 file stays 2.3, and a backend without partial groups (the default `exec_threads`)
//! refuses it at load instead of running whole groups.
mod common;

use common::{Fixture, MockDevice};
use modelrt_core::bundle::writer::{sign_bundle, write_bundle, WriteError};
use modelrt_core::bundle::{
    Bundle, BundleError, Step, LAUNCH_THREADS_MINOR, SCHEMA_2_3_HASH, UNSIGNED_MINOR,
};
use modelrt_core::{ExecError, Executor};

/// The fixture with its `mul` launch made a `LaunchThreads` over `global` groups of `local` items of which
/// `threads` run.
fn with_threads(
    global: [u32; 3],
    local: [u32; 3],
    threads: [u32; 3],
) -> Result<Vec<u8>, WriteError> {
    let fx = Fixture::new();
    let mut spec = fx.spec();
    let Step::Launch { kernel, args, .. } = spec.run[1].clone() else {
        panic!("fixture step 1 is the mul launch")
    };
    spec.run[1] = Step::LaunchThreads {
        kernel,
        args,
        global,
        local,
        threads,
    };
    spec.reference = None;
    write_bundle(&spec)
}

fn minor(b: &[u8]) -> u16 {
    u16::from_le_bytes([b[10], b[11]])
}

#[test]
fn a_partial_launch_makes_a_2_3_file() {
    let b = with_threads([3, 1, 1], [4, 1, 1], [10, 1, 1]).unwrap();
    assert_eq!(minor(&b), LAUNCH_THREADS_MINOR);
    assert_eq!(LAUNCH_THREADS_MINOR, 3);
    assert_eq!(&b[16..24], &SCHEMA_2_3_HASH.to_le_bytes());
    let parsed = Bundle::parse(&b).unwrap();
    assert_eq!(
        parsed.body().run.get(1).unwrap(),
        Step::LaunchThreads {
            kernel: 1,
            args: match Fixture::new().spec().run[1].clone() {
                Step::Launch { args, .. } => args,
                _ => unreachable!(),
            },
            global: [3, 1, 1],
            local: [4, 1, 1],
            threads: [10, 1, 1],
        }
    );
    // without one the file is still 2.1
    let plain = write_bundle(&Fixture::new().spec()).unwrap();
    assert_eq!(minor(&plain), UNSIGNED_MINOR);
}

#[test]
fn thread_counts_outside_the_last_groups_are_refused() {
    // 3 groups of 4: 9..=12 items run; 8 would leave the last group empty, 13 needs a fourth group
    for t in [9, 12] {
        assert!(with_threads([3, 1, 1], [4, 1, 1], [t, 1, 1]).is_ok(), "{t}");
    }
    for t in [0, 8, 13] {
        let e = with_threads([3, 1, 1], [4, 1, 1], [t, 1, 1]).unwrap_err();
        assert!(
            matches!(
                e,
                WriteError::Invalid(BundleError::Invalid {
                    what: "launch thread counts are not within its last work groups",
                    ..
                })
            ),
            "{t}: {e:?}"
        );
    }
    // every dimension is checked
    assert!(with_threads([3, 2, 1], [4, 2, 1], [10, 2, 1]).is_err());
    assert!(with_threads([3, 2, 1], [4, 2, 1], [10, 3, 1]).is_ok());
}

#[test]
fn signing_keeps_2_3() {
    let b = with_threads([3, 1, 1], [4, 1, 1], [10, 1, 1]).unwrap();
    let signed = sign_bundle(&b, &[9; 32], |_| [0; 64]).unwrap();
    assert_eq!(minor(&signed), LAUNCH_THREADS_MINOR);
    assert!(Bundle::parse(&signed).unwrap().signature().is_some());
    let plain = write_bundle(&Fixture::new().spec()).unwrap();
    assert_eq!(
        minor(&sign_bundle(&plain, &[9; 32], |_| [0; 64]).unwrap()),
        2
    );
}

#[test]
fn a_backend_without_partial_groups_refuses_at_load() {
    let b = with_threads([3, 1, 1], [4, 1, 1], [10, 1, 1]).unwrap();
    let e = Executor::load(Bundle::parse(&b).unwrap(), MockDevice::default())
        .err()
        .expect("refused");
    assert!(matches!(e, ExecError::PartialGroups { kernel: 1 }), "{e}");
    assert!(e.to_string().contains("partial last work group"), "{e}");
}
