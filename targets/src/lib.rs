//! `modelrt-targets`: the platform assembly — the [`registry`] of every device family's crate (host CPU,
//! Adreno over KGSL or its device model, AMD over USB or the bridge emulator, Hexagon over FastRPC or
//! qemu-hexagon), loading through it ([`runner`]), offline kernel checks, `.npy` I/O and the library side
//! of the `modelrt` binary ([`cli`]; `src/main.rs` only calls [`cli::app::main`]).
// No unsafe code: the mapping and the loader live in `modelrt-platform` and `modelrt-cpu`
// (tests/tests/repo/soundness.rs).
#![forbid(unsafe_code)]
// The command-line modules name this crate by its name, as they did when they were the binary's.
extern crate self as modelrt_targets;

pub mod cli;
pub mod disasm;
pub mod inspect;
pub mod npy;
pub mod registry;
pub mod replace;
pub mod runner;

/// The bundle file, mapped or read (`modelrt_platform::bundle_file`).
pub use modelrt_platform::bundle_file;
/// Per-frame inputs (`modelrt_platform::frame`).
pub use modelrt_platform::frame;
/// Ctrl-C as a flag polled between steps (`modelrt_platform::interrupt`).
pub use modelrt_platform::interrupt;
