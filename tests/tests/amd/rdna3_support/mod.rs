//! Shared pieces of the model-level RDNA3 interpreter tests (`rdna3_models.rs`, `rdna3_zoo.rs`) and
//! `examples/rdna3_bench.rs`; the flat GPU memory is the interpreter crate's test one.
#![allow(dead_code)]
pub mod check;
pub mod elf;
#[path = "../../../../usbgpu/rdna3/tests/rdna3_support/flat.rs"]
pub mod flat;
pub mod objdump;
pub mod runner;
