//! Shared pieces of the RDNA3 interpreter tests (`rdna3_*.rs`).
#![allow(dead_code)]
pub mod asm;
pub mod check;
pub mod elf;
pub mod flat;
pub mod objdump;
pub mod runner;
