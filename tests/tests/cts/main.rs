//! The device conformance suite (IREE's CTS, for modelrt): the same cases — elementwise, reductions, a convolution, a
//! Gemm, several outputs, state advanced with assign, bad inputs — run on every device that computes on this machine,
//! from one place. Each case is compiled for the device's target and its outputs are compared with an independent
//! reference: onnxruntime's outputs embedded by `compile --reference` for the ONNX cases, and the state case's
//! recurrence computed here. The device list is [`devices::computing`]; a backend that registers a computing device
//! gets every case.
//!
//! `cargo test -p modelrt-tests --test cts`.
mod cases;
mod devices;
mod run;
