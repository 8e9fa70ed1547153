//! GD25LQ16E SPI NOR model (docs/hw/navi31-spi-flash.md §5, §12 item 5) as a byte-level SPI target: chip select,
//! one byte exchanged per 8 clocks, commands executed at chip-select release like a real part.
//!
//! Modelled: JEDEC `C8 60 15`; SR1 (BUSY, WEL, BP/SRP), SR2 (CMP, QE …), SR3; WEL required for
//! erase/program/WRSR and cleared when they finish; BUSY for a configurable emulated time, during
//! which everything except the status reads is ignored; erase sets 4 KiB to 0xFF; program only
//! clears bits and wraps inside its 256-byte page (only the last 256 data bytes are kept);
//! protected areas are silently not modified; SFDP with one dummy byte; power loss in the middle
//! of an operation leaves it partially applied.
//!
//! Emulator choices (not in docs/hw/navi31-spi-flash.md, configurable where it matters):
//! * protection: BP bits all zero → CMP=0 protects nothing, CMP=1 protects the whole array (the
//!   case `--clear-cmp` exists for); any non-zero BP value is treated as protecting the whole
//!   array (the part's full BP/CMP table is not in the sources);
//! * busy times default to values well inside the tool's timeouts, not measured ones;
//! * an interrupted erase has erased a prefix of the sector proportional to the elapsed time, an
//!   interrupted program a prefix of its bytes (real cells may also be left marginal, which only
//!   hardware can show);
//! * bytes clocked out while nothing is driven (dummy cycles, ignored commands) read 0xFF.
//!
//! Fault injection for the tool's tests: [`ReadFlip`] flips bits of one array byte on chosen reads
//! of it (a transient error on the wire: the array keeps its value), [`Disturb`] clears bits of one
//! array byte when a chosen page program completes (a program disturb outside the page).
use std::fs::File;
use std::io::{Seek, SeekFrom, Write};

/// Chip size.
pub const SIZE: usize = 0x20_0000;
/// Erase sector.
pub const SECTOR: usize = 0x1000;
/// Program page.
pub const PAGE: usize = 0x100;
/// JEDEC id.
pub const JEDEC: [u8; 3] = [0xC8, 0x60, 0x15];
/// SR2.CMP.
pub const SR2_CMP: u8 = 0x40;
const SR1_BUSY: u8 = 0x01;
const SR1_WEL: u8 = 0x02;
const SR1_BP: u8 = 0x7C;

/// Timing and initial status of the model.
#[derive(Clone, Debug)]
pub struct Gd25Config {
    /// Sector erase busy time (ns).
    pub erase_ns: u64,
    /// Page program busy time (ns).
    pub program_ns: u64,
    /// Status-register write busy time (ns).
    pub wrsr_ns: u64,
    /// Non-volatile SR1 bits 7:2 at power-up.
    pub sr1: u8,
    /// SR2 at power-up.
    pub sr2: u8,
    /// SR3 at power-up.
    pub sr3: u8,
}

impl Default for Gd25Config {
    fn default() -> Self {
        Gd25Config {
            erase_ns: 45_000_000,
            program_ns: 600_000,
            wrsr_ns: 5_000_000,
            sr1: 0,
            sr2: 0,
            sr3: 0x60,
        }
    }
}

#[derive(Clone, Debug)]
enum Op {
    Erase { base: usize },
    Program { addr: usize, data: Vec<u8> },
    Wrsr { sr1: u8, sr2: Option<u8> },
}

#[derive(Clone, Debug)]
struct Busy {
    op: Op,
    total_ns: u64,
    elapsed_ns: u64,
}

/// Operation counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Gd25Stats {
    /// Erases started.
    pub erases: u64,
    /// Programs started.
    pub programs: u64,
    /// Erase/program commands ignored because of protection.
    pub protected_rejects: u64,
    /// Busy operations started (erase, program, WRSR), counted from power-on of the model.
    pub busy_ops: u64,
}

/// A transient read error: while reading the array byte at `addr` (command 0x03), its
/// `first`..`first + count` occurrences (0-based, counted from when the flip was scheduled) go out
/// XORed with `mask`. The array itself keeps its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadFlip {
    /// Array byte address.
    pub addr: usize,
    /// Bits flipped on the wire.
    pub mask: u8,
    /// First occurrence flipped.
    pub first: u32,
    /// Occurrences flipped.
    pub count: u32,
}

/// A program disturb: when the `program`-th page program (0-based, counted from when the disturb
/// was scheduled) completes, the bits `mask` of the array byte at `addr` are cleared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Disturb {
    /// Array byte address.
    pub addr: usize,
    /// Bits cleared.
    pub mask: u8,
    /// Which completed program triggers it.
    pub program: u64,
}

/// The flash chip.
pub struct Gd25 {
    cfg: Gd25Config,
    array: Vec<u8>,
    backing: Option<File>,
    io_error: Option<String>,
    sr1_nv: u8,
    sr2: u8,
    sr3: u8,
    wel: bool,
    busy: Option<Busy>,
    selected: bool,
    bytes: Vec<u8>,
    stats: Gd25Stats,
    read_flip: Option<(ReadFlip, u32)>,
    disturb: Option<(Disturb, u64)>,
}

/// SFDP table: header "SFDP", revision 1.6, one parameter header (JEDEC basic table, 16 dwords
/// at 0x30), and the start of a basic table describing 4 KiB erase (0x20) and 16 Mbit density.
fn sfdp_byte(addr: usize) -> u8 {
    const HDR: [u8; 16] = [
        b'S', b'F', b'D', b'P', 0x06, 0x01, 0x00, 0xFF, 0x00, 0x06, 0x01, 0x10, 0x30, 0x00, 0x00,
        0xFF,
    ];
    const BASIC: [u8; 8] = [0xE5, 0x20, 0xF1, 0xFF, 0xFF, 0xFF, 0xFF, 0x00];
    match addr {
        0..=15 => HDR[addr],
        0x30..=0x37 => BASIC[addr - 0x30],
        _ => 0xFF,
    }
}

impl Gd25 {
    /// A chip holding `array` (must be 2 MiB), optionally persisting changes to `backing`.
    pub fn new(array: Vec<u8>, backing: Option<File>, cfg: Gd25Config) -> Self {
        let (sr1_nv, sr2, sr3) = (cfg.sr1 & !(SR1_BUSY | SR1_WEL), cfg.sr2, cfg.sr3);
        Gd25 {
            cfg,
            array,
            backing,
            io_error: None,
            sr1_nv,
            sr2,
            sr3,
            wel: false,
            busy: None,
            selected: false,
            bytes: Vec::new(),
            stats: Gd25Stats::default(),
            read_flip: None,
            disturb: None,
        }
    }

    /// Arm a transient read error (replaces any armed one).
    pub fn schedule_read_flip(&mut self, flip: ReadFlip) {
        self.read_flip = Some((flip, 0));
    }

    /// Arm a program disturb (replaces any armed one).
    pub fn schedule_disturb(&mut self, disturb: Disturb) {
        self.disturb = Some((disturb, 0));
    }

    /// The array byte at `a` as it goes out on a read, after an armed [`ReadFlip`].
    fn read_byte(&mut self, a: usize) -> u8 {
        let v = self.array[a];
        match &mut self.read_flip {
            Some((f, seen)) if f.addr == a => {
                let n = *seen;
                *seen += 1;
                if n >= f.first && n - f.first < f.count {
                    v ^ f.mask
                } else {
                    v
                }
            }
            _ => v,
        }
    }

    /// Array contents (test back door).
    pub fn array(&self) -> &[u8] {
        &self.array
    }

    /// SR2 (test back door).
    pub fn sr2(&self) -> u8 {
        self.sr2
    }

    /// Counters.
    pub fn stats(&self) -> Gd25Stats {
        self.stats
    }

    /// First error writing the backing file, if any.
    pub fn io_error(&self) -> Option<&str> {
        self.io_error.as_deref()
    }

    /// Elapsed fraction (‰) of the running operation and the busy-op ordinal, if busy.
    pub(crate) fn busy_progress(&self) -> Option<(u64, u64, u64)> {
        self.busy
            .as_ref()
            .map(|b| (self.stats.busy_ops - 1, b.elapsed_ns, b.total_ns))
    }

    fn sr1(&self) -> u8 {
        self.sr1_nv
            | if self.wel { SR1_WEL } else { 0 }
            | if self.busy.is_some() { SR1_BUSY } else { 0 }
    }

    fn protected(&self) -> bool {
        let bp = self.sr1_nv & SR1_BP;
        bp != 0 || self.sr2 & SR2_CMP != 0
    }

    /// Chip select asserted.
    pub fn select(&mut self) {
        self.selected = true;
        self.bytes.clear();
    }

    /// Exchange one byte: `mosi` from the controller, returns MISO.
    pub fn exchange(&mut self, mosi: u8) -> u8 {
        if !self.selected {
            return 0xFF;
        }
        let i = self.bytes.len();
        self.bytes.push(mosi);
        if i == 0 {
            return 0xFF;
        }
        let opcode = self.bytes[0];
        let busy = self.busy.is_some();
        match opcode {
            0x05 => self.sr1(),
            0x35 => self.sr2,
            0x15 => self.sr3,
            _ if busy => 0xFF,
            0x9F => JEDEC[(i - 1) % 3],
            0x03 if i >= 4 => {
                let a = self.addr() + (i - 4);
                self.read_byte(a % SIZE)
            }
            0x5A if i >= 5 => sfdp_byte(self.addr() + (i - 5)),
            _ => 0xFF,
        }
    }

    fn addr(&self) -> usize {
        ((self.bytes[1] as usize) << 16) | ((self.bytes[2] as usize) << 8) | self.bytes[3] as usize
    }

    /// Chip select released: execute write-type commands.
    pub fn deselect(&mut self) {
        if !self.selected {
            return;
        }
        self.selected = false;
        if self.busy.is_some() || self.bytes.is_empty() {
            return;
        }
        let b = std::mem::take(&mut self.bytes);
        match b[0] {
            0x06 if b.len() == 1 => self.wel = true,
            0x04 if b.len() == 1 => self.wel = false,
            0x01 if self.wel && b.len() >= 2 => {
                let op = Op::Wrsr {
                    sr1: b[1],
                    sr2: b.get(2).copied(),
                };
                self.start(op, self.cfg.wrsr_ns);
            }
            0x20 if self.wel && b.len() == 4 => {
                let base = (self.addr_of(&b) % SIZE) & !(SECTOR - 1);
                if self.protected() {
                    self.stats.protected_rejects += 1;
                    self.wel = false;
                } else {
                    self.stats.erases += 1;
                    self.start(Op::Erase { base }, self.cfg.erase_ns);
                }
            }
            0x02 if self.wel && b.len() >= 5 => {
                let addr = self.addr_of(&b) % SIZE;
                let data = &b[4..];
                let keep = &data[data.len().saturating_sub(PAGE)..];
                if self.protected() {
                    self.stats.protected_rejects += 1;
                    self.wel = false;
                } else {
                    self.stats.programs += 1;
                    self.start(
                        Op::Program {
                            addr,
                            data: keep.to_vec(),
                        },
                        self.cfg.program_ns,
                    );
                }
            }
            _ => {}
        }
        self.bytes = b;
        self.bytes.clear();
    }

    fn addr_of(&self, b: &[u8]) -> usize {
        ((b[1] as usize) << 16) | ((b[2] as usize) << 8) | b[3] as usize
    }

    fn start(&mut self, op: Op, ns: u64) {
        self.stats.busy_ops += 1;
        self.busy = Some(Busy {
            op,
            total_ns: ns,
            elapsed_ns: 0,
        });
        if ns == 0 {
            self.advance(0);
        }
    }

    /// Let emulated time pass; finishes the running operation when its time is up.
    pub fn advance(&mut self, ns: u64) {
        let Some(b) = self.busy.as_mut() else { return };
        b.elapsed_ns = b.elapsed_ns.saturating_add(ns);
        if b.elapsed_ns >= b.total_ns {
            let b = self.busy.take().map(|b| b.op);
            if let Some(op) = b {
                self.apply(&op, 1000);
            }
            self.wel = false;
        }
    }

    /// Power lost: a running operation is applied in proportion to its elapsed time, volatile
    /// state is lost.
    pub fn power_loss(&mut self) {
        if let Some(b) = self.busy.take() {
            let permille = (b.elapsed_ns.saturating_mul(1000) / b.total_ns.max(1)).min(999);
            self.apply(&b.op, permille);
        }
        self.wel = false;
        self.selected = false;
        self.bytes.clear();
    }

    fn apply(&mut self, op: &Op, permille: u64) {
        match op {
            Op::Erase { base } => {
                let n = SECTOR * permille as usize / 1000;
                self.array[*base..*base + n].fill(0xFF);
                self.persist(*base, n);
            }
            Op::Program { addr, data } => {
                let n = data.len() * permille as usize / 1000;
                let page = addr & !(PAGE - 1);
                for (i, &d) in data[..n].iter().enumerate() {
                    let a = page + ((addr - page + i) % PAGE);
                    self.array[a] &= d;
                }
                if n > 0 {
                    self.persist(page, PAGE);
                }
                if permille == 1000 {
                    self.program_done();
                }
            }
            Op::Wrsr { sr1, sr2 } => {
                if permille == 1000 {
                    self.sr1_nv = sr1 & !(SR1_BUSY | SR1_WEL);
                    if let Some(s) = sr2 {
                        self.sr2 = *s;
                    }
                }
            }
        }
    }

    /// A page program completed: fire an armed [`Disturb`] whose turn it is.
    fn program_done(&mut self) {
        let Some((d, seen)) = &mut self.disturb else {
            return;
        };
        let n = *seen;
        *seen += 1;
        if n == d.program {
            let (addr, mask) = (d.addr % SIZE, d.mask);
            self.disturb = None;
            self.array[addr] &= !mask;
            self.persist(addr, 1);
        }
    }

    fn persist(&mut self, at: usize, len: usize) {
        let Some(f) = self.backing.as_mut() else {
            return;
        };
        if len == 0 || self.io_error.is_some() {
            return;
        }
        let r = f
            .seek(SeekFrom::Start(at as u64))
            .and_then(|_| f.write_all(&self.array[at..at + len]));
        if let Err(e) = r {
            self.io_error = Some(format!("writing the flash image file failed: {e}"));
        }
    }
}
