//! The in-crate CRC-32 agrees with an independent implementation (`crc32fast`) on arbitrary input;
//! the published check values are pinned in `core/src/crc32.rs`'s unit tests.
use modelrt_core::crc32::crc32;
use proptest::prelude::*;

proptest! {
    #[test]
    fn matches_crc32fast(bytes in prop::collection::vec(any::<u8>(), 0..4096)) {
        prop_assert_eq!(crc32(&bytes), crc32fast::hash(&bytes));
    }
}

#[test]
fn matches_crc32fast_on_the_demo_bundle() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../targets/assets/demo-x86_64.mrt"
    );
    let bytes = std::fs::read(path).unwrap();
    assert_eq!(crc32(&bytes), crc32fast::hash(&bytes));
}
