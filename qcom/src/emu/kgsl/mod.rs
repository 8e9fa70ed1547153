//! A model of KGSL + the a6xx command processor that *validates* every submitted PM4 stream against the rules of
//! docs/hw/adreno-kgsl-pm4.md §13 and records a readable trace. With [`ModelConfig::execute_shaders`] it also runs each
//! dispatch through the IR3 interpreter ([`modelrt_ir3`], §16), so kernel outputs are computed; otherwise they
//! are not. Besides that it performs only the memory side effects the CP itself does — CACHE_FLUSH_TS
//! stores (signals, progress), CP_REG_TO_MEM always-on-counter stores (timestamps) — and checks CP_WAIT_REG_MEM
//! against memory (an in-order model that finds a wait unsatisfied reports a dependency bug instead of hanging).
//!
//! Modelling choices (explicit, configurable in [`ModelConfig`]):
//! - submissions retire at submit time (in order); a hang is injected with [`ModelConfig::hang_at_dispatch`];
//! - the *dummy* object is the first object allocated after open (tinygrad's bring-up order, docs/hw/adreno-kgsl-pm4.md §3);
//! - the always-on counter advances [`ModelConfig::ticks_per_dispatch`] ticks per dispatch (19.2 MHz units);
//! - MAP_USER_MEM returns the host pointer as GPU address, or EFAULT when [`ModelConfig::user_mem_efault`].
//!
//! Files: `memory` (the model's GPU objects and address lookups), `ioctl` (the [`KgslIo`] calls),
//! `stream` (the PM4 packet validator of one IB), `dispatch` (what one CP_EXEC_CS must find programmed), `cl_mode`
//! (what CP_RUN_OPENCL needs differently), `execute` (running a dispatch with the interpreter).
use crate::kgsl::abi;
use crate::kgsl::KgslError;
use std::collections::BTreeMap;

mod cl_mode;
mod dispatch;
mod execute;
#[allow(unsafe_code)]
mod ioctl;
#[allow(unsafe_code)]
mod memory;
mod stream;

pub use dispatch::Dispatch;
pub use execute::ExecStats;
use memory::Obj;

/// Knobs of the model.
#[derive(Clone, Debug)]
pub struct ModelConfig {
    /// chip id reported by DEVICE_INFO (a630: 0x06030001).
    pub chip_id: u32,
    /// Context flags DRAWCTXT_CREATE accepts (tinygrad default 0x04008A12).
    pub ctx_flags: u32,
    /// Global 0-based dispatch index at which the GPU "hangs": that dispatch never completes, the submission
    /// never retires and WAITTIMESTAMP times out.
    pub hang_at_dispatch: Option<usize>,
    pub ticks_per_dispatch: u64,
    pub user_mem_efault: bool,
    /// Fail the Nth (0-based) GPUOBJ_ALLOC with ENOMEM.
    pub fail_alloc_at: Option<usize>,
    /// Run every dispatch through the IR3 interpreter (docs/hw/adreno-kgsl-pm4.md §16), so kernels compute.
    pub execute_shaders: bool,
}

impl Default for ModelConfig {
    fn default() -> Self {
        ModelConfig {
            chip_id: 0x0603_0001,
            ctx_flags: abi::context_flags(8),
            hang_at_dispatch: None,
            ticks_per_dispatch: 192,
            user_mem_efault: false,
            fail_alloc_at: None,
            execute_shaders: false,
        }
    }
}

/// Counters the model keeps.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub submissions: u32,
    pub packets: u64,
    pub dispatches: u64,
    pub signals: u64,
    pub waits: u64,
    pub timestamps: u64,
}

/// The KGSL model.
pub struct KgslModel {
    cfg: ModelConfig,
    objs: BTreeMap<u32, Obj>,
    /// va → id for mapped objects.
    by_va: BTreeMap<u64, u32>,
    next_id: u32,
    allocs: usize,
    dummy: Option<u32>,
    ctx: Option<u32>,
    power_max: bool,
    user_maps: BTreeMap<u64, u64>,
    ts: u32,
    retired: u32,
    ticks: u64,
    regs: BTreeMap<u32, u32>,
    hung: bool,
    trace: Vec<String>,
    dispatches: Vec<Dispatch>,
    submitted: Vec<Vec<u32>>,
    stats: Stats,
    exec: execute::ExecState,
}

/// `Result` with a model error message.
type R<T> = Result<T, String>;

impl KgslModel {
    pub fn new(cfg: ModelConfig) -> Self {
        KgslModel {
            cfg,
            objs: BTreeMap::new(),
            by_va: BTreeMap::new(),
            next_id: 1,
            allocs: 0,
            dummy: None,
            ctx: None,
            power_max: false,
            user_maps: BTreeMap::new(),
            ts: 0,
            retired: 0,
            ticks: 0,
            regs: BTreeMap::new(),
            hung: false,
            trace: Vec::new(),
            dispatches: Vec::new(),
            submitted: Vec::new(),
            stats: Stats::default(),
            exec: Default::default(),
        }
    }

    /// Readable trace of every call and submission.
    pub fn trace(&self) -> &[String] {
        &self.trace
    }
    /// Every dispatch the model saw, in order.
    pub fn dispatches(&self) -> &[Dispatch] {
        &self.dispatches
    }
    /// The dwords of every submitted IB, in order.
    pub fn submitted(&self) -> &[Vec<u32>] {
        &self.submitted
    }
    pub fn stats(&self) -> &Stats {
        &self.stats
    }
    /// Whether SETPROPERTY(PWR_CONSTRAINT, max) was seen.
    pub fn power_max(&self) -> bool {
        self.power_max
    }
    /// Number of live GPU objects.
    pub fn live_objects(&self) -> usize {
        self.objs.len()
    }
    /// Register value as last written.
    pub fn reg(&self, r: u32) -> Option<u32> {
        self.regs.get(&r).copied()
    }
}

fn merr(m: impl Into<String>) -> KgslError {
    KgslError::Model(m.into())
}
