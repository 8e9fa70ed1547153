//! Shared pieces of the interpreter-only RDNA3 tests (`rdna3_ops.rs`, `rdna3_dispatch.rs`); the
//! model-level tests in `tests/tests/rdna3_*.rs` include `flat.rs` from here.
#![allow(dead_code)]
pub mod asm;
pub mod flat;
