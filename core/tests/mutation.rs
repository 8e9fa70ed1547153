//! Property test: no byte string makes `Bundle::parse` (or loading what parses) panic. Mutations are
//! applied to a valid bundle and resealed with correct checksums so they reach the body decoder and the
//! validator, not just the checksum.
mod common;

use common::{Fixture, MockDevice};
use modelrt_core::bundle::writer::{reseal, write_bundle};
use modelrt_core::bundle::Bundle;
use modelrt_core::Executor;
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn mutated_bundles_never_panic(
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        cut in any::<Option<prop::sample::Index>>(),
        seal in any::<bool>(),
    ) {
        let mut b = write_bundle(&Fixture::new().spec()).unwrap();
        for (i, v) in &edits {
            let at = i.index(b.len());
            b[at] = *v;
        }
        if let Some(c) = cut {
            b.truncate(c.index(b.len()));
        }
        if seal {
            reseal(&mut b);
        }
        if let Ok(bundle) = Bundle::parse(&b) {
            // Whatever validates must also load and run without panicking.
            if let Ok(mut ex) = Executor::load(bundle, MockDevice::default()) {
                let ins: Vec<Vec<u8>> = (0..ex.bundle().body().inputs.len())
                    .map(|i| vec![0u8; ex.input_desc(i).unwrap().byte_len() as usize])
                    .collect();
                let mut outs: Vec<Vec<u8>> = (0..ex.bundle().body().outputs.len())
                    .map(|i| vec![0u8; ex.output_desc(i).unwrap().byte_len() as usize])
                    .collect();
                let in_refs: Vec<&[u8]> = ins.iter().map(|v| v.as_slice()).collect();
                let mut out_refs: Vec<&mut [u8]> = outs.iter_mut().map(|v| v.as_mut_slice()).collect();
                let _ = ex.run(&in_refs, &mut out_refs);
            }
        }
    }
}
