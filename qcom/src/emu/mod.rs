//! Device models for tests and `--kgsl emu` (feature `emu`): [`kgsl`] (the KGSL/CP model, which runs dispatches
//! with the IR3 interpreter of the `modelrt-ir3` crate); [`hexagon`] (Hexagon DSP kernels executed under qemu-hexagon);
//! [`fastrpc`] (a FastRPC/ION device model that validates the DSP runtime's calls and runs launches via an executor).
pub mod fastrpc;
pub mod hexagon;
pub mod kgsl;
