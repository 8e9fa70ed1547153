//! Format 2.4 output slices: a bundle with named slices (and a checkpoint) of its output is stamped 2.4 and reads
//! back the same, keeps them through signing, is refused at write time when a slice is malformed, and bundles
//! without any are still written as 2.1 (or 2.3 with index checks), with their own schema hashes.
mod common;

use common::{Fixture, MockDevice, N};
use ed25519_compact::{KeyPair, Seed};
use modelrt_core::bundle::writer::{sign_bundle, write_bundle, BundleSpec, WriteError};
use modelrt_core::bundle::{
    BufferKind, Bundle, IndexCheck, OutputSlice, MAX_CHECKPOINT, MAX_SLICES, MAX_SLICE_NAME,
    OUTPUT_SLICE_MINOR, SCHEMA_HASH, UNSIGNED_MINOR,
};
use modelrt_core::Executor;
use modelrt_hal::target::DType;

const CHECKPOINT: &str = "a27b3122-733e-4a65-938b-acfebebbe5e8/100";

fn minor(b: &[u8]) -> u16 {
    u16::from_le_bytes([b[10], b[11]])
}

fn schema_hash(b: &[u8]) -> u64 {
    u64::from_le_bytes(b[16..24].try_into().unwrap())
}

fn slice(name: &str, start: u64, stop: u64) -> OutputSlice<'_> {
    OutputSlice {
        output: 0,
        name,
        start,
        stop,
    }
}

/// The fixture's model (one output `y`, shape (1, 16)) with `slices` and `checkpoint`.
fn with_slices<'a>(
    fx: &'a Fixture,
    slices: &[OutputSlice<'a>],
    checkpoint: &'a str,
) -> BundleSpec<'a> {
    let mut spec = fx.spec();
    spec.output_slices = slices.to_vec();
    spec.checkpoint = checkpoint;
    spec
}

#[test]
fn slices_round_trip_in_a_2_4_file() {
    let fx = Fixture::new();
    let slices = [
        slice("plan", 0, 10),
        slice("desire", 10, 14),
        slice("pad", 14, 16),
    ];
    let bytes = write_bundle(&with_slices(&fx, &slices, CHECKPOINT)).unwrap();
    assert_eq!(minor(&bytes), OUTPUT_SLICE_MINOR);
    assert_eq!(OUTPUT_SLICE_MINOR, 4);
    assert_eq!(schema_hash(&bytes), SCHEMA_HASH);
    let b = Bundle::parse(&bytes).unwrap();
    let read: Vec<OutputSlice<'_>> = b.output_slices().iter().map(Result::unwrap).collect();
    assert_eq!(read, slices);
    assert_eq!(b.checkpoint(), Some(CHECKPOINT));
    // The slices describe the outputs; the model computes as before.
    let mut ex = Executor::load(b, MockDevice::default()).unwrap();
    let mut out = vec![0u8; N * 4];
    ex.run(&[&fx.ref_in], &mut [&mut out]).unwrap();
    assert_eq!(out, fx.ref_out);
    // A checkpoint alone (no slices) is kept too, in a 2.4 file.
    let bytes = write_bundle(&with_slices(&fx, &[], CHECKPOINT)).unwrap();
    assert_eq!(minor(&bytes), OUTPUT_SLICE_MINOR);
    let b = Bundle::parse(&bytes).unwrap();
    assert!(b.output_slices().is_empty());
    assert_eq!(b.checkpoint(), Some(CHECKPOINT));
}

#[test]
fn without_slices_the_writer_stamps_2_1_and_2_3_files_still_read() {
    let fx = Fixture::new();
    let plain = write_bundle(&fx.spec()).unwrap();
    assert_eq!(minor(&plain), UNSIGNED_MINOR);
    // Format 2.1's schema hash (pinned in header.rs's tests from the 2.1 schema text).
    assert_eq!(schema_hash(&plain), 0x701a_a52a_3565_304a);
    let b = Bundle::parse(&plain).unwrap();
    assert!(b.output_slices().is_empty());
    assert_eq!(b.checkpoint(), None);
    // Empty fields give the same bytes as a spec that never set them.
    assert_eq!(write_bundle(&with_slices(&fx, &[], "")).unwrap(), plain);

    // An index check makes a 2.3 file, carrying 2.3's schema hash (the value pinned before 2.4).
    let mut spec = fx.spec();
    let idx = spec.buffer("input:idx", 8, DType::I64, BufferKind::Input, None);
    spec.input("idx", idx, DType::I64, &[1]);
    spec.reference = None;
    spec.index_checks.push(IndexCheck {
        input: 1,
        period: 1,
        phase: 0,
        min: 0,
        max: 3,
        what: "test",
    });
    let v23 = write_bundle(&spec).unwrap();
    assert_eq!(minor(&v23), 3);
    assert_eq!(schema_hash(&v23), 0x92ee_9e27_52e1_d040);
    let b = Bundle::parse(&v23).unwrap();
    assert_eq!(b.index_checks().len(), 1);
    assert!(b.output_slices().is_empty());
    // With slices as well, it is a 2.4 file holding both.
    spec.output_slices = vec![slice("all", 0, 16)];
    let v24 = write_bundle(&spec).unwrap();
    assert_eq!(minor(&v24), 4);
    let b = Bundle::parse(&v24).unwrap();
    assert_eq!(b.index_checks().len(), 1);
    assert_eq!(b.output_slices().get(0).unwrap(), slice("all", 0, 16));
}

#[test]
fn signing_keeps_the_slices_and_the_minor() {
    let fx = Fixture::new();
    let kp = KeyPair::from_seed(Seed::new([5; 32]));
    let slices = [slice("plan", 0, 16)];
    let bytes = write_bundle(&with_slices(&fx, &slices, CHECKPOINT)).unwrap();
    let signed = sign_bundle(&bytes, &kp.pk, |m| *kp.sk.sign(m, None)).unwrap();
    assert_eq!(minor(&signed), 4);
    let b = Bundle::parse(&signed).unwrap();
    assert!(b.signature().is_some());
    assert_eq!(b.output_slices().get(0).unwrap(), slices[0]);
    assert_eq!(b.checkpoint(), Some(CHECKPOINT));
}

#[test]
fn malformed_slices_are_refused() {
    let fx = Fixture::new();
    let long = "n".repeat(MAX_SLICE_NAME + 1);
    let names: Vec<String> = (0..=MAX_SLICES).map(|i| format!("s{i}")).collect();
    let many: Vec<OutputSlice<'_>> = names.iter().map(|n| slice(n, 0, 1)).collect();
    let cases: Vec<(Vec<OutputSlice<'_>>, &str)> = vec![
        (
            vec![OutputSlice {
                output: 1, // the model has one output
                ..slice("a", 0, 1)
            }],
            "output slice names no output",
        ),
        (
            vec![slice("a", 3, 3)],
            "output slice is empty or outside its output's last dimension",
        ),
        (
            vec![slice("a", 4, 2)],
            "output slice is empty or outside its output's last dimension",
        ),
        (
            vec![slice("a", 0, N as u64 + 1)],
            "output slice is empty or outside its output's last dimension",
        ),
        (
            vec![slice("", 0, 1)],
            "output slice name is empty or too long",
        ),
        (
            vec![slice(&long, 0, 1)],
            "output slice name is empty or too long",
        ),
        (
            vec![slice("a", 0, 1), slice("a", 1, 2)],
            "duplicate output slice name",
        ),
        (many, "too many output slices"),
    ];
    for (slices, want) in cases {
        let e = write_bundle(&with_slices(&fx, &slices, "")).unwrap_err();
        let WriteError::Invalid(e) = e else {
            panic!("{slices:?}: {e}");
        };
        assert!(e.to_string().contains(want), "{slices:?}: {e}");
    }
    // Exactly the bounds are accepted.
    let name = "n".repeat(MAX_SLICE_NAME);
    let ok = [slice(&name, 0, N as u64)];
    let checkpoint = "c".repeat(MAX_CHECKPOINT);
    write_bundle(&with_slices(&fx, &ok, &checkpoint)).unwrap();
    let too_long = "c".repeat(MAX_CHECKPOINT + 1);
    let e = write_bundle(&with_slices(&fx, &ok, &too_long)).unwrap_err();
    assert!(
        e.to_string().contains("checkpoint string is too long"),
        "{e}"
    );
}

#[test]
fn a_damaged_slice_record_is_refused_by_the_reader() {
    // Edit the stop of the only slice past the output's last dimension and reseal the CRCs: the reader's
    // validator, not only the writer, refuses it.
    let fx = Fixture::new();
    let bytes = write_bundle(&with_slices(&fx, &[slice("zz", 0, 16)], "")).unwrap();
    // The record is postcard `output(0) name(len 2, "zz") start(0) stop(16)`: find it by its bytes.
    let rec = [0u8, 2, b'z', b'z', 0, 16];
    let at = bytes
        .windows(rec.len())
        .position(|w| w == rec)
        .expect("slice record");
    let mut bad = bytes.clone();
    bad[at + 5] = 17;
    modelrt_core::bundle::writer::reseal(&mut bad);
    let e = Bundle::parse(&bad).unwrap_err();
    assert!(
        e.to_string()
            .contains("output slice is empty or outside its output's last dimension"),
        "{e}"
    );
}
