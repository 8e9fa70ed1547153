//! PCIe bring-up behind the bridge (docs/hw/asm24-bridge.md §7.6): bus numbers and memory windows of the
//! bridge chain (buses 0..3), resizable-BAR enlargement, BAR sizing/assignment and command enables of
//! the GPU at bus 4. Generic over [`PciConfig`], so it runs unchanged against the emulator.
use modelrt_hal::pci::{Bdf, PciConfig};

/// Parameters of the bus setup (defaults are those of docs/hw/asm24-bridge.md §7.6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BusSetup {
    /// Bus of the GPU endpoint; bridges sit on buses `0..gpu_bus`.
    pub gpu_bus: u8,
    /// Start of the 32-bit non-prefetchable window.
    pub mem_base: u64,
    /// Start of the 64-bit prefetchable window.
    pub pref_mem_base: u64,
}

impl Default for BusSetup {
    fn default() -> Self {
        BusSetup {
            gpu_bus: 4,
            mem_base: 0x1000_0000,
            pref_mem_base: 0x8_0000_0000,
        }
    }
}

/// IO | MEM | BUS_MASTER.
pub const COMMAND_ENABLES: u32 = 0x07;
/// REBAR extended capability id.
pub const CAP_REBAR: u16 = 0x15;
/// BARs are assigned at 2 MiB granularity.
pub const BAR_ALIGN: u64 = 2 << 20;

/// One assigned memory BAR.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bar {
    pub address: u64,
    pub size: u64,
    pub prefetchable: bool,
    pub is_64bit: bool,
}

/// BAR0..BAR5 after assignment (`None`: absent, I/O, or the upper half of a 64-bit BAR).
pub type BarMap = [Option<Bar>; 6];

/// Set up the bridge chain and the GPU; returns the assigned BARs.
pub fn setup<C: PciConfig>(cfg: &mut C, p: &BusSetup) -> Result<BarMap, C::Error> {
    for bus in 0..p.gpu_bus {
        let b = Bdf {
            bus,
            dev: 0,
            func: 0,
        };
        // primary 0, secondary bus+1, subordinate gpu_bus, byte 0x1B = 0 — one dword write.
        let buses = ((bus as u32 + 1) << 8) | ((p.gpu_bus as u32) << 16);
        cfg.config_write(b, 0x18, 4, buses)?;
        cfg.config_write(b, 0x20, 2, ((p.mem_base >> 16) & 0xFFFF) as u32)?;
        cfg.config_write(b, 0x22, 2, 0xFFFF)?;
        cfg.config_write(b, 0x24, 2, ((p.pref_mem_base >> 16) & 0xFFFF) as u32)?;
        cfg.config_write(b, 0x26, 2, 0xFFFF)?;
        cfg.config_write(b, 0x28, 4, (p.pref_mem_base >> 32) as u32)?;
        cfg.config_write(b, 0x2C, 4, 0xFFFF_FFFF)?;
        cfg.config_write(b, 0x04, 1, COMMAND_ENABLES)?;
    }
    let gpu = Bdf {
        bus: p.gpu_bus,
        dev: 0,
        func: 0,
    };
    enlarge_rebar(cfg, gpu)?;
    let bars = assign_bars(cfg, gpu, p)?;
    cfg.config_write(gpu, 0x04, 1, COMMAND_ENABLES)?;
    Ok(bars)
}

/// For every REBAR capability: pick the largest supported size in the first control register.
pub fn enlarge_rebar<C: PciConfig>(cfg: &mut C, bdf: Bdf) -> Result<(), C::Error> {
    let mut off: u16 = 0x100;
    // Bounded walk: at most one capability per dword of extended config space.
    for _ in 0..(0x1000 - 0x100) / 4 {
        if off < 0x100 {
            break;
        }
        let hdr = cfg.config_read(bdf, off, 4)?;
        if (hdr & 0xFFFF) as u16 == CAP_REBAR {
            let cap = cfg.config_read(bdf, off + 4, 4)?;
            let sizes = cap >> 4;
            if sizes != 0 {
                let index = 31 - sizes.leading_zeros(); // bit_length − 1
                let ctrl = cfg.config_read(bdf, off + 8, 4)?;
                cfg.config_write(bdf, off + 8, 4, (ctrl & !0x1F00) | (index << 8))?;
            }
        }
        let next = ((hdr >> 20) & 0xFFC) as u16;
        if next == 0 {
            break;
        }
        off = next;
    }
    Ok(())
}

/// Size and place BAR0..BAR5 (docs/hw/asm24-bridge.md §7.6 steps 1–5).
pub fn assign_bars<C: PciConfig>(cfg: &mut C, bdf: Bdf, p: &BusSetup) -> Result<BarMap, C::Error> {
    let mut bars: BarMap = [None; 6];
    let mut mem_cursor = p.mem_base;
    let mut pref_cursor = p.pref_mem_base;
    let mut index = 0usize;
    while index < 6 {
        let reg = 0x10 + 4 * index as u16;
        let orig = cfg.config_read(bdf, reg, 4)?;
        if orig & 1 != 0 {
            index += 1;
            continue;
        }
        let prefetchable = orig & 0x8 != 0;
        let is_64bit = orig & 0x4 != 0 && index < 5;
        cfg.config_write(bdf, reg, 4, 0xFFFF_FFFF)?;
        let lo = (cfg.config_read(bdf, reg, 4)? & 0xFFFF_FFF0) as u64;
        let mask = if is_64bit {
            cfg.config_write(bdf, reg + 4, 4, 0xFFFF_FFFF)?;
            let hi = cfg.config_read(bdf, reg + 4, 4)? as u64;
            (hi << 32) | lo
        } else {
            lo
        };
        // An unimplemented BAR reads 0 after the all-ones write: nothing to assign.
        if mask != 0 {
            let size = if is_64bit {
                (!mask).wrapping_add(1)
            } else {
                ((!lo as u32) as u64) + 1
            };
            let cursor = if prefetchable {
                &mut pref_cursor
            } else {
                &mut mem_cursor
            };
            let address = *cursor;
            cfg.config_write(bdf, reg, 4, address as u32)?;
            if is_64bit {
                cfg.config_write(bdf, reg + 4, 4, (address >> 32) as u32)?;
            }
            bars[index] = Some(Bar {
                address,
                size,
                prefetchable,
                is_64bit,
            });
            *cursor += size.div_ceil(BAR_ALIGN) * BAR_ALIGN;
        }
        index += if is_64bit { 2 } else { 1 };
    }
    Ok(bars)
}
