//! Fuzz target: `Bundle::parse` (header, body decoder, validator) on arbitrary bytes must return `Ok`
//! or a typed error, never panic, and every record of a bundle that validates must decode. Each input
//! is parsed twice: as is, and resealed (length and both CRCs fixed up, see
//! `modelrt_core_fuzz::reseal`) so that mutations reach the body decoder and the validator instead of
//! stopping at a checksum.
#![no_main]
// libFuzzer's entry point is an exported `no_mangle` symbol (the only unsafe here).
#![deny(unsafe_code)]

use libfuzzer_sys::fuzz_target;
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
            let t = t.expect("validated tensor record decodes");
            // Validation promised the byte length fits; the accessor must agree without overflow.
            assert!(t.byte_len() > 0);
        }
        for buf in body.buffers.iter() {
            let buf = buf.expect("validated buffer record decodes");
            assert_eq!(
                b.init_bytes(&buf).map(<[u8]>::len),
                buf.init.map(|(_, len)| len as usize)
            );
        }
    }
}

fuzz_target!(|data: &[u8]| {
    check(data);
    if let Some(sealed) = modelrt_core_fuzz::reseal(data) {
        check(&sealed);
    }
});
