//! Fuzz target: `Bundle::parse` on arbitrary bytes must return `Ok` or a typed error, never panic,
//! and every record of a bundle that validates must decode. Each input is parsed twice: as is, and
//! "resealed" (length and CRC fixed up) so that mutations reach the body decoder and the validator
//! instead of stopping at the checksum.
#![no_main]

use libfuzzer_sys::fuzz_target;
use modelrt_core::bundle::HEADER_LEN;
use modelrt_core::Bundle;

fn check(data: &[u8]) {
    if let Ok(b) = Bundle::parse(data) {
        let body = b.body();
        for k in body.kernels.iter() {
            assert!(k.is_ok());
        }
        for s in body.run.iter().chain(body.init.iter()) {
            assert!(s.is_ok());
        }
        for t in body.inputs.iter().chain(body.outputs.iter()) {
            assert!(t.is_ok());
        }
    }
}

fuzz_target!(|data: &[u8]| {
    check(data);
    if data.len() >= HEADER_LEN {
        let mut sealed = data.to_vec();
        let len = sealed.len() as u64;
        sealed[24..32].copy_from_slice(&len.to_le_bytes());
        let crc = crc32fast::hash(&sealed[HEADER_LEN..]);
        sealed[48..52].copy_from_slice(&crc.to_le_bytes());
        check(&sealed);
    }
});
