//! `modelrt-targets`: the host CPU backend ([`cpu`]), the platform assembly of every backend (the device a
//! bundle's target needs: host CPU, Adreno over KGSL or its device model, AMD over USB or the bridge
//! emulator, Hexagon over FastRPC or qemu-hexagon; see [`runner`]), offline kernel checks, `.npy` I/O and the
//! library side of the `modelrt` binary (`src/main.rs`, `src/cli/`).
// Unsafe code only in the modules marked `#[allow(unsafe_code)]` (hardware, FFI, loader), each listed in
// tests/tests/repo/soundness.rs; `unsafe_op_in_unsafe_fn` and `clippy::undocumented_unsafe_blocks` come from
// `[workspace.lints]`.
#![deny(unsafe_code)]
pub mod amd_device;
#[allow(unsafe_code)]
pub mod bundle_file;
pub mod cpu;
pub mod disasm;
pub mod dsp;
pub mod frame;
pub mod inspect;
pub mod npy;
pub mod qcom_device;
pub mod runner;
