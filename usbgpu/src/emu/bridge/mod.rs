//! Software model of the ASM24 bridge (custom firmware) with a PCIe fabric and a GPU endpoint behind
//! it, driven through the same [`UsbTransport`] trait as the real device (docs/hw/asm24-bridge.md §12).
//!
//! ```text
//! let emu = BridgeEmulator::builder()
//!     .gpu_bar(5, Box::new(my_bar5_model))      // any RegisterModel; BAR size = model.size()
//!     .build();
//! let handle = emu.handle();                    // counters, faults, GPU-side DMA, state
//! let dev = PciDevice::open(Bridge::new(emu))?; // the real driver code path
//! ```
//! Default endpoint ("Navi31-like", ids 0x1002:0x744C): BAR0 64-bit prefetchable sparse VRAM behind a
//! REBAR capability (256 MiB … 32 GiB, boots at 256 MiB), BAR2 32-bit 8 KiB doorbell memory and BAR5
//! 32-bit 1 MiB plain register file; [`Builder::gpu_bar`] / [`Builder::gpu_bar_kind`] replace any of
//! them. Bridges on buses 0..3 (ASMedia 0x1B21:0x2464 for bus 0..1, AMD switch 0x1002:0x1478/0x1479
//! for 2..3 — emulator choice, the sources give no ids).
//!
//! BAR models run with the emulator's state lock held: they must not call back into an
//! [`EmuHandle`] from `read32`/`write32` (GPU-side DMA into the bridge windows goes through
//! [`EmuHandle::gpu_write`]/[`EmuHandle::gpu_read`] from outside a transfer).
//!
//! Modelled: XDATA with the SRAM/sys_buf/mock-window aliases and the LTSSM byte; 0xF3 power (boots
//! off); the 0xF0 engine (mode 0 with completions, posted writes without, modes 1/2 consuming the next
//! bulk transfer of exactly `4·count` bytes); the 0xF2 engine (FIFO of write arms consumed in order by
//! bulk OUT, one read arm released only by a GPU write to PCIe 0x82200C); bulk IN before the release
//! times out. Emulated time advances per transfer ([`Timing`]) and is passed to BAR models.
//!
//! Emulator choices (the sources are silent, docs/hw/asm24-bridge.md §13): a bulk transfer with nothing armed or of the wrong size
//! stalls; a write arm outside the SRAM stalls; at most [`Builder::max_pending_arms`] write arms may
//! wait behind the active one (default 2, docs/hw/asm24-bridge.md §5.1: "at least one"); with the link down mode-0 TLPs
//! complete with ret_status 0xFF and streaming reads time out; mode-2 reads of unclaimed addresses
//! return all-ones dwords; XDATA 0xB800 is not aliased to the CQ window (the host never uses it).
//! An arm whose bulk transfer failed (timeout, short, stall) stays queued, as nothing in the protocol
//! aborts it: the next bulk transfer is consumed by it (and usually rejected as mis-sized), so after
//! a failed bulk transfer a session should be re-opened; 0xF3 (power on or off) drops all pending
//! streams and arms (emulator choice).
//! The bulk IN "blocks until released" rule is modelled as an immediate [`UsbError::Timeout`] with
//! the timeout added to emulated time (tests stay fast, and the outcome is what the host would see).
//!
//! Requests are decoded by [`wire`], the emulator's own reading of the protocol tables
//! (docs/hw/asm24-bridge.md), never by the driver's encoders in `asm24::proto`.
pub mod fabric;
pub mod faults;
pub mod memory;
pub mod wire;

use self::fabric::{BarKind, Bridge as FabricBridge, Endpoint, Fabric, Rebar};
use self::faults::{Faults, LTSSM_DETECT};
use self::memory::SparseMemory;
use self::wire::{
    InRequest, OutRequest, TlpKind, TlpRequest, COMPLETION_BYTES, SRAM_BYTES, XDATA_READ_LIMIT,
};
use super::RegisterModel;
use crate::asm24::proto::CplStatus;
use crate::asm24::{
    BUS_CQ, BUS_CQ_RELEASE, BUS_MOCK_WINDOW, BUS_SRAM, BUS_SYS_BUF, EP_BULK_IN, EP_BULK_OUT,
    LTSSM_L0, XDATA_LTSSM, XDATA_MOCK_WINDOW, XDATA_SRAM, XDATA_SYS_BUF,
};
use crate::counting::TransferCounts;
use modelrt_hal::pci::Bdf;
use modelrt_hal::usb::{Setup, Transfer, UsbError, UsbTransport};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

pub use self::fabric::BarKind as EmuBarKind;

/// Emulated cost of transfers (defaults: roughly a USB 3.2 Gen2 link at ~400 MB/s; these are
/// emulator parameters, not measurements).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timing {
    /// Round trip of one control transfer.
    pub control_ns: u64,
    /// Fixed cost of one bulk transfer.
    pub bulk_setup_ns: u64,
    /// Bulk payload rate in bytes per microsecond (400 = 400 MB/s).
    pub bulk_bytes_per_us: u64,
    /// Link training time of 0xF3 power-on (must stay < 10 s for the host).
    pub link_train_ns: u64,
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            control_ns: 125_000,
            bulk_setup_ns: 30_000,
            bulk_bytes_per_us: 400,
            link_train_ns: 200_000_000,
        }
    }
}

/// USB identity the emulator reports (docs/hw/asm24-bridge.md §12 state 1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    pub vendor_id: u16,
    pub product_id: u16,
    pub product: String,
    /// bcdDevice (firmware version as USB reports it).
    pub bcd_device: u16,
}

/// What a GPU-side DMA could not do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("GPU DMA of {len} bytes at bus address {address:#x} hits no bridge window")]
pub struct DmaError {
    pub address: u64,
    pub len: usize,
}

/// What an armed bulk transfer (OUT or IN) moves: a 0xF0 mode-1/2 stream to/from PCIe memory, or
/// a 0xF2 SRAM DMA window.
enum Consumer {
    Stream { address: u64, len: usize },
    Sram { offset: usize, len: usize },
}

impl Consumer {
    /// Bytes the armed transfer must carry.
    fn len(&self) -> usize {
        match self {
            Consumer::Stream { len, .. } | Consumer::Sram { len, .. } => *len,
        }
    }
}

/// The whole emulated device. Shared between the transport and [`EmuHandle`]s.
pub struct EmuState {
    identity: Identity,
    xdata: Box<[u8; 0x10000]>,
    sram: Vec<u8>,
    sys_buf: Box<[u8; 0x1000]>,
    cq_buf: Box<[u8; 0x1000]>,
    mock_window: Box<[u8; 0x200]>,
    completion: [u8; COMPLETION_BYTES],
    out_queue: VecDeque<Consumer>,
    in_queue: VecDeque<Consumer>,
    read_released: bool,
    max_pending_arms: usize,
    fabric: Fabric,
    /// Armed faults.
    pub faults: Faults,
    counters: TransferCounts,
    timing: Timing,
    clock_ns: u64,
    disconnected: bool,
    latched: Option<UsbError>,
}

/// Builder of a [`BridgeEmulator`].
pub struct Builder {
    identity: Identity,
    vendor: u16,
    device: u16,
    bars: Vec<(usize, BarKind, Box<dyn RegisterModel>)>,
    rebar_supported: u32,
    rebar_index: u8,
    bridges: usize,
    timing: Timing,
    max_pending_arms: usize,
    boot_powered: bool,
}

/// Default VRAM BAR model size (32 GiB, sparse).
pub const DEFAULT_VRAM: u64 = 32 << 30;

impl Default for Builder {
    fn default() -> Self {
        Builder {
            identity: Identity {
                vendor_id: 0xADD1,
                product_id: 0x0001,
                product: "custom ASM24 (emulated)".into(),
                bcd_device: 0x0100,
            },
            vendor: 0x1002,
            device: 0x744C,
            bars: Vec::new(),
            // 256 MiB (bit 8) … 32 GiB (bit 15); boots at 256 MiB ("small BAR").
            rebar_supported: 0xFF00,
            rebar_index: 8,
            bridges: 4,
            timing: Timing::default(),
            max_pending_arms: 2,
            boot_powered: false,
        }
    }
}

impl Builder {
    /// Plug `model` into GPU BAR `index` with the default shape for that index (BAR0: 64-bit
    /// prefetchable, others 32-bit non-prefetchable). The BAR size is `model.size()` (rounded up to a
    /// power of two) except for BAR0, which the REBAR capability sizes.
    pub fn gpu_bar(self, index: usize, model: Box<dyn RegisterModel>) -> Self {
        let kind = if index == 0 {
            BarKind::MEM64_PREF
        } else {
            BarKind::MEM32
        };
        self.gpu_bar_kind(index, kind, model)
    }

    /// Plug `model` into BAR `index` with an explicit shape. A 64-bit BAR also occupies `index + 1`.
    pub fn gpu_bar_kind(
        mut self,
        index: usize,
        kind: BarKind,
        model: Box<dyn RegisterModel>,
    ) -> Self {
        self.bars.retain(|(i, _, _)| *i != index);
        self.bars.push((index.min(5), kind, model));
        self
    }

    /// GPU vendor/device id.
    pub fn gpu_ids(mut self, vendor: u16, device: u16) -> Self {
        self.vendor = vendor;
        self.device = device;
        self
    }

    /// REBAR on BAR0: supported size bits (bit n = 2^(20+n) bytes; 0 = no REBAR capability) and the
    /// boot size index.
    pub fn rebar(mut self, supported: u32, boot_index: u8) -> Self {
        self.rebar_supported = supported;
        self.rebar_index = boot_index;
        self
    }

    /// Emulated transfer costs.
    pub fn timing(mut self, timing: Timing) -> Self {
        self.timing = timing;
        self
    }

    /// How many write arms may queue behind the active one.
    pub fn max_pending_arms(mut self, n: usize) -> Self {
        self.max_pending_arms = n;
        self
    }

    /// USB identity.
    pub fn identity(mut self, identity: Identity) -> Self {
        self.identity = identity;
        self
    }

    /// Start with PCIe already powered and trained (the custom firmware boots off; this models a
    /// re-open after a previous session).
    pub fn boot_powered(mut self, on: bool) -> Self {
        self.boot_powered = on;
        self
    }

    pub fn build(self) -> BridgeEmulator {
        let mut endpoint = Endpoint::new(self.vendor, self.device);
        endpoint.add_bar(
            0,
            BarKind::MEM64_PREF,
            Box::new(SparseMemory::new(DEFAULT_VRAM)),
        );
        endpoint.add_bar(2, BarKind::MEM32, Box::new(SparseMemory::new(0x2000)));
        endpoint.add_bar(5, BarKind::MEM32, Box::new(SparseMemory::new(1 << 20)));
        for (i, kind, model) in self.bars {
            endpoint.add_bar(i, kind, model);
        }
        if self.rebar_supported != 0 {
            endpoint.rebar = Some(Rebar {
                bar: 0,
                supported: self.rebar_supported,
                index: self.rebar_index,
            });
        }
        let ids = [
            (0x1B21, 0x2464),
            (0x1B21, 0x2464),
            (0x1002, 0x1478),
            (0x1002, 0x1479),
        ];
        let bridges = (0..self.bridges)
            .map(|i| FabricBridge::new(ids[i % ids.len()].0, ids[i % ids.len()].1))
            .collect();
        let mut xdata = Box::new([0u8; 0x10000]);
        xdata[XDATA_LTSSM as usize] = if self.boot_powered {
            LTSSM_L0
        } else {
            LTSSM_DETECT
        };
        let state = EmuState {
            identity: self.identity,
            xdata,
            sram: vec![0; SRAM_BYTES],
            sys_buf: Box::new([0; 0x1000]),
            cq_buf: Box::new([0; 0x1000]),
            mock_window: Box::new([0; 0x200]),
            completion: [0; COMPLETION_BYTES],
            out_queue: VecDeque::new(),
            in_queue: VecDeque::new(),
            read_released: false,
            max_pending_arms: self.max_pending_arms,
            fabric: Fabric { bridges, endpoint },
            faults: Faults::default(),
            counters: TransferCounts::default(),
            timing: self.timing,
            clock_ns: 0,
            disconnected: false,
            latched: None,
        };
        BridgeEmulator {
            state: Arc::new(Mutex::new(state)),
        }
    }
}

/// The emulated bridge as a USB transport.
pub struct BridgeEmulator {
    state: Arc<Mutex<EmuState>>,
}

/// A second handle on the same emulated device: counters, faults, GPU-side DMA, inspection.
#[derive(Clone)]
pub struct EmuHandle {
    state: Arc<Mutex<EmuState>>,
}

fn lock(state: &Mutex<EmuState>) -> MutexGuard<'_, EmuState> {
    // A panic while holding the lock leaves plain data behind; keep using it.
    state.lock().unwrap_or_else(|e| e.into_inner())
}

impl BridgeEmulator {
    pub fn builder() -> Builder {
        Builder::default()
    }

    /// Default Navi31-like device.
    pub fn new() -> Self {
        Builder::default().build()
    }

    pub fn handle(&self) -> EmuHandle {
        EmuHandle {
            state: self.state.clone(),
        }
    }
}

impl Default for BridgeEmulator {
    fn default() -> Self {
        Self::new()
    }
}

impl EmuHandle {
    /// Transfer counters so far (counted like the host-side [`crate::counting::Counting`]).
    pub fn counters(&self) -> TransferCounts {
        lock(&self.state).counters
    }

    /// Arm faults: `h.faults(|f| f.engine_errors = 3)`.
    pub fn faults(&self, f: impl FnOnce(&mut Faults)) {
        f(&mut lock(&self.state).faults)
    }

    /// USB identity.
    pub fn identity(&self) -> Identity {
        lock(&self.state).identity.clone()
    }

    /// Emulated nanoseconds elapsed.
    pub fn clock_ns(&self) -> u64 {
        lock(&self.state).clock_ns
    }

    /// Drop the PCIe link now (LTSSM leaves L0).
    pub fn link_down(&self) {
        lock(&self.state).xdata[XDATA_LTSSM as usize] = LTSSM_DETECT;
    }

    /// Unplug the device: every later transfer fails with `Disconnected`.
    pub fn disconnect(&self) {
        lock(&self.state).disconnected = true;
    }

    /// Current REBAR size index of BAR0 (None without the capability).
    pub fn rebar_index(&self) -> Option<u8> {
        lock(&self.state).fabric.endpoint.rebar.map(|r| r.index)
    }

    /// Direct access to a GPU BAR model (inspection from tests).
    pub fn with_bar<R>(
        &self,
        index: usize,
        f: impl FnOnce(&mut dyn RegisterModel) -> R,
    ) -> Option<R> {
        let mut s = lock(&self.state);
        let bar = s.fabric.endpoint.bars.get_mut(index)?.as_mut()?;
        Some(f(bar.model.as_mut()))
    }

    /// GPU-initiated write to a bridge window by PCIe bus address (SRAM 0x200000, sys_buf 0x820000,
    /// CQ 0x822000, mock window 0x800000). A write covering 0x82200C releases an armed SRAM read.
    pub fn gpu_write(&self, address: u64, data: &[u8]) -> Result<(), DmaError> {
        let mut s = lock(&self.state);
        let (mut windows, _) = s.split_windows();
        match super::SystemBus::write(&mut windows, address, data) {
            true => Ok(()),
            false => Err(DmaError {
                address,
                len: data.len(),
            }),
        }
    }

    /// GPU-initiated read of a bridge window.
    pub fn gpu_read(&self, address: u64, out: &mut [u8]) -> Result<(), DmaError> {
        let mut s = lock(&self.state);
        let (mut windows, _) = s.split_windows();
        match super::SystemBus::read(&mut windows, address, out) {
            true => Ok(()),
            false => Err(DmaError {
                address,
                len: out.len(),
            }),
        }
    }
}

/// The bridge windows as the GPU's DMA sees them (borrowed from [`EmuState`] while BAR models run).
struct Windows<'a> {
    sram: &'a mut [u8],
    sys_buf: &'a mut [u8],
    cq_buf: &'a mut [u8],
    mock_window: &'a mut [u8],
    read_released: &'a mut bool,
    hold_release: bool,
}

impl Windows<'_> {
    /// The window bytes a DMA of `len` bytes at bus `address` touches (one window must hold all).
    fn slice(&mut self, address: u64, len: usize) -> Option<&mut [u8]> {
        let windows: [(u64, &mut [u8]); 4] = [
            (BUS_SRAM, &mut *self.sram),
            (BUS_SYS_BUF, &mut *self.sys_buf),
            (BUS_CQ, &mut *self.cq_buf),
            (BUS_MOCK_WINDOW, &mut *self.mock_window),
        ];
        for (base, window) in windows {
            if address >= base && address - base + len as u64 <= window.len() as u64 {
                let o = (address - base) as usize;
                return Some(&mut window[o..o + len]);
            }
        }
        None
    }
}

impl super::SystemBus for Windows<'_> {
    fn read(&mut self, address: u64, out: &mut [u8]) -> bool {
        self.slice(address, out.len())
            .map(|w| out.copy_from_slice(w))
            .is_some()
    }

    fn write(&mut self, address: u64, data: &[u8]) -> bool {
        let Some(w) = self.slice(address, data.len()) else {
            return false;
        };
        w.copy_from_slice(data);
        // A GPU write covering 0x82200C releases an armed SRAM read (docs/hw/asm24-bridge.md).
        let end = address + data.len() as u64;
        if address < BUS_CQ_RELEASE + 4 && end > BUS_CQ_RELEASE && !self.hold_release {
            *self.read_released = true;
        }
        true
    }
}

impl EmuState {
    /// The DMA windows and the fabric, borrowed apart (BAR models run while windows are lent out).
    fn split_windows(&mut self) -> (Windows<'_>, &mut Fabric) {
        let windows = Windows {
            sram: &mut self.sram[..],
            sys_buf: &mut self.sys_buf[..],
            cq_buf: &mut self.cq_buf[..],
            mock_window: &mut self.mock_window[..],
            read_released: &mut self.read_released,
            hold_release: self.faults.hold_read_release,
        };
        (windows, &mut self.fabric)
    }

    fn xdata_byte(&mut self, addr: u16) -> &mut u8 {
        let a = addr as usize;
        match addr {
            0xF000..=0xFFFF => &mut self.sram[a - XDATA_SRAM as usize],
            0xA000..=0xAFFF => &mut self.sys_buf[a - XDATA_SYS_BUF as usize],
            0xB000..=0xB1FF => &mut self.mock_window[a - XDATA_MOCK_WINDOW as usize],
            _ => &mut self.xdata[a],
        }
    }

    fn link_up(&self) -> bool {
        self.xdata[XDATA_LTSSM as usize] == LTSSM_L0
    }

    fn elapse(&mut self, ns: u64) {
        self.clock_ns += ns;
        self.fabric.advance(ns);
    }

    fn bulk_cost(&self, bytes: usize) -> u64 {
        self.timing.bulk_setup_ns + (bytes as u64 * 1000) / self.timing.bulk_bytes_per_us.max(1)
    }

    fn check_connected(&self) -> Result<(), UsbError> {
        if self.disconnected {
            Err(UsbError::Disconnected)
        } else {
            Ok(())
        }
    }

    /// Common control-transfer prologue: connection, counters, time, injected stall/timeout.
    fn control_prologue(&mut self, req: u8, timeout: Duration) -> Result<(), UsbError> {
        self.check_connected()?;
        self.elapse(self.timing.control_ns);
        if self.faults.stall_request == Some(req) {
            self.faults.stall_request = None;
            return Err(UsbError::Stall);
        }
        if self.faults.timeout_request == Some(req) {
            self.faults.timeout_request = None;
            self.elapse(timeout.as_nanos() as u64);
            return Err(UsbError::Timeout);
        }
        Ok(())
    }

    /// Cut a bulk transfer if a disconnect is armed within it; returns the bytes allowed.
    fn bulk_budget(&mut self, len: usize) -> Result<usize, UsbError> {
        if let Some(left) = self.faults.disconnect_after_bulk_bytes {
            if (len as u64) > left {
                self.disconnected = true;
                self.faults.disconnect_after_bulk_bytes = None;
                return Err(UsbError::Disconnected);
            }
            self.faults.disconnect_after_bulk_bytes = Some(left - len as u64);
        }
        Ok(len)
    }

    /// Run one mode-0 TLP and leave its completion (if it has one) for the next 0xF0 IN.
    fn execute_single(&mut self, kind: TlpKind, byte_enable: u8, address: u64, data: u32) {
        let posted = kind.posted();
        if !self.link_up() {
            if !posted {
                self.completion = wire::completion(0, CplStatus::Success, 0xFF);
            }
            return;
        }
        if self.faults.engine_errors > 0 && !posted {
            self.faults.engine_errors -= 1;
            let code = self.faults.engine_error_code.max(1);
            self.completion = wire::completion(0, CplStatus::Success, code);
            return;
        }
        if let Some(status) = self.faults.completion_status {
            if !posted && self.faults.completion_status_count > 0 {
                self.faults.completion_status_count -= 1;
                if self.faults.completion_status_count == 0 {
                    self.faults.completion_status = None;
                }
                self.completion = wire::completion(0, status, 0);
                return;
            }
        }
        let config = |address| {
            let t = wire::config_target(address);
            let bdf = Bdf {
                bus: t.bus,
                dev: t.device,
                func: t.function,
            };
            (bdf, t.register)
        };
        let result: Result<u32, CplStatus> = match kind {
            TlpKind::ConfigRead { type1 } => {
                let (bdf, reg) = config(address);
                self.fabric.config_read(bdf, reg, type1)
            }
            TlpKind::ConfigWrite { type1 } => {
                let (bdf, reg) = config(address);
                self.fabric
                    .config_write(bdf, reg, type1, byte_enable, data)
                    .map(|_| 0)
            }
            TlpKind::MemRead => self.fabric.mem_read32(address),
            TlpKind::MemWrite => {
                self.fabric.mem_write32(address, byte_enable, data);
                return;
            }
            // Other posted TLPs (messages) are accepted and ignored; anything else is unsupported.
            k if k.posted() => return,
            _ => Err(CplStatus::UnsupportedRequest),
        };
        self.completion = match result {
            Ok(data) => wire::completion(data, CplStatus::Success, 0),
            Err(status) => wire::completion(0, status, 0),
        };
    }

    fn control_out(&mut self, setup: Setup, data: &[u8], t: Duration) -> Result<(), UsbError> {
        self.control_prologue(setup.request, t)?;
        let decoded = wire::decode_out(setup.request, setup.value, setup.index, data);
        match decoded.map_err(|_| UsbError::Stall)? {
            OutRequest::XdataWrite { address, value } => {
                // The LTSSM byte reflects link state; host writes to it are ignored (emulator choice).
                if address != XDATA_LTSSM {
                    *self.xdata_byte(address) = value;
                }
            }
            OutRequest::Tlp(TlpRequest::Single {
                kind,
                byte_enable,
                address,
                data,
            }) => self.execute_single(kind, byte_enable, address, data),
            OutRequest::Tlp(TlpRequest::StreamWrite { address, dwords }) => {
                self.out_queue.push_back(Consumer::Stream {
                    address,
                    len: 4 * dwords as usize,
                })
            }
            OutRequest::Tlp(TlpRequest::StreamRead { address, dwords }) => {
                self.in_queue.push_back(Consumer::Stream {
                    address,
                    len: 4 * dwords as usize,
                })
            }
            OutRequest::Sram(arm) => {
                let (offset, len) = (arm.offset(), arm.bytes());
                if len == 0 || offset + len > SRAM_BYTES {
                    return Err(UsbError::Stall);
                }
                if arm.to_host {
                    self.in_queue
                        .retain(|c| !matches!(c, Consumer::Sram { .. }));
                    self.in_queue.push_back(Consumer::Sram { offset, len });
                    self.read_released = false;
                } else {
                    let pending = self
                        .out_queue
                        .iter()
                        .filter(|c| matches!(c, Consumer::Sram { .. }))
                        .count();
                    if pending > self.max_pending_arms {
                        return Err(UsbError::Stall);
                    }
                    self.out_queue.push_back(Consumer::Sram { offset, len });
                }
            }
            OutRequest::Power { on } => {
                // Either direction restarts the PCIe side: pending streams and arms are dropped.
                self.out_queue.clear();
                self.in_queue.clear();
                self.read_released = false;
                if on {
                    if self.timing.link_train_ns >= t.as_nanos() as u64 {
                        self.elapse(t.as_nanos() as u64);
                        return Err(UsbError::Timeout);
                    }
                    self.elapse(self.timing.link_train_ns);
                    self.xdata[XDATA_LTSSM as usize] = if self.faults.link_fails_training {
                        LTSSM_DETECT
                    } else {
                        LTSSM_L0
                    };
                } else {
                    self.xdata[XDATA_LTSSM as usize] = LTSSM_DETECT;
                }
            }
        }
        Ok(())
    }

    fn control_in(&mut self, setup: Setup, buf: &mut [u8], t: Duration) -> Result<usize, UsbError> {
        self.control_prologue(setup.request, t)?;
        match wire::decode_in(setup.request, setup.value, buf.len()).map_err(|_| UsbError::Stall)? {
            InRequest::XdataRead { address, len } => {
                debug_assert!(len <= XDATA_READ_LIMIT);
                for (i, b) in buf.iter_mut().enumerate() {
                    *b = *self.xdata_byte(address + i as u16);
                }
                Ok(len)
            }
            InRequest::Completion => {
                let n = buf.len().min(COMPLETION_BYTES);
                buf[..n].copy_from_slice(&self.completion[..n]);
                Ok(n)
            }
        }
    }

    fn bulk_out(&mut self, ep: u8, data: &[u8], t: Duration) -> Result<usize, UsbError> {
        self.check_connected()?;
        if ep != EP_BULK_OUT {
            return Err(UsbError::Stall);
        }
        if self.faults.bulk_out_timeouts > 0 {
            self.faults.bulk_out_timeouts -= 1;
            self.elapse(t.as_nanos() as u64);
            return Err(UsbError::Timeout);
        }
        let len = self.bulk_budget(data.len())?;
        self.elapse(self.bulk_cost(len));
        let accepted = self
            .faults
            .short_bulk_out
            .take()
            .map_or(len, |n| n.min(len));
        let consumer = self.out_queue.pop_front().ok_or(UsbError::Stall)?;
        if accepted < len {
            // The firmware got a short transfer: the armed operation is abandoned.
            return Ok(accepted);
        }
        if consumer.len() != len {
            return Err(UsbError::Stall);
        }
        match consumer {
            Consumer::Stream { address, .. } => {
                if self.link_up() {
                    self.fabric.mem_write_burst(address, data);
                }
            }
            Consumer::Sram { offset, .. } => {
                self.sram[offset..offset + len].copy_from_slice(data);
            }
        }
        Ok(len)
    }

    fn bulk_in(&mut self, ep: u8, buf: &mut [u8], t: Duration) -> Result<usize, UsbError> {
        self.check_connected()?;
        if ep != EP_BULK_IN {
            return Err(UsbError::Stall);
        }
        let timeout_ns = t.as_nanos() as u64;
        if self.faults.bulk_in_timeouts > 0 {
            self.faults.bulk_in_timeouts -= 1;
            self.elapse(timeout_ns);
            return Err(UsbError::Timeout);
        }
        let ready = match self.in_queue.front() {
            None => false,
            Some(Consumer::Sram { .. }) => self.read_released,
            Some(Consumer::Stream { .. }) => self.link_up(),
        };
        if !ready {
            // Nothing to send yet: the host's transfer runs into its timeout.
            self.elapse(timeout_ns);
            return Err(UsbError::Timeout);
        }
        let Some(consumer) = self.in_queue.pop_front() else {
            return Err(UsbError::Timeout);
        };
        let len = consumer.len();
        let produced = match consumer {
            Consumer::Stream { address, .. } => {
                let mut bytes = vec![0u8; len];
                self.fabric.mem_read_burst(address, &mut bytes);
                bytes
            }
            Consumer::Sram { offset, .. } => {
                self.read_released = false;
                self.sram[offset..offset + len].to_vec()
            }
        };
        if buf.len() < len {
            return Err(UsbError::Overflow);
        }
        let len = self.bulk_budget(len)?;
        let n = self.faults.short_bulk_in.take().map_or(len, |s| s.min(len));
        buf[..n].copy_from_slice(&produced[..n]);
        self.elapse(self.bulk_cost(n));
        Ok(n)
    }

    /// One transfer, counted like the host-side `Counting` wrapper counts it.
    fn transfer(&mut self, t: Transfer<'_>, timeout: Duration) -> Result<usize, UsbError> {
        let issued = self.counters.issue(&t);
        let n = match t {
            Transfer::ControlOut(setup, data) => {
                self.control_out(setup, data, timeout).map(|()| data.len())
            }
            Transfer::ControlIn(setup, buf) => self.control_in(setup, buf, timeout),
            Transfer::BulkOut(endpoint, data) => self.bulk_out(endpoint, data, timeout),
            Transfer::BulkIn(endpoint, buf) => self.bulk_in(endpoint, buf, timeout),
        };
        self.service_devices();
        let n = n?;
        self.counters.moved(issued, n);
        Ok(n)
    }

    /// Let the endpoint's BAR models run the work the transfer started, with DMA into the windows.
    fn service_devices(&mut self) {
        let (mut bus, fabric) = self.split_windows();
        for bar in fabric.endpoint.bars.iter_mut().flatten() {
            bar.model.service(&mut bus);
        }
    }

    /// A submitted transfer runs at once; its failure (or a short bulk OUT) is latched for `wait_all`.
    fn submit(&mut self, t: Transfer<'_>, timeout: Duration) {
        let (expected, control) = (t.len(), t.is_control());
        let error = match self.transfer(t, timeout) {
            Ok(n) if control || n == expected => return,
            Ok(n) => UsbError::Short {
                expected,
                actual: n,
            },
            Err(e) => e,
        };
        self.latched.get_or_insert(error);
    }
}

impl UsbTransport for BridgeEmulator {
    fn transfer(&mut self, t: Transfer<'_>, timeout: Duration) -> Result<usize, UsbError> {
        lock(&self.state).transfer(t, timeout)
    }

    fn sleep(&mut self, duration: Duration) {
        lock(&self.state).elapse(duration.as_nanos() as u64);
    }

    fn submit(&mut self, t: Transfer<'_>, timeout: Duration) -> Result<(), UsbError> {
        lock(&self.state).submit(t, timeout);
        Ok(())
    }

    fn wait_all(&mut self) -> Result<(), UsbError> {
        match lock(&self.state).latched.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}
