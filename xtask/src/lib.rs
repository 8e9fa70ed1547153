//! `xtask` as a library: the host-side compile pipeline (ONNX or tinygrad pickle → exporter manifest →
//! bundle) and machine set-up, shared by the `cargo xtask` binary and the cross-crate tests.
pub mod bench;
pub mod bundle_build;
mod child_wait;
pub mod compile;
pub mod dist;
pub mod exporter;
pub mod footprint;
pub mod manifest;
pub mod setup;
pub mod venv;
pub mod zoo;
