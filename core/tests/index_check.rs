//! Format 2.3 index checks: a bundle with a range-checked int64 input is stamped 2.3 (2.1 without checks), keeps its
//! checks through signing, is refused at write time when a check is malformed, and `Executor::run` refuses an
//! out-of-range element before anything is submitted while in-range values (negative ones included) run as before.
mod common;

use common::{Fixture, MockDevice, N};
use ed25519_compact::{KeyPair, Seed};
use modelrt_core::bundle::writer::{sign_bundle, write_bundle, BundleSpec, WriteError};
use modelrt_core::bundle::{
    BufferKind, Bundle, IndexCheck, INDEX_CHECK_MINOR, SCHEMA_2_3_HASH, UNSIGNED_MINOR,
};
use modelrt_core::index_check::Value;
use modelrt_core::{ExecError, Executor};
use modelrt_hal::target::DType;

const WHAT: &str = "indices of Gather 'g0' into axis 0 of 'table', size 50";

fn i64s(v: &[i64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// The fixture's model with a second input `idx` (3 x int64) that `check` (if any) range-checks.
fn with_idx<'a>(fx: &'a Fixture, check: Option<IndexCheck<'a>>) -> BundleSpec<'a> {
    let mut spec = fx.spec();
    let b = spec.buffer("input:idx", 24, DType::I64, BufferKind::Input, None);
    spec.input("idx", b, DType::I64, &[3]);
    spec.reference = None;
    spec.index_checks.extend(check);
    spec
}

fn gather_check() -> IndexCheck<'static> {
    IndexCheck {
        input: 1,
        period: 1,
        phase: 0,
        min: -50,
        max: 49,
        what: WHAT,
    }
}

fn minor(b: &[u8]) -> u16 {
    u16::from_le_bytes([b[10], b[11]])
}

#[test]
fn a_bundle_with_checks_is_2_3_and_one_without_stays_2_1() {
    let fx = Fixture::new();
    let with = write_bundle(&with_idx(&fx, Some(gather_check()))).unwrap();
    assert_eq!(minor(&with), INDEX_CHECK_MINOR);
    assert_eq!(
        u64::from_le_bytes(with[16..24].try_into().unwrap()),
        SCHEMA_2_3_HASH
    );
    let parsed = Bundle::parse(&with).unwrap();
    assert_eq!(parsed.index_checks().len(), 1);
    assert_eq!(parsed.index_checks().get(0).unwrap(), gather_check());

    let without = write_bundle(&with_idx(&fx, None)).unwrap();
    assert_eq!(minor(&without), UNSIGNED_MINOR);
    assert!(Bundle::parse(&without).unwrap().index_checks().is_empty());
}

#[test]
fn signing_keeps_the_checks_and_the_minor() {
    let fx = Fixture::new();
    let kp = KeyPair::from_seed(Seed::new([3; 32]));
    let with = write_bundle(&with_idx(&fx, Some(gather_check()))).unwrap();
    let signed = sign_bundle(&with, &kp.pk, |m| *kp.sk.sign(m, None)).unwrap();
    assert_eq!(minor(&signed), INDEX_CHECK_MINOR);
    let parsed = Bundle::parse(&signed).unwrap();
    assert!(parsed.signature().is_some());
    assert_eq!(parsed.index_checks().get(0).unwrap(), gather_check());
    // Without checks a signed bundle is still a 2.2 file.
    let plain = write_bundle(&with_idx(&fx, None)).unwrap();
    let signed = sign_bundle(&plain, &kp.pk, |m| *kp.sk.sign(m, None)).unwrap();
    assert_eq!(minor(&signed), 2);
}

#[test]
fn malformed_checks_are_refused_at_write() {
    let fx = Fixture::new();
    let bad = [
        IndexCheck {
            input: 0, // the float input
            ..gather_check()
        },
        IndexCheck {
            input: 7, // no such input
            ..gather_check()
        },
        IndexCheck {
            period: 2,
            phase: 2,
            ..gather_check()
        },
        IndexCheck {
            period: 0,
            ..gather_check()
        },
        IndexCheck {
            min: 1,
            max: 0,
            ..gather_check()
        },
    ];
    for c in bad {
        let e = write_bundle(&with_idx(&fx, Some(c))).unwrap_err();
        assert!(matches!(e, WriteError::Invalid(_)), "{c:?}: {e}");
    }
}

#[test]
fn run_refuses_out_of_range_indices_before_submitting() {
    let fx = Fixture::new();
    let bytes = write_bundle(&with_idx(&fx, Some(gather_check()))).unwrap();
    let bundle = Bundle::parse(&bytes).unwrap();
    let mut ex = Executor::load(bundle.clone(), MockDevice::default()).unwrap();
    let mut out = vec![0u8; N * 4];
    let submits = ex.device_mut().submits;
    // The whole valid range, both ends and negative indices, runs.
    ex.run(&[&fx.ref_in, &i64s(&[-50, 49, 0])], &mut [&mut out])
        .unwrap();
    assert_eq!(ex.device_mut().submits, submits + 1);
    assert_eq!(out, fx.ref_out);
    for (idx, element, value) in [
        ([0, 1_000_000, 2], 1, 1_000_000i64),
        ([50, 0, 0], 0, 50),
        ([0, 0, -51], 2, -51),
        ([0, 0, i64::MIN], 2, i64::MIN),
    ] {
        let e = ex
            .run(&[&fx.ref_in, &i64s(&idx)], &mut [&mut out])
            .unwrap_err();
        let ExecError::IndexRange(v) = e else {
            panic!("{idx:?}: {e}");
        };
        assert_eq!(
            (v.input, v.element, v.value(), v.min, v.max),
            (1, element, Value::Signed(value), -50, 49)
        );
        assert_eq!(
            v.describe(&bundle).to_string(),
            format!("input 'idx' element {element} is {value}, outside the valid range -50..=49 ({WHAT}); nothing was run")
        );
    }
    assert_eq!(
        ex.device_mut().submits,
        submits + 1,
        "a refused run submitted work"
    );
}

#[test]
fn a_check_on_one_tuple_position_reads_only_that_position() {
    // GatherND-style: idx holds (row, col) pairs; only column 1 is limited to 0..=1 here.
    let fx = Fixture::new();
    let mut spec = fx.spec();
    let b = spec.buffer("input:idx", 32, DType::I64, BufferKind::Input, None);
    spec.input("idx", b, DType::I64, &[2, 2]);
    spec.reference = None;
    spec.index_checks.push(IndexCheck {
        input: 1,
        period: 2,
        phase: 1,
        min: 0,
        max: 1,
        what: "position 1",
    });
    let bytes = write_bundle(&spec).unwrap();
    let mut ex = Executor::load(Bundle::parse(&bytes).unwrap(), MockDevice::default()).unwrap();
    let mut out = vec![0u8; N * 4];
    ex.run(&[&fx.ref_in, &i64s(&[40, 1, 7, 0])], &mut [&mut out])
        .unwrap();
    let e = ex
        .run(&[&fx.ref_in, &i64s(&[0, 0, 1, 2])], &mut [&mut out])
        .unwrap_err();
    assert!(
        matches!(e, ExecError::IndexRange(v) if v.element == 3 && v.value() == Value::Signed(2)),
        "{e}"
    );
}
