//! Format 2.0's header CRC: a damaged header reads as corruption (not as a truncated file or a newer
//! version), an intact header of a later major still reads as a version problem, and format 1.0
//! bundles (no header CRC) still load and run.
mod common;

use common::{Fixture, MockDevice, N};
use modelrt_core::bundle::writer::write_bundle;
use modelrt_core::bundle::{Bundle, BundleError, FORMAT_MAJOR, HEADER_LEN, LEGACY_MAJOR};
use modelrt_core::verify::compare;
use modelrt_core::Executor;
use modelrt_hal::target::DType;

/// A format 1.0 bundle of `common::Fixture` written by the format 1.0 writer (before the header CRC).
const FORMAT_1_0: &[u8] = include_bytes!("fixtures/format-1.0.mrt");

fn valid() -> Vec<u8> {
    write_bundle(&Fixture::new().spec()).unwrap()
}

fn corrupt_at(offset: usize, bit: u8) -> BundleError {
    let mut b = valid();
    b[offset] ^= bit;
    Bundle::parse(&b).unwrap_err()
}

#[test]
fn flipped_length_field_is_corruption_not_truncation() {
    // Bytes 24..32: total file length. Without a header CRC this read as "truncated bundle".
    for (offset, bit) in [(24, 0x01), (25, 0x40), (31, 0x80)] {
        let e = corrupt_at(offset, bit);
        assert_eq!(e, BundleError::HeaderCorrupt, "byte {offset}");
        assert!(
            e.to_string()
                .starts_with("bundle header is corrupt (checksum mismatch)"),
            "{e}"
        );
    }
}

#[test]
fn flipped_version_field_is_corruption_not_a_newer_version() {
    // Bytes 8..12: major, minor. Without a header CRC 0x5a02 read as "format version 23042.x".
    for (offset, bit) in [(8, 0x01), (9, 0x5a), (10, 0x01)] {
        assert_eq!(
            corrupt_at(offset, bit),
            BundleError::HeaderCorrupt,
            "byte {offset}"
        );
    }
}

#[test]
fn every_header_byte_is_covered() {
    // Any single-bit flip anywhere in the header is reported as header corruption, except in the
    // magic (then it is not a bundle at all).
    for offset in 8..HEADER_LEN {
        for bit in 0..8 {
            assert_eq!(
                corrupt_at(offset, 1 << bit),
                BundleError::HeaderCorrupt,
                "byte {offset} bit {bit}"
            );
        }
    }
    assert_eq!(corrupt_at(0, 1), BundleError::BadMagic);
}

#[test]
fn a_longer_intact_header_of_a_later_major_is_a_version_error() {
    // A later major may grow the header (evolution rule 1); its last 4 bytes are still the CRC-32 of
    // the bytes before them, so this reader can tell it from corruption.
    let mut b = valid();
    let len = 72usize;
    b.splice(HEADER_LEN..HEADER_LEN, [0u8; 8]);
    b[8..10].copy_from_slice(&3u16.to_le_bytes());
    b[12..16].copy_from_slice(&(len as u32).to_le_bytes());
    b[60..64].fill(0);
    let crc = crc32fast::hash(&b[..len - 4]);
    b[len - 4..len].copy_from_slice(&crc.to_le_bytes());
    assert_eq!(
        Bundle::parse(&b).unwrap_err(),
        BundleError::UnsupportedMajor {
            found: 3,
            supported: FORMAT_MAJOR
        }
    );
}

#[test]
fn header_crc_is_the_ieee_crc_of_the_bytes_before_it() {
    // Checked with an independent CRC-32 (crc32fast), not the one under test.
    let b = valid();
    assert_eq!(u32::from_le_bytes(b[12..16].try_into().unwrap()), 64);
    let stored = u32::from_le_bytes(b[60..64].try_into().unwrap());
    assert_eq!(stored, crc32fast::hash(&b[..60]));
    let body = u32::from_le_bytes(b[48..52].try_into().unwrap());
    assert_eq!(body, crc32fast::hash(&b[64..]));
}

#[test]
fn format_1_0_bundles_still_load_and_run() {
    assert_eq!(u16::from_le_bytes([FORMAT_1_0[8], FORMAT_1_0[9]]), 1);
    assert_eq!(
        u32::from_le_bytes(FORMAT_1_0[12..16].try_into().unwrap()),
        56
    );
    let bundle = Bundle::parse(FORMAT_1_0).unwrap();
    assert_eq!(bundle.header().major, LEGACY_MAJOR);
    let fx = Fixture::new();
    // Same body as a bundle written today, only the header differs.
    let today = valid();
    let now = Bundle::parse(&today).unwrap();
    assert_eq!(bundle.weights(), now.weights());
    assert_eq!(bundle.body().arena_size, now.body().arena_size);
    let mut ex = Executor::load(bundle, MockDevice::default()).unwrap();
    let mut out = vec![0u8; N * 4];
    ex.run(&[&fx.ref_in], &mut [&mut out]).unwrap();
    let c = compare(DType::F32, &out, &fx.ref_out, 1e-6, 1e-6);
    assert!(c.ok(), "{c:?}");
}

#[test]
fn format_1_0_damage_is_still_caught() {
    // Format 1.0 has no header CRC: damage there reads as before (the body CRC still catches the rest).
    let mut b = FORMAT_1_0.to_vec();
    let last = b.len() - 1;
    b[last] ^= 1;
    assert!(matches!(
        Bundle::parse(&b),
        Err(BundleError::ChecksumMismatch { .. })
    ));
    let mut b = FORMAT_1_0.to_vec();
    b[12] = 57; // header length: no longer a format 1.0 header, and no header CRC matches
    assert_eq!(Bundle::parse(&b).unwrap_err(), BundleError::HeaderCorrupt);
}
