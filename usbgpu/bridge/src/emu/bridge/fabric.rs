//! The emulated PCIe fabric behind the bridge (docs/hw/asm24-bridge.md §7.6, §12 items 7–8): a chain of
//! type-1 bridges (bus 0..3 by default) and one type-0 endpoint with real BAR sizing semantics, a
//! resizable-BAR capability and BAR contents routed to pluggable [`RegisterModel`]s.
//!
//! Routing follows PCIe rules rather than the reference driver's order of operations:
//! - type-0 config TLPs reach only bus 0; a type-1 TLP to bus `b` is forwarded by each bridge whose
//!   `secondary < b ≤ subordinate` and converted to type 0 by the bridge whose secondary bus is `b`, so
//!   buses below a bridge are unreachable until its bus numbers are programmed (→ UR);
//! - only device 0 exists below each link (other dev/fn → UR);
//! - memory TLPs pass a bridge only with its memory-space enable set and the address inside its
//!   memory or prefetchable window, and hit an endpoint BAR only with the endpoint's memory enable set.
//!
//! Emulator choices where docs/hw/asm24-bridge.md says nothing: bridges have no capability list and Secondary Bus
//! Reset is accepted but has no effect; partial-byte-enable memory writes are a read-modify-write of
//! the dword in the model; BAR models see offsets relative to the BAR.
use super::super::RegisterModel;
use crate::proto::CplStatus;
use modelrt_hal::pci::Bdf;

/// Shape of one endpoint BAR.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BarKind {
    pub is_64bit: bool,
    pub prefetchable: bool,
}

impl BarKind {
    /// 64-bit prefetchable (VRAM style).
    pub const MEM64_PREF: BarKind = BarKind {
        is_64bit: true,
        prefetchable: true,
    };
    /// 32-bit non-prefetchable (register style).
    pub const MEM32: BarKind = BarKind {
        is_64bit: false,
        prefetchable: false,
    };

    fn type_bits(self) -> u32 {
        (if self.is_64bit { 0x4 } else { 0 }) | (if self.prefetchable { 0x8 } else { 0 })
    }
}

/// A BAR of the endpoint: address register with hard-wired zero bits below its size.
pub struct EndpointBar {
    pub kind: BarKind,
    pub model: Box<dyn RegisterModel>,
    /// Programmed address (bits below the size are always 0).
    address: u64,
}

/// The REBAR capability (one resizable BAR).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rebar {
    /// BAR index it controls.
    pub bar: u8,
    /// Supported sizes: bit n set = 2^(20+n) bytes (the capability's bits 31:4 shifted down).
    pub supported: u32,
    /// Current size index.
    pub index: u8,
}

/// Offset of the REBAR capability in extended config space.
pub const REBAR_OFFSET: u16 = 0x100;

/// The type-0 endpoint (the GPU).
pub struct Endpoint {
    pub vendor: u16,
    pub device: u16,
    pub revision: u8,
    pub class: u32,
    command: u16,
    pub bars: [Option<EndpointBar>; 6],
    pub rebar: Option<Rebar>,
    /// Plain storage for the rest of config space (writable bytes outside the modelled registers).
    scratch: Box<[u8; 4096]>,
}

/// One type-1 bridge of the chain.
pub struct Bridge {
    pub vendor: u16,
    pub device: u16,
    cfg: Box<[u8; 4096]>,
}

fn rd16(c: &[u8], o: usize) -> u16 {
    u16::from_le_bytes([c[o], c[o + 1]])
}
fn rd32(c: &[u8], o: usize) -> u32 {
    u32::from_le_bytes([c[o], c[o + 1], c[o + 2], c[o + 3]])
}

impl Bridge {
    pub fn new(vendor: u16, device: u16) -> Self {
        let mut cfg = Box::new([0u8; 4096]);
        cfg[0..2].copy_from_slice(&vendor.to_le_bytes());
        cfg[2..4].copy_from_slice(&device.to_le_bytes());
        cfg[0x08..0x0C].copy_from_slice(&0x0604_0000u32.to_le_bytes()); // PCI-to-PCI bridge
        cfg[0x0E] = 0x01; // header type 1
        cfg[0x24] = 0x01; // 64-bit prefetchable window (RO low nibble)
        cfg[0x26] = 0x01;
        Bridge {
            vendor,
            device,
            cfg,
        }
    }

    /// Writable bits of config byte `o`.
    fn write_mask(o: usize) -> u8 {
        match o {
            0x04 => 0x07, // IO | MEM | BUS_MASTER
            0x18..=0x1B => 0xFF,
            0x20 | 0x22 | 0x24 | 0x26 => 0xF0,
            0x21 | 0x23 | 0x25 | 0x27 => 0xFF,
            0x28..=0x2F => 0xFF,
            0x3C | 0x3E | 0x3F => 0xFF,
            _ => 0,
        }
    }

    pub fn read(&self, reg: u16) -> u32 {
        rd32(&self.cfg[..], reg as usize & 0xFFC)
    }

    pub fn write(&mut self, reg: u16, be: u8, value: u32) {
        let base = reg as usize & 0xFFC;
        for i in 0..4 {
            if be & (1 << i) != 0 {
                let m = Self::write_mask(base + i);
                let b = (value >> (8 * i)) as u8;
                self.cfg[base + i] = (self.cfg[base + i] & !m) | (b & m);
            }
        }
    }

    pub fn secondary(&self) -> u8 {
        self.cfg[0x19]
    }
    pub fn subordinate(&self) -> u8 {
        self.cfg[0x1A]
    }
    fn mem_enabled(&self) -> bool {
        self.cfg[0x04] & 0x2 != 0
    }

    /// Does this bridge forward a memory TLP at `addr` downstream?
    pub fn forwards(&self, addr: u64) -> bool {
        if !self.mem_enabled() {
            return false;
        }
        let mb = ((rd16(&self.cfg[..], 0x20) & 0xFFF0) as u64) << 16;
        let ml = (((rd16(&self.cfg[..], 0x22) & 0xFFF0) as u64) << 16) | 0xF_FFFF;
        let pb = ((rd32(&self.cfg[..], 0x28) as u64) << 32)
            | (((rd16(&self.cfg[..], 0x24) & 0xFFF0) as u64) << 16);
        let pl = ((rd32(&self.cfg[..], 0x2C) as u64) << 32)
            | (((rd16(&self.cfg[..], 0x26) & 0xFFF0) as u64) << 16)
            | 0xF_FFFF;
        (mb <= ml && (mb..=ml).contains(&addr)) || (pb <= pl && (pb..=pl).contains(&addr))
    }
}

impl Endpoint {
    pub fn new(vendor: u16, device: u16) -> Self {
        Endpoint {
            vendor,
            device,
            revision: 0xC8,
            class: 0x03_0000,
            command: 0,
            bars: Default::default(),
            rebar: None,
            scratch: Box::new([0u8; 4096]),
        }
    }

    /// Current size of BAR `i` in bytes (REBAR-controlled or the model's size).
    pub fn bar_size(&self, i: usize) -> u64 {
        match (&self.bars[i], self.rebar) {
            (Some(_), Some(r)) if r.bar as usize == i => 1u64 << (20 + r.index as u32),
            (Some(b), _) => b.model.size().next_power_of_two().max(16),
            (None, _) => 0,
        }
    }

    /// (BAR index, dword half) owning config register `reg` in 0x10..0x24.
    fn bar_slot(&self, reg: u16) -> Option<(usize, bool)> {
        if !(0x10..0x28).contains(&reg) {
            return None;
        }
        let i = ((reg - 0x10) / 4) as usize;
        if self.bars[i].is_some() {
            return Some((i, false));
        }
        if i > 0 && self.bars[i - 1].as_ref().is_some_and(|b| b.kind.is_64bit) {
            return Some((i - 1, true));
        }
        None
    }

    pub fn read(&self, reg: u16) -> u32 {
        let reg = reg & 0xFFC;
        match reg {
            0x00 => self.vendor as u32 | (self.device as u32) << 16,
            0x04 => self.command as u32,
            0x08 => self.class << 8 | self.revision as u32,
            0x0C => 0, // header type 0, single function
            0x10..=0x27 => match self.bar_slot(reg) {
                Some((i, high)) => {
                    let bar = self.bars[i].as_ref().map(|b| (b.address, b.kind));
                    let (addr, kind) = bar.unwrap_or((0, BarKind::MEM32));
                    if high {
                        (addr >> 32) as u32
                    } else {
                        (addr as u32 & 0xFFFF_FFF0) | kind.type_bits()
                    }
                }
                None => 0,
            },
            REBAR_OFFSET => match self.rebar {
                Some(_) => 0x0001_0015, // id 0x15, version 1, next 0
                None => 0,
            },
            o if o == REBAR_OFFSET + 4 => self.rebar.map_or(0, |r| r.supported << 4),
            o if o == REBAR_OFFSET + 8 => self
                .rebar
                .map_or(0, |r| (r.bar as u32) | 1 << 5 | (r.index as u32) << 8),
            _ => rd32(&self.scratch[..], reg as usize),
        }
    }

    pub fn write(&mut self, reg: u16, be: u8, value: u32) {
        let reg = reg & 0xFFC;
        let merged = |old: u32| {
            let mut v = old;
            for i in 0..4 {
                if be & (1 << i) != 0 {
                    v = (v & !(0xFF << (8 * i))) | (value & (0xFF << (8 * i)));
                }
            }
            v
        };
        match reg {
            0x00 | 0x08 | 0x0C => {}
            0x04 => self.command = (merged(self.command as u32) & 0x07) as u16,
            0x10..=0x27 => {
                if let Some((i, high)) = self.bar_slot(reg) {
                    let size = self.bar_size(i);
                    let mask = !(size.max(16) - 1);
                    if let Some(bar) = self.bars[i].as_mut() {
                        let cur = if high {
                            (bar.address >> 32) as u32
                        } else {
                            bar.address as u32
                        };
                        let v = merged(cur) as u64;
                        let addr = if high {
                            (bar.address & 0xFFFF_FFFF) | v << 32
                        } else {
                            (bar.address & !0xFFFF_FFFF) | v
                        };
                        let addr = if bar.kind.is_64bit {
                            addr
                        } else {
                            addr & 0xFFFF_FFFF
                        };
                        bar.address = addr & mask;
                    }
                }
            }
            o if o == REBAR_OFFSET + 8 => {
                if let Some(mut r) = self.rebar {
                    let idx = ((merged(self.read(o)) >> 8) & 0x1F) as u8;
                    // Only supported sizes are accepted (an unsupported value leaves the size unchanged).
                    if idx < 32 && r.supported & (1 << idx) != 0 {
                        r.index = idx;
                        self.rebar = Some(r);
                        let size = self.bar_size(r.bar as usize);
                        if let Some(b) = self.bars[r.bar as usize].as_mut() {
                            b.address &= !(size - 1);
                        }
                    }
                }
            }
            o if (REBAR_OFFSET..REBAR_OFFSET + 12).contains(&o) => {}
            _ => {
                let v = merged(rd32(&self.scratch[..], reg as usize));
                self.scratch[reg as usize..reg as usize + 4].copy_from_slice(&v.to_le_bytes());
            }
        }
    }

    /// The BAR and offset a memory address decodes to.
    pub fn decode(&self, addr: u64) -> Option<(usize, u64)> {
        if self.command & 0x2 == 0 {
            return None;
        }
        (0..6).find_map(|i| {
            let bar = self.bars[i].as_ref()?;
            let size = self.bar_size(i);
            (addr >= bar.address && addr - bar.address < size).then(|| (i, addr - bar.address))
        })
    }

    pub fn add_bar(&mut self, index: usize, kind: BarKind, model: Box<dyn RegisterModel>) {
        self.bars[index] = Some(EndpointBar {
            kind,
            model,
            address: 0,
        });
    }
}

/// Where a config TLP lands.
enum ConfigTarget {
    Bridge(usize),
    Endpoint,
}

/// Bridge chain + endpoint.
pub struct Fabric {
    pub bridges: Vec<Bridge>,
    pub endpoint: Endpoint,
}

impl Fabric {
    fn element_for(&self, bdf: Bdf, type1: bool) -> Option<ConfigTarget> {
        let chain_len = self.bridges.len() + 1;
        let element = if !type1 {
            (bdf.bus == 0).then_some(0)?
        } else {
            if bdf.bus == 0 {
                return None;
            }
            let mut k = 0;
            loop {
                let br = self.bridges.get(k)?;
                if br.secondary() == bdf.bus {
                    break k + 1;
                }
                if br.secondary() < bdf.bus && bdf.bus <= br.subordinate() && br.secondary() != 0 {
                    k += 1;
                    continue;
                }
                return None;
            }
        };
        if bdf.dev != 0 || bdf.func != 0 || element >= chain_len {
            return None;
        }
        Some(if element < self.bridges.len() {
            ConfigTarget::Bridge(element)
        } else {
            ConfigTarget::Endpoint
        })
    }

    /// Config read (dword-aligned `reg`); `Err` = completion status.
    pub fn config_read(&self, bdf: Bdf, reg: u16, type1: bool) -> Result<u32, CplStatus> {
        match self
            .element_for(bdf, type1)
            .ok_or(CplStatus::UnsupportedRequest)?
        {
            ConfigTarget::Bridge(i) => Ok(self.bridges[i].read(reg)),
            ConfigTarget::Endpoint => Ok(self.endpoint.read(reg)),
        }
    }

    /// Config write with byte enables.
    pub fn config_write(
        &mut self,
        bdf: Bdf,
        reg: u16,
        type1: bool,
        be: u8,
        value: u32,
    ) -> Result<(), CplStatus> {
        match self
            .element_for(bdf, type1)
            .ok_or(CplStatus::UnsupportedRequest)?
        {
            ConfigTarget::Bridge(i) => self.bridges[i].write(reg, be, value),
            ConfigTarget::Endpoint => self.endpoint.write(reg, be, value),
        }
        Ok(())
    }

    /// Route a memory address to (BAR index, offset), or UR.
    pub fn route(&self, addr: u64) -> Result<(usize, u64), CplStatus> {
        if !self.bridges.iter().all(|b| b.forwards(addr)) {
            return Err(CplStatus::UnsupportedRequest);
        }
        let (i, off) = self
            .endpoint
            .decode(addr)
            .ok_or(CplStatus::UnsupportedRequest)?;
        let model_size = self.endpoint.bars[i].as_ref().map_or(0, |b| b.model.size());
        if off + 4 > model_size {
            return Err(CplStatus::UnsupportedRequest);
        }
        Ok((i, off))
    }

    /// Memory read of the dword at `addr` (dword-aligned).
    pub fn mem_read32(&mut self, addr: u64) -> Result<u32, CplStatus> {
        let (i, off) = self.route(addr)?;
        let bar = self.endpoint.bars[i]
            .as_mut()
            .ok_or(CplStatus::UnsupportedRequest)?;
        Ok(bar.model.read32(off))
    }

    /// Memory write with byte enables (partial = read-modify-write). Unclaimed writes are dropped
    /// (posted: nobody is told); returns whether a BAR claimed it.
    pub fn mem_write32(&mut self, addr: u64, be: u8, value: u32) -> bool {
        let Ok((i, off)) = self.route(addr) else {
            return false;
        };
        let Some(bar) = self.endpoint.bars[i].as_mut() else {
            return false;
        };
        let v = if be & 0xF == 0xF {
            value
        } else {
            let mut old = bar.model.read32(off);
            for b in 0..4 {
                if be & (1 << b) != 0 {
                    old = (old & !(0xFF << (8 * b))) | (value & (0xFF << (8 * b)));
                }
            }
            old
        };
        bar.model.write32(off, v);
        true
    }

    /// The BAR and offset of a dword-aligned burst of `len` bytes at `addr` if one BAR claims all
    /// of it (else the burst is routed dword by dword).
    fn route_burst(&self, addr: u64, len: usize) -> Option<(usize, u64)> {
        let (i, off) = self.route(addr).ok()?;
        let last = addr.checked_add(len.checked_sub(4)? as u64)?;
        (self.route(last).ok()? == (i, off + len as u64 - 4)).then_some((i, off))
    }

    /// A streaming write of whole dwords (mode-1 0xF0): one burst into the BAR model when a single
    /// BAR claims the range, else per dword (unclaimed dwords are dropped).
    pub fn mem_write_burst(&mut self, addr: u64, data: &[u8]) {
        if let Some((i, off)) = self.route_burst(addr, data.len()) {
            if let Some(bar) = self.endpoint.bars[i].as_mut() {
                bar.model.write_bytes(off, data);
                return;
            }
        }
        for (k, w) in data.chunks_exact(4).enumerate() {
            let v = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
            self.mem_write32(addr + 4 * k as u64, 0xF, v);
        }
    }

    /// A streaming read of whole dwords (mode-2 0xF0); unclaimed dwords read all-ones.
    pub fn mem_read_burst(&mut self, addr: u64, out: &mut [u8]) {
        if let Some((i, off)) = self.route_burst(addr, out.len()) {
            if let Some(bar) = self.endpoint.bars[i].as_mut() {
                bar.model.read_bytes(off, out);
                return;
            }
        }
        for (k, w) in out.chunks_exact_mut(4).enumerate() {
            let v = self.mem_read32(addr + 4 * k as u64).unwrap_or(u32::MAX);
            w.copy_from_slice(&v.to_le_bytes());
        }
    }

    /// Let emulated time pass for every BAR model.
    pub fn advance(&mut self, ns: u64) {
        for bar in self.endpoint.bars.iter_mut().flatten() {
            bar.model.advance(ns);
        }
    }
}
