//! How fast a trust store checks a bundle at load: `modelrt_core::sign::verify` (Ed25519 over every
//! byte, through SHA-512) on files of 1, 16 and 64 MiB, beside the CRC-32 the parser computes over
//! the same bytes anyway; prints MB/s (docs/bench.md, "Signature verification").
//! `cargo run --release -p modelrt-core --example verify_speed`
use std::time::Instant;

use ed25519_compact::{KeyPair, Seed};
use modelrt_core::bundle::signature::{signed_message, SIGNATURE_BLOCK_LEN, SIGNATURE_MAGIC};
use modelrt_core::bundle::MAGIC;

/// A `len`-byte file that `verify` accepts: the bundle magic, pseudo-random bytes and a signature
/// block signed by `kp` (verification reads no other structure; the parser would).
fn signed_file(len: usize, kp: &KeyPair) -> Vec<u8> {
    let mut b = vec![0u8; len];
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for c in b.chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        c.copy_from_slice(&x.to_le_bytes()[..c.len()]);
    }
    b[..8].copy_from_slice(&MAGIC);
    let at = len - SIGNATURE_BLOCK_LEN;
    b[at..].fill(0);
    b[at..at + 8].copy_from_slice(&SIGNATURE_MAGIC);
    b[at + 8] = 1;
    b[at + 12..at + 44].copy_from_slice(&kp.pk[..]);
    let sig = kp.sk.sign(signed_message(&b, at).concat(), None);
    b[at + 44..at + 108].copy_from_slice(&sig[..]);
    b
}

/// Best of `reps` runs of `f`, in seconds.
fn best(reps: usize, mut f: impl FnMut()) -> f64 {
    (0..reps)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() {
    let kp = KeyPair::from_seed(Seed::new([1; 32]));
    let trusted = [*kp.pk];
    println!("| file | verify (Ed25519, SHA-512) | CRC-32 (parser) |");
    println!("|---:|---:|---:|");
    for mib in [1usize, 16, 64] {
        let b = signed_file(mib << 20, &kp);
        assert_eq!(modelrt_core::sign::verify(&b, &trusted), Ok(trusted[0]));
        let v = best(5, || {
            std::hint::black_box(modelrt_core::sign::verify(&b, &trusted)).unwrap();
        });
        let c = best(5, || {
            std::hint::black_box(modelrt_core::crc32::crc32(&b));
        });
        let mbs = |s: f64| b.len() as f64 / s / 1e6;
        println!(
            "| {mib} MiB | {:.1} ms ({:.0} MB/s) | {:.1} ms ({:.0} MB/s) |",
            v * 1e3,
            mbs(v),
            c * 1e3,
            mbs(c)
        );
    }
}
