//! The [`BridgeEmulator`] builder: the endpoint's BARs, ids, REBAR sizes, timing, identity and the
//! power state at boot, assembled into the emulated fabric.
use super::fabric::{BarKind, Bridge as FabricBridge, Endpoint, Fabric, Rebar};
use super::faults::{Faults, LTSSM_DETECT};
use super::memory::SparseMemory;
use super::wire::{COMPLETION_BYTES, SRAM_BYTES};
use super::{BridgeEmulator, EmuState};
use crate::counting::TransferCounts;
use crate::emu::RegisterModel;
use crate::{LTSSM_L0, XDATA_LTSSM};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

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
