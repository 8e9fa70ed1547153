//! The extreme-value validation tests of `core/tests/validate_extremes.rs`, compiled again in this
//! crate's release profile (no overflow checks, as in a shipped build) when `run.sh` runs
//! `cargo test --release`, so a wrapped product that slips past a check fails here too.
#[path = "../../tests/validate_extremes.rs"]
mod validate_extremes;
