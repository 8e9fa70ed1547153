//! Fuzz target: `Bundle::parse` on arbitrary bytes must return `Ok` or a typed error, never panic,
//! and every record of a bundle that validates must decode.
#![no_main]

use libfuzzer_sys::fuzz_target;
use modelrt_core::Bundle;

fuzz_target!(|data: &[u8]| {
    if let Ok(b) = Bundle::parse(data) {
        let body = b.body();
        for k in body.kernels.iter() {
            assert!(k.is_ok());
        }
        for s in body.run.iter().chain(body.init.iter()) {
            assert!(s.is_ok());
        }
    }
});
