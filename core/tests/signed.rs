//! Signed bundles (format 2.2): signing and verifying round-trip, every single-byte change and a
//! foreign or missing signature is refused by `sign::verify`, unsigned bundles are still written as
//! 2.1 byte for byte, and the signature block parser never panics on arbitrary bytes.
mod common;

use common::Fixture;
use ed25519_compact::{KeyPair, Seed};
use modelrt_core::bundle::signature::{read_block, signature_block, SIGNATURE_BLOCK_LEN};
use modelrt_core::bundle::writer::{reseal, sign_bundle, write_bundle};
use modelrt_core::bundle::{Bundle, BundleError, HEADER_LEN, UNSIGNED_MINOR};
use modelrt_core::sign::{verify, SignError};
use proptest::prelude::*;

fn keypair(seed: u8) -> KeyPair {
    KeyPair::from_seed(Seed::new([seed; 32]))
}

fn public(kp: &KeyPair) -> [u8; 32] {
    *kp.pk
}

fn sign_with(bytes: &[u8], kp: &KeyPair) -> Vec<u8> {
    sign_bundle(bytes, &public(kp), |m| *kp.sk.sign(m, None)).unwrap()
}

fn unsigned() -> Vec<u8> {
    write_bundle(&Fixture::new().spec()).unwrap()
}

#[test]
fn unsigned_bundles_are_2_1_files() {
    let b = unsigned();
    assert_eq!(u16::from_le_bytes([b[10], b[11]]), UNSIGNED_MINOR);
    let parsed = Bundle::parse(&b).unwrap();
    assert_eq!(parsed.signature(), None);
    assert_eq!(verify(&b, &[public(&keypair(1))]), Err(SignError::Unsigned));
}

#[test]
fn a_signed_bundle_verifies_and_parses() {
    let kp = keypair(1);
    let plain = unsigned();
    let signed = sign_with(&plain, &kp);
    assert_eq!(signed.len(), plain.len() + SIGNATURE_BLOCK_LEN);
    assert_eq!(u16::from_le_bytes([signed[10], signed[11]]), 2);
    assert_eq!(verify(&signed, &[public(&kp)]), Ok(public(&kp)));
    let b = Bundle::parse(&signed).unwrap();
    assert_eq!(b.signature().unwrap().key, &public(&kp));
    assert_eq!(b.weights(), Bundle::parse(&plain).unwrap().weights());
    assert_eq!(
        signature_block(&signed).unwrap().unwrap().offset,
        plain.len()
    );
    // Re-signing with another key replaces the block.
    let other = keypair(2);
    let resigned = sign_with(&signed, &other);
    assert_eq!(resigned.len(), signed.len());
    assert_eq!(verify(&resigned, &[public(&other)]), Ok(public(&other)));
    assert_eq!(
        verify(&resigned, &[public(&kp)]),
        Err(SignError::UntrustedKey {
            key: public(&other)
        })
    );
}

#[test]
fn a_bundle_signed_by_another_key_is_refused() {
    let signed = sign_with(&unsigned(), &keypair(3));
    assert_eq!(
        verify(&signed, &[public(&keypair(1)), public(&keypair(2))]),
        Err(SignError::UntrustedKey {
            key: public(&keypair(3))
        })
    );
    assert_eq!(
        verify(&signed, &[]),
        Err(SignError::UntrustedKey {
            key: public(&keypair(3))
        })
    );
}

/// Every byte of a signed bundle, flipped (and, to get past the CRCs as an attacker would, resealed),
/// is refused by the trust check: a bad signature, or for the key bytes an untrusted key. The CRC
/// fields are the only bytes not signed; a change there is a checksum mismatch for the parser.
#[test]
fn every_single_byte_change_is_refused() {
    let kp = keypair(1);
    let signed = sign_with(&unsigned(), &kp);
    let key = public(&kp);
    let block = signed.len() - SIGNATURE_BLOCK_LEN;
    let body_start = HEADER_LEN;
    let weights_at = u64::from_le_bytes(signed[32..40].try_into().unwrap()) as usize;
    // One position in each region, then every byte.
    for at in [
        9,
        20,
        body_start + 3,
        weights_at + 1,
        block + 2,
        block + 20,
        block + 50,
        block + 110,
    ] {
        assert!(at < signed.len());
        let mut t = signed.clone();
        t[at] ^= 0x01;
        assert!(verify(&t, &[key]).is_err(), "flip at {at} verified");
    }
    for at in 0..signed.len() {
        for resealed in [false, true] {
            let mut t = signed.clone();
            t[at] ^= 0x80;
            if resealed {
                reseal(&mut t);
            }
            let crc_field = (48..52).contains(&at) || (60..64).contains(&at);
            match verify(&t, &[key]) {
                Ok(_) => {
                    assert!(
                        crc_field || resealed && (24..32).contains(&at),
                        "flip at {at} verified"
                    );
                    assert!(
                        Bundle::parse(&t).is_err() || t == signed,
                        "flip at {at} parsed"
                    );
                }
                Err(SignError::BadSignature { .. })
                | Err(SignError::UntrustedKey { .. })
                | Err(SignError::Unsigned)
                | Err(SignError::Block(_)) => {}
            }
        }
    }
}

#[test]
fn a_stripped_signature_reads_as_unsigned() {
    let kp = keypair(1);
    let signed = sign_with(&unsigned(), &kp);
    let mut t = signed[..signed.len() - SIGNATURE_BLOCK_LEN].to_vec();
    reseal(&mut t);
    assert_eq!(verify(&t, &[public(&kp)]), Err(SignError::Unsigned));
}

#[test]
fn a_2_2_file_with_other_bytes_after_the_weights_is_refused() {
    let signed = sign_with(&unsigned(), &keypair(1));
    let mut t = signed.clone();
    t.push(0);
    reseal(&mut t);
    assert_eq!(
        Bundle::parse(&t).err(),
        Some(BundleError::Layout(
            "bytes after the weights blob are not a signature block"
        ))
    );
    let mut t = signed;
    let n = t.len();
    t[n - SIGNATURE_BLOCK_LEN] ^= 1; // the block's magic
    reseal(&mut t);
    assert!(Bundle::parse(&t).is_err());
}

proptest! {
    /// The block reader on arbitrary bytes and on a signed bundle whose block is replaced by
    /// arbitrary bytes: an answer, never a panic, and a block it reports lies inside the input.
    #[test]
    fn the_block_parser_never_panics(tail in proptest::collection::vec(any::<u8>(), 0..300), keep in 0usize..4) {
        if let Ok(Some(b)) = read_block(&tail) {
            prop_assert_eq!(b.offset + SIGNATURE_BLOCK_LEN, tail.len());
        }
        let signed = sign_with(&unsigned(), &keypair(1));
        let cut = signed.len() - SIGNATURE_BLOCK_LEN + keep * 8;
        let mut t = signed[..cut].to_vec();
        t.extend_from_slice(&tail);
        reseal(&mut t);
        let _ = signature_block(&t);
        let _ = Bundle::parse(&t);
        let r = verify(&t, &[public(&keypair(1))]);
        if r.is_ok() {
            prop_assert_eq!(&t, &signed);
        }
    }
}
