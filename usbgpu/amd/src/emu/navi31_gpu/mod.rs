//! A Navi31 GPU device model (GC 11.0.0, SDMA 6.0, MMHUB 3.0, NBIO 4.3, MP0/MP1 13.0.0, HDP/OSSSYS 6.0)
//! for the bridge emulator, written from `docs/hw/amd-gpu.md` (which names the primary sources).
//!
//! # API (for the AM driver and the CLI)
//! ```text
//! use modelrt_amd::emu::navi31_gpu::{Navi31Model, GpuConfig};
//! let gpu = Navi31Model::new(GpuConfig::default());          // 24 GiB VRAM, NotModelled shaders
//! gpu.set_executor(Box::new(my_interpreter));                // optional: the RDNA3 interpreter
//! let emu = gpu.bridge_emulator();                           // BridgeEmulator with BAR0/2/5 = this GPU
//! // … or plug into an existing builder: gpu.attach(BridgeEmulator::builder()).build()
//! gpu.faults(|f| f.psp_silent = true);                       // fault injection, any time
//! for e in gpu.take_errors() { eprintln!("error: {e}") }     // hangs/faults the model saw
//! ```
//! Tests can also drive the model without a bridge: [`Navi31Model::reg_write`] / `reg_read`
//! (BAR5 byte offsets), [`Navi31Model::vram_write`] / `vram_read`, [`Navi31Model::doorbell`]
//! and [`Navi31Model::service`] with any [`SystemBus`] (e.g. [`sysmem::WindowMemory`]).
//!
//! BARs: BAR0 = VRAM (size = VRAM, the bridge's REBAR sizes the window), BAR2 = 8 KiB doorbells,
//! BAR5 = 1 MiB registers. Registers beyond BAR5 go through RSMU index/data.
//! The bridge emulator calls `service` after every USB transfer; that is when doorbells, PSP ring
//! frames and pending polls run (docs/hw/amd-gpu.md §1).
#![forbid(unsafe_code)]

mod discovery;
mod mem;
mod pm4;
mod psp;
mod regfile;
mod regs;
mod sdma;
mod smu;
mod state;
pub mod sysmem;
mod vm;
mod vram;

use std::sync::{Arc, Mutex, MutexGuard};

use modelrt_asm24::emu::bridge::{BridgeEmulator, Builder};
use modelrt_asm24::emu::{RegisterModel, SystemBus};
use modelrt_rdna3::shader::ShaderExecutor;
use state::GpuState;
pub use state::{Engine, GpuConfig, GpuError, GpuFaults};

/// BAR2 (doorbell) size in bytes.
pub const DOORBELL_BYTES: u64 = 0x2000;
/// BAR5 (register) size in bytes.
pub const BAR5_BYTES: u64 = 1 << 20;

/// The model; clones share one GPU (the three BAR views and test handles).
#[derive(Clone)]
pub struct Navi31Model {
    state: Arc<Mutex<GpuState>>,
}

impl Navi31Model {
    /// A powered-on GPU (PSP bootloader waiting, nothing loaded) with the discovery table in VRAM.
    pub fn new(config: GpuConfig) -> Self {
        Navi31Model {
            state: Arc::new(Mutex::new(GpuState::new(config))),
        }
    }

    fn lock(&self) -> MutexGuard<'_, GpuState> {
        // A panic elsewhere leaves plain data behind; keep using it.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Replace the shader executor (default: [`modelrt_rdna3::shader::NotModelled`]).
    pub fn set_executor(&self, executor: Box<dyn ShaderExecutor>) {
        self.lock().executor = executor;
    }

    /// Change fault injection.
    pub fn faults(&self, f: impl FnOnce(&mut GpuFaults)) {
        f(&mut self.lock().config.faults)
    }

    /// Errors the model reported since the last call (queue hangs, page faults, refused
    /// dispatches, rejected PSP commands), oldest first.
    pub fn take_errors(&self) -> Vec<GpuError> {
        std::mem::take(&mut self.lock().errors)
    }

    /// The three BAR models: (BAR0 VRAM, BAR2 doorbells, BAR5 registers).
    pub fn bars(&self) -> [Box<dyn RegisterModel>; 3] {
        [
            Box::new(BarView::new(self, Bar::Vram)),
            Box::new(BarView::new(self, Bar::Doorbells)),
            Box::new(BarView::new(self, Bar::Registers)),
        ]
    }

    /// Plug this GPU's BARs into a bridge-emulator builder.
    pub fn attach(&self, builder: Builder) -> Builder {
        let [b0, b2, b5] = self.bars();
        builder.gpu_bar(0, b0).gpu_bar(2, b2).gpu_bar(5, b5)
    }

    /// A default bridge emulator with this GPU behind it.
    pub fn bridge_emulator(&self) -> BridgeEmulator {
        self.attach(BridgeEmulator::builder()).build()
    }

    /// BAR5 register read at byte offset `offset` (with side effects, as the bus would do it).
    pub fn reg_read(&self, offset: u64) -> u32 {
        self.lock().reg_read(offset)
    }

    /// BAR5 register write at byte offset `offset`.
    pub fn reg_write(&self, offset: u64, value: u32) {
        self.lock().reg_write(offset, value)
    }

    /// Read VRAM bytes at a physical address (what BAR0 shows; bytes past VRAM read 0).
    pub fn vram_read(&self, addr: u64, out: &mut [u8]) {
        self.lock().vram.read(addr, out)
    }

    /// Write VRAM bytes at a physical address.
    pub fn vram_write(&self, addr: u64, data: &[u8]) {
        self.lock().vram.write(addr, data)
    }

    /// A 64-bit doorbell write at BAR2 byte offset `offset` (as two dword writes, low first).
    pub fn doorbell(&self, offset: u64, value: u64) {
        let mut s = self.lock();
        s.doorbell_write(offset, value as u32);
        s.doorbell_write(offset + 4, (value >> 32) as u32);
    }

    /// Run pending work (PSP frames, queues) with `bus` as host memory.
    pub fn service(&self, bus: &mut dyn SystemBus) {
        self.lock().service(bus)
    }

    /// Let `ns` nanoseconds of emulated time pass (GPU clock, watchdogs).
    pub fn advance(&self, ns: u64) {
        self.lock().advance(ns)
    }

    /// Current GPU timestamp counter (ticks of [`GpuConfig::clock_hz`]).
    pub fn timestamp(&self) -> u64 {
        self.lock().timestamp()
    }
}

#[derive(Clone, Copy)]
enum Bar {
    Vram,
    Doorbells,
    Registers,
}

/// One BAR of the shared model as the bridge sees it.
struct BarView {
    model: Navi31Model,
    bar: Bar,
}

impl BarView {
    fn new(model: &Navi31Model, bar: Bar) -> Self {
        BarView {
            model: model.clone(),
            bar,
        }
    }
}

impl RegisterModel for BarView {
    fn size(&self) -> u64 {
        match self.bar {
            Bar::Vram => self.model.lock().vram.size(),
            Bar::Doorbells => DOORBELL_BYTES,
            Bar::Registers => BAR5_BYTES,
        }
    }

    fn read32(&mut self, offset: u64) -> u32 {
        let mut s = self.model.lock();
        match self.bar {
            Bar::Vram => s.vram.read32(offset),
            Bar::Doorbells => s.doorbell_read(offset),
            Bar::Registers => s.reg_read(offset),
        }
    }

    fn write32(&mut self, offset: u64, value: u32) {
        let mut s = self.model.lock();
        match self.bar {
            Bar::Vram => s.vram.write32(offset, value),
            Bar::Doorbells => s.doorbell_write(offset, value),
            Bar::Registers => s.reg_write(offset, value),
        }
    }

    fn read_bytes(&mut self, offset: u64, out: &mut [u8]) {
        match self.bar {
            Bar::Vram => self.model.lock().vram.read(offset, out),
            _ => modelrt_asm24::emu::read_by_dwords(self, offset, out),
        }
    }

    fn write_bytes(&mut self, offset: u64, data: &[u8]) {
        match self.bar {
            Bar::Vram => self.model.lock().vram.write(offset, data),
            _ => modelrt_asm24::emu::write_by_dwords(self, offset, data),
        }
    }

    fn advance(&mut self, ns: u64) {
        // Every BAR view gets the same tick from the fabric; count it once.
        if matches!(self.bar, Bar::Registers) {
            self.model.lock().advance(ns);
        }
    }

    fn service(&mut self, bus: &mut dyn SystemBus) {
        if matches!(self.bar, Bar::Registers) {
            self.model.lock().service(bus);
        }
    }
}
