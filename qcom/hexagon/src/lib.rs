//! `modelrt-hexagon`: modelrt's Qualcomm Hexagon cDSP side. **Nothing here has run on a real DSP.**
//!
//! - [`fastrpc`]: the FastRPC runtime (std, Linux ioctls in [`fastrpc::real`]): wire layer, session bring-up and
//!   listener, the per-launch engine and the one-invoke model run, `modelrt dsp selftest`'s probes.
//! - [`device`]: [`device::HexagonDevice`], the HAL device (`modelrt_hal::device::Device`) a hexagon bundle runs on
//!   through `modelrt_core::Executor`: one ION arena, the bundle's model library, one FastRPC invoke per step, over
//!   the device nodes or the FastRPC model (`--device dsp` / `dsp-emu`).
//! - [`emu`] (feature `emu`, default on): [`emu::device`], a FastRPC/ION device model behind the same trait, and
//!   [`emu::harness`], which builds `dsp/qemu_harness.c` and runs DSP kernels under qemu-hexagon.
//! - [`platform`] and [`bundle`] (feature `platform`, default on): the `dsp`/`dsp-emu` devices the platform registry
//!   lists, and the host-side bundle tools (per-launch ops, the qemu execution model, the selftest bundle, the offline
//!   library check).
//! - `dsp/*.c`: the DSP-side C sources: the helper library every kernel links (`dsp_helpers.c`), the model
//!   library's schedule runner (`schedule_runner.c`, linked by the exporter) and the qemu harness.
//!
//! Facts: docs/hw/fastrpc.md, docs/hw/hexagon-dsp.md. Unsafe code is denied except in the modules that cross the
//! hardware boundary (the real device's ioctls and mappings, the device trait's contract and its model).
#![deny(unsafe_code)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod device;
pub mod fastrpc;

#[cfg(feature = "emu")]
pub mod emu;

#[cfg(feature = "platform")]
pub mod bundle;
#[cfg(feature = "platform")]
pub mod platform;
