//! Device model (emulator) of the ASM24 bridge (custom firmware) with a PCIe fabric and a GPU endpoint behind
//! it, driven through the same [`UsbTransport`](modelrt_hal::usb::UsbTransport) trait as the real device (docs/hw/asm24-bridge.md §12).
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
//! (docs/hw/asm24-bridge.md), never by the driver's encoders in `proto`.
//!
//! Files: this one holds the shared state; `builder.rs` assembles the fabric and endpoint,
//! `handle.rs` is the second handle (counters, faults, GPU-side DMA), `windows.rs` the DMA windows
//! as the GPU sees them, `engine.rs` the request engine (control and bulk transfers, TLPs, arms).
mod builder;
mod engine;
pub mod fabric;
pub mod faults;
mod handle;
pub mod memory;
mod windows;
pub mod wire;

pub use self::builder::{Builder, Identity, Timing, DEFAULT_VRAM};
pub use self::handle::{DmaError, EmuHandle};

use self::engine::Consumer;
use self::fabric::Fabric;
use self::faults::Faults;
use self::wire::COMPLETION_BYTES;
use crate::counting::TransferCounts;
use modelrt_hal::usb::UsbError;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

pub use self::fabric::BarKind as EmuBarKind;

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

/// The emulated bridge as a USB transport.
pub struct BridgeEmulator {
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
