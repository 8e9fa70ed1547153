//! The GPU's shared state, its configuration, fault injection and the errors it reports; the
//! `service` loop that runs the PSP and the queues (docs/hw/amd-gpu.md §1).
use std::collections::HashMap;

use super::discovery;
use super::mem::VmAccess;
use super::pm4::ComputeQueue;
use super::psp::Psp;
use super::regs::*;
use super::sdma::SdmaQueue;
use super::smu::Smu;
use super::vm::{Context, WalkError};
use super::vram::Vram;
use modelrt_asm24::emu::SystemBus;
use modelrt_rdna3::shader::{ExecError, GpuMemory, MemFault, NotModelled, ShaderExecutor};

/// Model parameters (docs/hw/amd-gpu.md §1.2: which are measured facts and which are choices).
#[derive(Clone, Debug)]
pub struct GpuConfig {
    /// VRAM bytes (`RCC_CONFIG_MEMSIZE` reports it in MiB). Default 24 GiB (a 7900 XTX).
    pub vram_bytes: u64,
    /// MC address of VRAM byte 0 (`MC_VM_FB_LOCATION_BASE`, 16 MiB units). Default 0x80_0000_0000.
    pub fb_base: u64,
    /// TMR size the PSP answers to LOAD_TOC. Default 0x130_0000 (the driver-side upper bound,
    /// docs/hw/amd-gpu.md §1.2).
    pub tmr_size: u32,
    /// GPU timestamp clock (RELEASE_MEM data_sel 3, SDMA TIMESTAMP). Default 100 MHz.
    pub clock_hz: u64,
    /// Emulated cost of one command-processor packet or SDMA packet, in ns.
    pub packet_ns: u64,
    /// Emulated time a queue may wait on one poll before it counts as hung (SDMA watchdog
    /// 100 × 100 ms, docs/hw/amd-gpu.md §1.2).
    pub hang_ns: u64,
    /// Fault injection.
    pub faults: GpuFaults,
}

impl Default for GpuConfig {
    fn default() -> Self {
        GpuConfig {
            vram_bytes: 24 << 30,
            fb_base: 0x80_0000_0000,
            tmr_size: 0x130_0000,
            clock_hz: 100_000_000,
            packet_ns: 100,
            hang_ns: 10_000_000_000,
            faults: GpuFaults::default(),
        }
    }
}

/// Injected faults (docs/hw/amd-gpu.md §9).
#[derive(Clone, Debug, Default)]
pub struct GpuFaults {
    /// The PSP never answers (bootloader never ready, sOS never alive, ring never created).
    pub psp_silent: bool,
    /// The SMU never answers a message.
    pub smu_silent: bool,
    /// LOAD_IP_FW of this firmware type is rejected (status 2).
    pub reject_fw_type: Option<u32>,
    /// This engine's queue stops (never advances past its read pointer).
    pub hang_queue: Option<Engine>,
    /// A VA page (4 KiB aligned) that faults whatever the page tables say.
    pub poisoned_page: Option<u64>,
    /// The discovery table's binary signature is wrong.
    pub corrupt_discovery: bool,
    /// GCVM_L2_PROTECTION_FAULT_STATUS is non-zero at power-on (forces a full boot).
    pub preset_gc_fault: bool,
}

/// A GPU engine that runs a queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// The compute HQD (MEC 1, pipe 0, queue 0): PM4.
    Compute,
    /// SDMA 0 queue 0.
    Sdma,
    /// The PSP ring.
    Psp,
}

impl std::fmt::Display for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Engine::Compute => "compute queue",
            Engine::Sdma => "SDMA queue",
            Engine::Psp => "PSP",
        })
    }
}

/// What the model reports to the host side (besides the registers a driver reads).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GpuError {
    /// A queue stopped on a packet it cannot execute.
    #[error("{engine} hung at {va:#x} (header {header:#010x}): {why}")]
    QueueHang {
        engine: Engine,
        va: u64,
        header: u32,
        why: String,
    },
    /// An engine touched an address its page tables do not map.
    #[error("GPU page fault in the {engine} at {va:#x} ({}): {why}", if *.write { "write" } else { "read" })]
    PageFault {
        engine: Engine,
        va: u64,
        write: bool,
        why: &'static str,
    },
    /// A dispatch the shader executor refused or failed.
    #[error("dispatch failed: {0}")]
    Dispatch(ExecError),
    /// A PSP command completed with a non-zero status.
    #[error("PSP command {id:#x} failed with status {status:#x}: {why}")]
    PspCommand { id: u32, status: u32, why: String },
}

/// Everything behind the three BARs.
pub struct GpuState {
    pub config: GpuConfig,
    pub vram: Vram,
    /// Plain register storage by BAR5 byte offset (and RSMU byte address beyond BAR5).
    pub regs: HashMap<u64, u32>,
    /// HQD register banks by (me, pipe, queue) selection.
    pub hqd: HashMap<(u32, u32, u32), HashMap<u64, u32>>,
    pub doorbells: Vec<u32>,
    pub gc_ctx: Context,
    pub mm_ctx: Context,
    pub psp: Psp,
    pub smu: Smu,
    pub compute: Option<ComputeQueue>,
    pub sdma: Option<SdmaQueue>,
    pub executor: Box<dyn ShaderExecutor>,
    pub errors: Vec<GpuError>,
    pub clock_ns: u64,
    /// SDMA TRAP packets executed (interrupts are not delivered; docs/hw/amd-gpu.md §7).
    pub traps: u64,
    /// HDP flushes seen (writes to the remapped flush register).
    pub hdp_flushes: u64,
}

impl GpuState {
    pub fn new(config: GpuConfig) -> Self {
        let mut s = GpuState {
            vram: Vram::new(config.vram_bytes),
            config,
            regs: HashMap::new(),
            hqd: HashMap::new(),
            doorbells: vec![0; (super::DOORBELL_BYTES / 4) as usize],
            gc_ctx: Context::default(),
            mm_ctx: Context::default(),
            psp: Psp::default(),
            smu: Smu::default(),
            compute: None,
            sdma: None,
            executor: Box::new(NotModelled),
            errors: Vec::new(),
            clock_ns: 0,
            traps: 0,
            hdp_flushes: 0,
        };
        let blob = discovery::build(discovery::NAVI31_IPS, s.config.faults.corrupt_discovery);
        let at = s.config.vram_bytes - discovery::FROM_TOP;
        s.vram.write(at, &blob);
        if s.config.faults.preset_gc_fault {
            s.regs.insert(GCVM_L2_PROTECTION_FAULT_STATUS, 0x1 << 4);
        }
        s
    }

    /// Mode-1 reset: every engine and register back to power-on; VRAM (and so the discovery
    /// table) is kept.
    pub fn reset_asic(&mut self) {
        self.regs.clear();
        self.hqd.clear();
        self.doorbells.fill(0);
        self.gc_ctx = Context::default();
        self.mm_ctx = Context::default();
        self.psp = Psp::default();
        self.smu = self.smu.after_reset();
        self.compute = None;
        self.sdma = None;
    }

    pub fn advance(&mut self, ns: u64) {
        self.clock_ns += ns;
    }

    /// GPU timestamp counter.
    pub fn timestamp(&self) -> u64 {
        (self.clock_ns as u128 * self.config.clock_hz as u128 / 1_000_000_000) as u64
    }

    pub fn doorbell_read(&self, offset: u64) -> u32 {
        self.doorbells
            .get((offset / 4) as usize)
            .copied()
            .unwrap_or(0)
    }

    pub fn doorbell_write(&mut self, offset: u64, value: u32) {
        let Some(slot) = self.doorbells.get_mut((offset / 4) as usize) else {
            return;
        };
        *slot = value;
        let line = offset & !7;
        let value = self.doorbell_read(line) as u64 | (self.doorbell_read(line + 4) as u64) << 32;
        if let Some(q) = self.compute.as_mut().filter(|q| q.doorbell == Some(line)) {
            q.wptr = value;
        }
        if let Some(q) = self.sdma.as_mut().filter(|q| q.doorbell == Some(line)) {
            q.wptr = value;
        }
    }

    /// A memory view through the GC hub (command processor, SDMA, shaders).
    pub fn gc_view<'a>(
        vram: &'a mut Vram,
        ctx: Context,
        bus: &'a mut dyn SystemBus,
        poisoned_page: Option<u64>,
    ) -> VmAccess<'a> {
        VmAccess {
            vram,
            ctx,
            bus,
            fb: None,
            poisoned_page,
            fault: None,
        }
    }

    /// Record a page fault: the hub's fault status/address registers (first fault wins, later
    /// ones set MORE_FAULTS) and a host-visible error.
    pub fn record_fault(&mut self, engine: Engine, rec: super::mem::FaultRecord) {
        let (status_reg, lo_reg, hi_reg) = if engine == Engine::Psp {
            (
                MMVM_L2_PROTECTION_FAULT_STATUS,
                MMVM_L2_PROTECTION_FAULT_ADDR_LO32,
                MMVM_L2_PROTECTION_FAULT_ADDR_HI32,
            )
        } else {
            (
                GCVM_L2_PROTECTION_FAULT_STATUS,
                GCVM_L2_PROTECTION_FAULT_ADDR_LO32,
                GCVM_L2_PROTECTION_FAULT_ADDR_HI32,
            )
        };
        let (bits, why) = match rec.why {
            Some(WalkError::Range) => (1 << 8, "outside the context's VA range"),
            Some(WalkError::Invalid) => (1 << 4, "page not mapped (VALID clear)"),
            Some(WalkError::Permission) => {
                if rec.fault.write {
                    (1 << 6, "page not writeable")
                } else {
                    (1 << 5, "page not readable")
                }
            }
            None => (1 << 1, "SYSTEM page outside the bridge's DMA windows"),
        };
        let status = self.regs.get(&status_reg).copied().unwrap_or(0);
        if status == 0 {
            let rw = if rec.fault.write { 1 << 18 } else { 0 };
            self.regs.insert(status_reg, bits | rw);
            self.regs.insert(lo_reg, (rec.fault.va >> 12) as u32);
            self.regs
                .insert(hi_reg, ((rec.fault.va >> 44) & 0xF) as u32);
        } else {
            self.regs.insert(status_reg, status | 1);
        }
        self.errors.push(GpuError::PageFault {
            engine,
            va: rec.fault.va,
            write: rec.fault.write,
            why,
        });
    }

    /// Run `f` on memory as seen through the GC hub; a fault it hits is recorded for `engine`.
    fn with_gc_memory<R>(
        &mut self,
        bus: &mut dyn SystemBus,
        engine: Engine,
        f: impl FnOnce(&mut VmAccess<'_>) -> R,
    ) -> R {
        let poisoned = self.config.faults.poisoned_page;
        let mut mem = GpuState::gc_view(&mut self.vram, self.gc_ctx, bus, poisoned);
        let r = f(&mut mem);
        let fault = mem.fault;
        if let Some(rec) = fault {
            self.record_fault(engine, rec);
        }
        r
    }

    /// Read through the GC hub, recording a fault.
    pub fn mem_read(
        &mut self,
        bus: &mut dyn SystemBus,
        engine: Engine,
        va: u64,
        out: &mut [u8],
    ) -> Result<(), MemFault> {
        self.with_gc_memory(bus, engine, |m| m.read(va, out))
    }

    /// Write through the GC hub, recording a fault.
    pub fn mem_write(
        &mut self,
        bus: &mut dyn SystemBus,
        engine: Engine,
        va: u64,
        data: &[u8],
    ) -> Result<(), MemFault> {
        self.with_gc_memory(bus, engine, |m| m.write(va, data))
    }

    /// Run everything that is ready: PSP ring frames, then the queues until none progresses.
    pub fn service(&mut self, bus: &mut dyn SystemBus) {
        self.psp_service(bus);
        for _ in 0..64 {
            let a = self.run_compute(bus);
            let b = self.run_sdma(bus);
            if !a && !b {
                break;
            }
        }
    }
}
