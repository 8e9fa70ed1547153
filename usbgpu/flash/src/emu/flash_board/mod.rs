//! The Navi31 flash board: a device model of BAR5 (docs/hw/navi31-spi-flash.md §12 (b)): the SMUIO ROM_SW SPI engine wired to a GD25LQ16E model,
//! the ROM_INDEX/ROM_DATA aperture and the PSP flash mailbox, with emulated time, gating, the RX
//! lag quirk, strict checking of the forced pad/mirror/ROM_CNTL values, power-loss injection and
//! flash faults (a bit flipped on a read, a program disturb).
//!
//! Backed by an image file for `--transport emu:IMAGE`: every completed (or power-cut, partially
//! applied) erase/program is written through to the file, so **writes persist**.
//!
//! Emulator choices (docs/hw/navi31-spi-flash.md §13 marks them inferred/unknown), each explicit in [`Navi31Config`]:
//! * transaction trigger: a ROM_SW_CNTL write that follows a ROM_SW_COMMAND write starts the
//!   transaction (the consistent model of docs/hw/navi31-spi-flash.md §3); other CNTL writes only store the value;
//! * RX lag: [`RxLag`] selects whether the window shows the previous transaction of any type
//!   (default) or the previous RX transaction; TX transactions capture nothing (zeros);
//! * the ROM_SW_DATA registers read the RX window; writes fill a separate TX buffer;
//! * address bytes on the wire: with n address bytes the low n bytes of the 24-bit field go out
//!   MSB first (only 0 and 3 are used by the tools);
//! * wrong forced values (`strict_forced`): the SPI pads are not routed, so the flash sees nothing
//!   and RX bytes read 0xFF; the transaction still completes;
//! * transactions complete instantly unless `spi_ns_per_byte` models wire time; ROM_CNTL does
//!   not gate the aperture; powered-off reads
//!   return all-ones (like a device that fell off the bus) and writes are dropped;
//! * reset values of the pad/mirror/ROM_CNTL registers are invented (SPI pad bits set, mirror
//!   field 0) so the forced-value check has something to catch.
pub mod gd25;
pub mod psp;

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::Read;
use std::path::Path;

use crate::navi31::regs::*;
pub use gd25::{Disturb, Gd25, Gd25Config, ReadFlip};
use modelrt_asm24::emu::RegisterModel;
pub use psp::{InjectError, Psp, PspConfig, PspPhase};

/// BAR5 size of the model.
pub const BAR5_SIZE: u64 = 0x10_0000;

/// Whether the ROM_SW engine works.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EngineMode {
    /// PSP bootloader stalled (empty/corrupt flash): romless access works.
    Available,
    /// Healthy autonomous boot: STATUS reads 0x04000800, transactions never complete.
    Gated,
}

/// Which transaction's capture the RX window exposes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RxLag {
    /// The capture of the previous transaction of any type.
    AnyTransaction,
    /// The capture of the previous RX transaction.
    PreviousRx,
}

/// When to cut the emulated power.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PowerCut {
    /// Just before the `occurrence`-th (0-based) SPI transaction with `opcode` reaches the flash.
    BeforeCommand { opcode: u8, occurrence: u32 },
    /// When the `occurrence`-th (0-based) busy operation (erase/program/WRSR, counted since the model was created) has
    /// run for `permille`/1000 of its time.
    DuringBusy { occurrence: u64, permille: u64 },
    /// Just before the first SPI transaction with `opcode` that follows a transaction with `after`
    /// (e.g. `opcode` READ after PROGRAM: the sector is programmed, its read-back not started).
    BeforeCommandAfter { opcode: u8, after: u8 },
}

/// Model configuration.
#[derive(Clone, Debug)]
pub struct Navi31Config {
    /// ROM_SW engine availability.
    pub engine: EngineMode,
    /// RX lag model.
    pub rx_lag: RxLag,
    /// Require the forced pad/mirror/ROM_CNTL values during transactions.
    pub strict_forced: bool,
    /// Whether the raw SMUIO ROM controller exists (else ROM_CNTL reads all-ones).
    pub raw_controller: bool,
    /// Aperture fault: ignore address bit 20 (mirrored halves).
    pub aperture_mirror_fault: bool,
    /// Emulated wire time per SPI byte of a ROM_SW transaction (ns); STATUS.done appears after
    /// `(1 + address bytes + data bytes) ×` this. 0 = done at once (emulator choice; the real
    /// SCK rate behind the prescaler is not documented).
    pub spi_ns_per_byte: u64,
    /// Flash chip timing/status.
    pub flash: Gd25Config,
    /// PSP mailbox.
    pub psp: PspConfig,
}

impl Default for Navi31Config {
    fn default() -> Self {
        Navi31Config {
            engine: EngineMode::Available,
            rx_lag: RxLag::AnyTransaction,
            strict_forced: true,
            raw_controller: true,
            aperture_mirror_fault: false,
            spi_ns_per_byte: 0,
            flash: Gd25Config::default(),
            psp: PspConfig::default(),
        }
    }
}

/// Reset value of ROM_CNTL (emulator choice).
pub const RESET_ROM_CNTL: u32 = 0x0300_0002;
/// Reset value of PAGE_MIRROR_CNTL (emulator choice).
pub const RESET_MIRROR: u32 = 0x0000_0011;
/// Reset value of GPIO_PAD_MASK / A / EN (emulator choice).
pub const RESET_PADS: [u32; 3] = [0x0000_07FF, 0x0000_0780, 0x0000_0F80];

/// Counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Navi31Stats {
    /// ROM_SW transactions executed.
    pub spi_transactions: u64,
    /// Transactions started with wrong forced values.
    pub misrouted_transactions: u64,
    /// Aperture ROM_DATA reads.
    pub aperture_reads: u64,
    /// Power cuts that happened.
    pub power_cuts: u64,
}

/// The BAR5 model.
pub struct Navi31Bar5 {
    cfg: Navi31Config,
    flash: Gd25,
    psp: Psp,
    regs: HashMap<u64, u32>,
    sw_cntl: u32,
    sw_status: u32,
    sw_command: u32,
    armed: bool,
    sw_pending_ns: Option<u64>,
    tx: [u32; 64],
    window: [u32; 64],
    last_capture: [u32; 64],
    index: u32,
    powered: bool,
    clock_ns: u64,
    cut: Option<PowerCut>,
    cut_after_seen: bool,
    opcode_counts: [u32; 256],
    stats: Navi31Stats,
}

impl Navi31Bar5 {
    /// A model whose flash holds `image` (exactly 2 MiB), not backed by a file.
    pub fn new(image: Vec<u8>, cfg: Navi31Config) -> Result<Self, String> {
        Self::with_backing(image, None, cfg)
    }

    /// A model backed by the image file at `path` (read now, written through on every change).
    pub fn open_image(path: &Path, cfg: Navi31Config) -> Result<Self, String> {
        let err = |e: std::io::Error| format!("flash image {}: {e}", path.display());
        let mut f = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(err)?;
        let mut image = Vec::new();
        f.read_to_end(&mut image).map_err(err)?;
        Self::with_backing(image, Some(f), cfg)
    }

    fn with_backing(
        image: Vec<u8>,
        backing: Option<File>,
        cfg: Navi31Config,
    ) -> Result<Self, String> {
        if image.len() != gd25::SIZE {
            return Err(format!(
                "flash image is {} bytes, the emulated GD25LQ16E holds exactly {}",
                image.len(),
                gd25::SIZE
            ));
        }
        let flash = Gd25::new(image, backing, cfg.flash.clone());
        let psp = Psp::new(cfg.psp.clone());
        let mut m = Navi31Bar5 {
            cfg,
            flash,
            psp,
            regs: HashMap::new(),
            sw_cntl: 0,
            sw_status: 0,
            sw_command: 0,
            armed: false,
            sw_pending_ns: None,
            tx: [0; 64],
            window: [0; 64],
            last_capture: [0; 64],
            index: 0,
            powered: true,
            clock_ns: 0,
            cut: None,
            cut_after_seen: false,
            opcode_counts: [0; 256],
            stats: Navi31Stats::default(),
        };
        m.reset_registers();
        Ok(m)
    }

    fn reset_registers(&mut self) {
        self.regs.clear();
        self.regs.insert(
            ROM_CNTL,
            if self.cfg.raw_controller {
                RESET_ROM_CNTL
            } else {
                ALL_ONES
            },
        );
        self.regs.insert(PAGE_MIRROR_CNTL, RESET_MIRROR);
        self.regs.insert(GPIO_PAD_MASK, RESET_PADS[0]);
        self.regs.insert(GPIO_PAD_A, RESET_PADS[1]);
        self.regs.insert(GPIO_PAD_EN, RESET_PADS[2]);
        self.regs.insert(ROM_INDEX, 0);
        self.sw_cntl = 0;
        self.sw_status = 0;
        self.sw_command = 0;
        self.armed = false;
        self.sw_pending_ns = None;
        self.tx = [0; 64];
        self.window = [0; 64];
        self.last_capture = [0; 64];
        self.index = 0;
        self.opcode_counts = [0; 256];
    }

    /// The flash chip (back door for tests and the CLI's persistence check).
    pub fn flash(&self) -> &Gd25 {
        &self.flash
    }

    /// The PSP mailbox model.
    pub fn psp(&self) -> &Psp {
        &self.psp
    }

    /// Counters.
    pub fn stats(&self) -> Navi31Stats {
        self.stats
    }

    /// A plain register value (pads, mirror, ROM_CNTL, ROM_INDEX).
    pub fn reg(&self, offset: u64) -> u32 {
        self.regs.get(&offset).copied().unwrap_or(0)
    }

    /// Switch the ROM_SW engine between available and gated (e.g. the PSP finished booting).
    pub fn set_engine_mode(&mut self, mode: EngineMode) {
        self.cfg.engine = mode;
    }

    /// Emulated time since the model was created (ns).
    pub fn clock_ns(&self) -> u64 {
        self.clock_ns
    }

    /// Whether the board is powered.
    pub fn powered(&self) -> bool {
        self.powered
    }

    /// Arm a power cut (counters restart at the next power-on).
    pub fn schedule_power_cut(&mut self, cut: PowerCut) {
        self.cut = Some(cut);
        self.cut_after_seen = false;
    }

    /// Arm a transient read error on the flash (the tool's backup and read-back checks).
    pub fn schedule_read_flip(&mut self, flip: ReadFlip) {
        self.flash.schedule_read_flip(flip);
    }

    /// Arm a program disturb on the flash (the tool's final whole-chip compare).
    pub fn schedule_disturb(&mut self, disturb: Disturb) {
        self.flash.schedule_disturb(disturb);
    }

    /// Disarm a scheduled power cut that has not fired.
    pub fn cancel_power_cut(&mut self) {
        self.cut = None;
    }

    /// Cut the power now.
    pub fn power_off(&mut self) {
        if self.powered {
            self.powered = false;
            self.stats.power_cuts += 1;
            self.flash.power_loss();
        }
    }

    /// Power the board back on ("reboot"): registers, engine and mailbox return to reset state;
    /// the flash keeps its (possibly partially modified) array and non-volatile status bits.
    pub fn power_on(&mut self) {
        self.powered = true;
        self.cut = None;
        self.reset_registers();
        self.psp = Psp::new(self.cfg.psp.clone());
    }

    fn forced_ok(&self) -> bool {
        let pads = [GPIO_PAD_MASK, GPIO_PAD_A, GPIO_PAD_EN]
            .iter()
            .all(|&r| self.reg(r) & GPIO_SPI_PAD_BITS == 0);
        let mirror = self.reg(PAGE_MIRROR_CNTL) & MIRROR_FIELD_MASK == MIRROR_FIELD_FORCED;
        let cntl = self.reg(ROM_CNTL) & 0xF == ROM_CNTL_FORCED_NIBBLE;
        pads && mirror && cntl
    }

    fn transaction(&mut self) {
        let opcode = (self.sw_command & 0xFF) as u8;
        if let Some(PowerCut::BeforeCommand {
            opcode: o,
            occurrence,
        }) = self.cut
        {
            if o == opcode && self.opcode_counts[opcode as usize] == occurrence {
                self.power_off();
                return;
            }
        }
        if let Some(PowerCut::BeforeCommandAfter { opcode: o, after }) = self.cut {
            if o == opcode && self.cut_after_seen {
                self.power_off();
                return;
            }
            self.cut_after_seen |= opcode == after;
        }
        self.opcode_counts[opcode as usize] += 1;
        self.stats.spi_transactions += 1;
        let address = self.sw_command >> 8;
        let addr_len = ((self.sw_cntl >> SW_CNTL_ADDR_SHIFT) & 3) as usize;
        let rx = self.sw_cntl & SW_CNTL_RETURN_DATA_EN != 0;
        let count = ((self.sw_cntl & SW_CNTL_COUNT_MASK) as usize).min(SW_MAX_DATA);
        let routed = !self.cfg.strict_forced || self.forced_ok();
        if !routed {
            self.stats.misrouted_transactions += 1;
        }
        let mut capture = [0u32; 64];
        if routed {
            self.flash.select();
            self.flash.exchange(opcode);
            for k in 0..addr_len {
                let shift = 8 * (addr_len - 1 - k);
                self.flash.exchange((address >> shift) as u8);
            }
        }
        if rx {
            let mut bytes = [0xFFu8; SW_MAX_DATA];
            if routed {
                for b in bytes.iter_mut().take(count) {
                    *b = self.flash.exchange(0);
                }
            }
            for (k, b) in bytes.iter().take(count).enumerate() {
                capture[k / 4] |= (*b as u32) << (8 * (k % 4));
            }
        } else if routed {
            for k in 0..count {
                let byte = self.tx[k / 4].to_be_bytes()[k % 4];
                self.flash.exchange(byte);
            }
        }
        if routed {
            self.flash.deselect();
        }
        if rx || self.cfg.rx_lag == RxLag::AnyTransaction {
            self.window = self.last_capture;
            self.last_capture = capture;
        }
        let wire_ns = (1 + addr_len + count) as u64 * self.cfg.spi_ns_per_byte;
        if wire_ns == 0 {
            self.sw_status |= SW_STATUS_DONE;
        } else {
            self.sw_pending_ns = Some(wire_ns);
        }
    }
}

impl RegisterModel for Navi31Bar5 {
    fn size(&self) -> u64 {
        BAR5_SIZE
    }

    fn read32(&mut self, offset: u64) -> u32 {
        if !self.powered {
            return ALL_ONES;
        }
        let gated = self.cfg.engine == EngineMode::Gated;
        match offset {
            ROM_SW_STATUS if gated => SW_STATUS_GATED,
            ROM_SW_CNTL => self.sw_cntl,
            ROM_SW_STATUS => self.sw_status,
            ROM_SW_COMMAND => self.sw_command,
            o if (ROM_SW_DATA..ROM_SW_DATA + 256).contains(&o) => {
                self.window[((o - ROM_SW_DATA) / 4) as usize]
            }
            ROM_DATA => {
                self.stats.aperture_reads += 1;
                let mut a = self.index as usize % gd25::SIZE;
                if self.cfg.aperture_mirror_fault {
                    a &= !(1 << 20);
                }
                let arr = self.flash.array();
                let v = u32::from_le_bytes([
                    arr[a],
                    arr[(a + 1) % gd25::SIZE],
                    arr[(a + 2) % gd25::SIZE],
                    arr[(a + 3) % gd25::SIZE],
                ]);
                self.index = self.index.wrapping_add(4);
                v
            }
            ROM_INDEX => self.index,
            PSP_COMMAND => self.psp.read_command(),
            PSP_COMMAND_DATA => self.psp.read_data(),
            ROM_CNTL if !self.cfg.raw_controller => ALL_ONES,
            o => self.regs.get(&o).copied().unwrap_or(0),
        }
    }

    fn write32(&mut self, offset: u64, value: u32) {
        if !self.powered {
            return;
        }
        let gated = self.cfg.engine == EngineMode::Gated;
        match offset {
            ROM_SW_CNTL => {
                self.sw_cntl = value;
                if self.armed && !gated {
                    self.armed = false;
                    self.transaction();
                }
            }
            ROM_SW_STATUS => self.sw_status = value,
            ROM_SW_COMMAND => {
                self.sw_command = value;
                self.armed = true;
            }
            o if (ROM_SW_DATA..ROM_SW_DATA + 256).contains(&o) => {
                self.tx[((o - ROM_SW_DATA) / 4) as usize] = value
            }
            ROM_INDEX => self.index = value,
            PSP_COMMAND => self.psp.write_command(value),
            PSP_COMMAND_DATA => self.psp.write_data(value),
            PSP_DOORBELL => self.psp.doorbell(value),
            ROM_CNTL if !self.cfg.raw_controller => {}
            o => {
                self.regs.insert(o, value);
            }
        }
    }

    fn advance(&mut self, ns: u64) {
        self.clock_ns = self.clock_ns.saturating_add(ns);
        if !self.powered {
            return;
        }
        if let Some(PowerCut::DuringBusy {
            occurrence,
            permille,
        }) = self.cut
        {
            if let Some((ord, elapsed, total)) = self.flash.busy_progress() {
                let at = total * permille / 1000;
                if ord == occurrence && elapsed + ns >= at {
                    self.flash.advance(at.saturating_sub(elapsed));
                    self.power_off();
                    return;
                }
            }
        }
        if let Some(left) = self.sw_pending_ns {
            if ns >= left {
                self.sw_pending_ns = None;
                self.sw_status |= SW_STATUS_DONE;
            } else {
                self.sw_pending_ns = Some(left - ns);
            }
        }
        self.flash.advance(ns);
        self.psp.advance(ns);
    }
}
