//! Device models for tests and `--kgsl emu` (feature `emu`): [`kgsl`] (the KGSL/CP model) and [`ir3`] (the
//! shader interpreter it runs dispatches with).
pub mod ir3;
pub mod kgsl;
