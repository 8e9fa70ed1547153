//! `modelrt-platform`: the interface every backend plugs into, and nothing device-specific.
//!
//! A device family's crate (`modelrt-cpu`, `modelrt-qcom`, `modelrt-hexagon`, the AMD driver crate, the
//! `modelrt-null` skeleton) describes each device it provides with a [`DeviceSpec`] — its `--device` name,
//! the target family it runs, whether it is a software model, and the function that opens it and loads a
//! bundle. The platform assembly (`modelrt-targets`, `targets/src/registry.rs`) lists those specs, one line
//! per device, in a [`Registry`], which resolves a [`DeviceChoice`] against a bundle's target and loads it.
//! No code here names a backend: adding one touches its own crate and that list
//! (docs/architecture.md, "Adding a backend").
//!
//! - [`device`]: [`DeviceSpec`], [`DeviceChoice`], [`OpenRequest`];
//! - [`registry`]: resolution (`auto`, family checks, the emulated alternative named in errors) and loading;
//! - [`options`]: [`LoadOptions`] and the typed per-family [`DeviceOptions`];
//! - [`loaded`]: the device-independent [`LoadedModel`] and what it reports;
//! - [`multi`]: [`MultiModel`](multi::MultiModel), a multi-device bundle on one device per role;
//! - [`executor`]: [`Loaded`], the [`LoadedModel`] over `modelrt_core::Executor` that every backend returns;
//! - [`foreign_cpu`]: the hint for a CPU bundle of another architecture;
//! - [`frame`]: per-frame inputs that may be read in place;
//! - [`bundle_file`]: the bundle file, mapped read-only or read;
//! - [`trust`]: the trust store of signing keys checked before a bundle is opened;
//! - [`interrupt`]: Ctrl-C as a flag long-running commands poll between steps.
// Unsafe code only in `bundle_file` (the mapping) and `interrupt` (the SIGINT handler), listed in tests/tests/repo/soundness.rs.
#![deny(unsafe_code)]
#[allow(unsafe_code)]
pub mod bundle_file;
pub mod device;
pub mod executor;
pub mod foreign_cpu;
pub mod frame;
#[allow(unsafe_code)]
pub mod interrupt;
pub mod loaded;
pub mod multi;
pub mod options;
pub mod registry;
pub mod trust;

pub use device::{DeviceChoice, DeviceSpec, OpenFn, OpenRequest};
pub use executor::Loaded;
pub use loaded::{LoadedModel, MemoryReport, PhaseCounts, UsbCounts, WeightBinding};
pub use multi::{CopyCounts, CrossCopy, FrameReport, RoleFrame};
pub use options::{Caller, DeviceOptions, LoadOptions};
pub use registry::Registry;
pub use trust::TrustStore;
