//! Device models for tests and `--device dsp-emu` (feature `emu`): [`device`], a FastRPC/ION device model that
//! validates the runtime's calls and runs launches through an executor; [`harness`], the host side of modelrt's
//! qemu-hexagon harness (`dsp/qemu_harness.c`), which executes DSP kernels for real under qemu-hexagon.
pub mod device;
pub mod harness;
