//! End to end on the Hexagon DSP (kernels under qemu-hexagon, the FastRPC runtime on its device model).
//!
//! One test binary (`cargo test -p modelrt-tests --test hexagon`); each module was once a binary of its own
//! (tests/README.md lists the groups).
mod hexagon_fastrpc;
mod hexagon_kernels;
mod hexagon_models;
mod hexagon_wide_kernels;
