//! `xtask` as a library: the host-side compile pipeline (ONNX or tinygrad pickle → exporter manifest →
//! bundle) and machine set-up, shared by the `cargo xtask` binary and the cross-crate tests.
pub mod bundle_build;
pub mod compile;
pub mod exporter;
pub mod manifest;
pub mod setup;
pub mod venv;
