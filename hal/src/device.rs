//! Device memory, kernel loading and the HCQ-shaped command queue.
//!
//! The executor in `modelrt-core` drives a [`Device`] in two phases:
//! 1. **load** (may allocate): [`Device::check_target`], [`Device::alloc_arena`], [`Device::upload`] of
//!    the weights, [`Device::load_kernel`] per kernel, then one [`Queue`] per phase recorded with
//!    `wait → timestamp → exec/copy… → timestamp → signal` — this is where a backend does its expensive
//!    work once (function-pointer table on CPU, a PM4 stream on Adreno, PM4/SDMA rings on AMD);
//! 2. **run** (must not allocate): [`Device::upload`] inputs, [`Device::submit`] the recorded queue,
//!    [`Device::download`] outputs.
//!
//! All addresses are byte offsets into the device's single arena, whose size the bundle fixes at
//! compile time. A backend may map the arena wherever it likes.
use crate::target::{KernelMeta, ParamDesc, Target};

/// Handle of a loaded kernel, returned by [`Device::load_kernel`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct KernelId(pub u32);

/// A launch argument resolved against the arena.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Arg {
    /// A buffer view: `size` bytes at arena byte `offset`.
    Buffer { offset: u64, size: u64 },
    /// An int32 value (tinygrad `vars`); for [`crate::target::ParamKind::CoreId`] the backend
    /// substitutes the core id and ignores this value.
    Int(i32),
}

/// Everything a backend needs to load one kernel. Borrowed from the bundle.
#[derive(Clone, Debug)]
pub struct KernelImage<'a> {
    /// Display name (tinygrad's `function_name`).
    pub name: &'a str,
    /// Entry symbol inside `binary`.
    pub entry: &'a str,
    /// The compiled kernel (ELF object for CPU/AMD, ISA for IR3).
    pub binary: &'a [u8],
    /// Parameter list in signature order.
    pub params: &'a [ParamDesc],
    /// Target-specific launch metadata.
    pub meta: &'a KernelMeta<'a>,
}

/// Timing of one [`Device::submit`], in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SubmitTiming {
    /// Host time spent handing the work to the device (patching + doorbell/ioctl, or the whole CPU
    /// call loop setup).
    pub enqueue_ns: u64,
    /// Time between the queue's first and last timestamp, as the device measured it.
    pub device_ns: u64,
}

/// An HCQ-shaped command queue that is recorded once and replayed by [`Device::submit`].
///
/// Signals are a single monotonically increasing timeline per queue: `signal(v)` sets it to `v` when
/// everything recorded before has completed; `wait(v)` blocks the queue until it is at least `v`.
pub trait Queue {
    type Error;
    /// Block the queue until the timeline reaches `value` (set by a previous submission).
    fn wait(&mut self, value: u64) -> Result<(), Self::Error>;
    /// Record a device timestamp; the first and last ones bound [`SubmitTiming::device_ns`].
    fn timestamp(&mut self) -> Result<(), Self::Error>;
    /// Launch `kernel` with `args` over `global` work groups of `local` items.
    fn exec(
        &mut self,
        kernel: KernelId,
        args: &[Arg],
        global: [u32; 3],
        local: [u32; 3],
    ) -> Result<(), Self::Error>;
    /// Launch `kernel` over `global` work groups of `local` items of which only the first `threads[d]`
    /// items of each dimension run (the last group of a dimension is partial; the bundle checked
    /// `(global[d]-1)*local[d] < threads[d] <= global[d]*local[d]`). `Ok(false)`: this backend cannot
    /// run partial groups (the default), and the caller refuses the bundle.
    fn exec_threads(
        &mut self,
        kernel: KernelId,
        args: &[Arg],
        global: [u32; 3],
        local: [u32; 3],
        threads: [u32; 3],
    ) -> Result<bool, Self::Error> {
        let _ = (kernel, args, global, local, threads);
        Ok(false)
    }
    /// Copy `len` bytes inside the arena.
    fn copy(&mut self, dst: u64, src: u64, len: u64) -> Result<(), Self::Error>;
    /// Set the timeline to `value` once all previous commands have completed.
    fn signal(&mut self, value: u64) -> Result<(), Self::Error>;
}

/// A compute device with one arena of memory.
pub trait Device {
    /// Backend error; `Display` is shown to users as one line.
    type Error: core::fmt::Debug + core::fmt::Display;
    /// A recorded command queue.
    type Queue: Queue<Error = Self::Error>;

    /// Refuse a bundle compiled for something this device cannot run (wrong family, missing CPU
    /// features, other chip).
    fn check_target(&self, target: &Target<'_>) -> Result<(), Self::Error>;
    /// Allocate the arena (called once, before anything else that touches memory).
    fn alloc_arena(&mut self, bytes: u64) -> Result<(), Self::Error>;
    /// Host → arena copy.
    fn upload(&mut self, offset: u64, data: &[u8]) -> Result<(), Self::Error>;
    /// Arena → host copy.
    fn download(&mut self, offset: u64, out: &mut [u8]) -> Result<(), Self::Error>;
    /// Load (relocate, upload, …) one kernel.
    fn load_kernel(&mut self, kernel: &KernelImage<'_>) -> Result<KernelId, Self::Error>;
    /// Create an empty queue to record into.
    fn create_queue(&mut self) -> Result<Self::Queue, Self::Error>;
    /// Run a recorded queue to completion (bounded by the backend's timeout). Must not allocate.
    fn submit(&mut self, queue: &mut Self::Queue) -> Result<SubmitTiming, Self::Error>;
    /// A monotonic host clock in nanoseconds (0 when the platform has none).
    fn now_ns(&self) -> u64;
}
