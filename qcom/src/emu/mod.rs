//! Device models for tests and `--kgsl emu` (feature `emu`): [`kgsl`] (the KGSL/CP model) and [`ir3`] (the
//! shader interpreter it runs dispatches with); [`hexagon`] (Hexagon DSP kernels executed under qemu-hexagon);
//! [`fastrpc`] (a FastRPC/ION device model that validates the DSP runtime's calls and runs launches via an executor).
#[allow(unsafe_code)]
pub mod fastrpc;
pub mod hexagon;
pub mod ir3;
pub mod kgsl;
