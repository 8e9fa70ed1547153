//! A dispatch's inputs and report: [`Launch`] (constants, grid, id registers — Mesa's and CL mode's —, images,
//! uniform buffers, shared memory) and what
//! a run returns, [`Dispatched`] with its [`RunStats`] (docs/hw/adreno-kgsl-pm4.md §16.5).
use super::memory::{Image, Ubo};
use crate::instr::RegNum;

/// Everything one dispatch provides besides the program.
#[derive(Clone, Debug)]
pub struct Launch<'a> {
    /// The constant file (c0.x = dword 0).
    pub consts: &'a [u32],
    pub groups: [u32; 3],
    pub local: [u32; 3],
    /// First register of the work-group id (x, y, z), if the kernel reads it.
    pub wgid_reg: Option<RegNum>,
    /// First register of the local invocation id (x, y, z), if the kernel reads it.
    pub lid_reg: Option<RegNum>,
    /// First register of the work-group size (x, y, z): HLSQ_CS_CNTL_0's WGSIZECONSTID, which only
    /// Qualcomm's OpenCL kernels (CL mode) read (docs/hw/adreno-kgsl-pm4.md §16.11).
    pub wgsize_reg: Option<RegNum>,
    /// First register of the work-group offset (x, y, z) = work-group id × local size, the global id of the
    /// group's first work item: HLSQ_CS_CNTL_0's WGOFFSETCONSTID, CL mode only (§16.11).
    pub wgoffset_reg: Option<RegNum>,
    pub textures: &'a [Image],
    pub uavs: &'a [Image],
    /// Sampler descriptors (4 dwords each, A6XX_TEX_SAMP_0…3), indexed like `s#N`; read by `sam`.
    pub samplers: &'a [[u32; 4]],
    /// Uniform buffers by slot (the CP_LOAD_STATE6 ST6_UBO load of the compute stage), read by `ldc` and
    /// `ldc.k` (docs/hw/adreno-kgsl-pm4.md §16.12).
    pub ubos: &'a [Ubo],
    /// SP_CS_BINDLESS_BASE[0…4] as the stream wrote them (bits 0–1 DESC_SIZE, the rest the address of the
    /// descriptor set; 0 = not set), read by the bindless (`.baseN`) forms (docs/hw/adreno-kgsl-pm4.md §16.13).
    pub bindless: [u64; 5],
    /// Bytes of work-group shared memory (`l[…]`).
    pub shared_bytes: usize,
    /// Work items per dimension when the last work group of a dimension is partial (CL mode; OpenCL's
    /// non-uniform work groups, docs/hw/adreno-kgsl-pm4.md "Fractional global sizes"): a fiber whose global id
    /// (`group · local + local id`) reaches it does not run. `None`: every fiber of every group runs.
    pub items: Option<[u32; 3]>,
}

/// Counters of one dispatch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunStats {
    /// Instructions issued (one issue covers every fiber waiting at that PC, repeats counted once).
    pub issues: u64,
    /// Per-fiber instruction executions (repeats counted individually).
    pub fiber_instrs: u64,
}

/// What a dispatch run on one or more threads reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Dispatched {
    /// The same for any number of threads.
    pub stats: RunStats,
    /// Bytes stored by more than one batch of work groups (the later batch wins, as serially); counted only
    /// when the batches ran on more than one thread, else 0.
    pub overlapping_bytes: u64,
}
