//! `xtask` as a library: the host-side compile pipeline (ONNX, tinygrad script or compile3 pickle →
//! exporter manifest → bundle, with the pre-write check on the target's device model), benchmarks, the
//! zoo and conformance runs, the footprint check, CI steps and machine set-up, shared by the `cargo xtask`
//! binary and the cross-crate tests.
#![forbid(unsafe_code)]
pub mod apt_sources;
pub mod backports;
pub mod bench;
pub mod bundle_build;
pub mod capi;
pub mod capi_header;
mod child_wait;
pub mod compile;
pub mod compile_cli;
pub mod compile_multi;
pub mod conformance;
pub mod dist;
pub mod doc_section;
pub mod emu_check;
pub mod exporter;
pub mod exporter_python;
pub mod firmware;
pub mod footprint;
pub mod hexagon;
pub mod manifest;
pub mod pickle_table;
pub mod pipeline;
pub mod prereq;
pub mod setup;
pub mod signing;
pub mod threads;
pub mod venv;
pub mod wheel;
pub mod zoo;
