//! Device models for tests and `--kgsl emu` (feature `emu`): [`kgsl`] (the KGSL/CP model, which runs dispatches
//! with the IR3 interpreter of the `modelrt-ir3` crate).
pub mod kgsl;
