//! Bundle format tests: round trip, determinism, and a typed error for every header failure.
mod common;

use common::Fixture;
use modelrt_core::bundle::writer::{write_bundle, WriteError};
use modelrt_core::bundle::{ArgRef, Bundle, BundleError, Step, FORMAT_MAJOR, HEADER_LEN};

fn valid() -> Vec<u8> {
    write_bundle(&Fixture::new().spec()).unwrap()
}

/// Recompute the checksums so a mutation reaches the checks after them.
fn reseal(mut b: Vec<u8>) -> Vec<u8> {
    modelrt_core::bundle::writer::reseal(&mut b);
    b
}

#[test]
fn round_trip_preserves_everything() {
    let fx = Fixture::new();
    let spec = fx.spec();
    let bytes = write_bundle(&spec).unwrap();
    let b = Bundle::parse(&bytes).unwrap();
    let body = b.body();
    assert_eq!(body.target, spec.target);
    assert_eq!(body.producer, spec.producer);
    assert_eq!(body.buffers.len(), spec.buffers.len());
    for (got, want) in body.buffers.iter().zip(&spec.buffers) {
        let got = got.unwrap();
        assert_eq!(
            (got.label, got.size, got.kind),
            (want.label, want.size, want.kind)
        );
        assert_eq!(b.init_bytes(&got), want.init);
        assert_eq!(got.arena_offset % 256, 0);
    }
    let kernels: Vec<_> = body.kernels.iter().map(Result::unwrap).collect();
    assert_eq!(kernels, spec.kernels);
    let run: Vec<_> = body.run.iter().map(Result::unwrap).collect();
    assert_eq!(run, spec.run);
    assert_eq!(body.init.get(0).unwrap(), spec.init[0]);
    assert_eq!(body.inputs.get(0).unwrap(), spec.inputs[0]);
    let r = body.reference.unwrap();
    assert_eq!(r.outputs.get(0).unwrap().data, fx.ref_out.as_slice());
    assert_eq!(b.input_index("x"), Some(0));
    assert_eq!(b.input_index("nope"), None);
    // The weights blob is 64-byte aligned in the file.
    assert_eq!(b.header().weights_offset % 64, 0);
}

#[test]
fn writing_is_deterministic() {
    assert_eq!(valid(), valid());
}

#[test]
fn header_failures_are_named() {
    let good = valid();
    assert!(matches!(
        Bundle::parse(&good[..10]),
        Err(BundleError::TooShort { len: 10 })
    ));
    assert!(matches!(
        Bundle::parse(&good[..3]),
        Err(BundleError::TooShort { len: 3 })
    ));
    assert!(matches!(
        Bundle::parse(b"PK\x03\x04 not a bundle at all, zip"),
        Err(BundleError::BadMagic)
    ));
    assert!(matches!(
        Bundle::parse(b""),
        Err(BundleError::TooShort { len: 0 })
    ));

    let truncated = &good[..good.len() - 1];
    let e = Bundle::parse(truncated).unwrap_err();
    assert!(matches!(e, BundleError::LengthMismatch { .. }));
    assert!(e.to_string().starts_with("truncated bundle"), "{e}");

    // An intact header (its CRC matches) of a later major is a version problem, not corruption.
    let mut major = good.clone();
    major[8] = 3;
    assert_eq!(
        Bundle::parse(&reseal(major)).unwrap_err(),
        BundleError::UnsupportedMajor {
            found: 3,
            supported: FORMAT_MAJOR
        }
    );

    let mut flipped = good.clone();
    let last = flipped.len() - 1;
    flipped[last] ^= 1;
    assert!(matches!(
        Bundle::parse(&flipped),
        Err(BundleError::ChecksumMismatch { .. })
    ));

    let mut schema = good.clone();
    schema[16] ^= 0xff;
    assert!(matches!(
        Bundle::parse(&reseal(schema)),
        Err(BundleError::SchemaMismatch { .. })
    ));
}

#[test]
fn writer_refuses_out_of_bounds_arguments() {
    let fx = Fixture::new();
    let mut spec = fx.spec();
    if let Step::Launch { args, .. } = &mut spec.run[1] {
        args[0] = ArgRef::Buffer {
            buffer: 4,
            offset: 8,
            size: 64,
        };
    }
    let e = write_bundle(&spec).unwrap_err();
    assert!(
        matches!(
            e,
            WriteError::Invalid(BundleError::Invalid {
                what: "launch argument lies outside its buffer",
                index: 1
            })
        ),
        "{e:?}"
    );
}

#[test]
fn writer_refuses_bad_cross_references() {
    let fx = Fixture::new();
    let mut spec = fx.spec();
    if let Step::Launch { kernel, .. } = &mut spec.run[1] {
        *kernel = 9;
    }
    assert!(write_bundle(&spec).is_err());

    let mut spec = fx.spec();
    spec.outputs[0].shape[1] = 17;
    assert!(matches!(
        write_bundle(&spec),
        Err(WriteError::Invalid(BundleError::Invalid {
            what: "output does not fit its buffer",
            ..
        }))
    ));

    let mut spec = fx.spec();
    spec.inputs.push(spec.inputs[0].clone());
    assert!(write_bundle(&spec).is_err());
}

#[test]
fn resealed_body_corruption_is_caught_by_validation() {
    // Point the first buffer's arena offset far outside the arena, then fix the CRC: the body checks
    // (not the checksum) must reject it.
    let good = valid();
    let b = Bundle::parse(&good).unwrap();
    let arena = b.body().arena_size;
    assert!(arena > 0);
    // Corrupt every byte of the body in turn until one yields a validation (not decode) error.
    let mut saw_invalid = false;
    for i in HEADER_LEN..HEADER_LEN + 200 {
        let mut m = good.clone();
        m[i] = m[i].wrapping_add(0x41);
        if let Err(BundleError::Invalid { .. }) = Bundle::parse(&reseal(m)) {
            saw_invalid = true;
        }
    }
    assert!(saw_invalid);
}
