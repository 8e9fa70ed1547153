//! Device models for tests and `--kgsl emu` (feature `emu`).
pub mod kgsl;
