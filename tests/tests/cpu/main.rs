//! End to end on the host CPU (x86-64 natively, aarch64 under qemu-aarch64): compile, run, compare with onnxruntime.
//!
//! One test binary (`cargo test -p modelrt-tests --test cpu`); each module was once a binary of its own
//! (tests/README.md lists the groups).
mod aarch64_qemu;
mod beam_cache;
mod compile_correctness;
mod cpu_layout;
mod e2e_cpu;
mod index_inputs;
mod modeld_pipeline;
mod multi_cpu;
mod readme_pickle;
mod rnn_ops;
mod winograd_aarch64;
