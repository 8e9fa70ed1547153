//! IP blocks, their versions and register bases as data (docs/hw/amd-driver.md §4 steps 1–2).
//!
//! An [`IpTable`] holds, per IP block, the discovered version and the base-address tuple of its
//! first (un-harvested) instance. [`IpTable::navi31`] is the Navi31 default (GC 11.0.0, SDMA 6.0.0,
//! MMHUB 3.0.0, NBIO 4.3.0, MP0/MP1 13.0.0, HDP/OSSSYS 6.0.0) with the base table of the Linux
//! `navi31_offset` header; a booted driver uses the table parsed from the device's own IP discovery
//! binary instead. Nothing in the driver branches on these values except where the spec says so
//! (firmware names, the MP0 mode-1 reset flavour).
use super::regs::Reg;

/// The IP blocks the driver programs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Ip {
    /// Graphics/compute core (also hosts SDMA registers on GC 11).
    Gc,
    /// System DMA engine 0.
    Sdma0,
    /// Multimedia hub (the system-side GPU MMU).
    Mmhub,
    /// PCIe interface (NBIO / NBIF).
    Nbio,
    /// Platform security processor.
    Mp0,
    /// System management unit.
    Mp1,
    /// Host data path.
    Hdp,
    /// Interrupt handler (OSS).
    Osssys,
}

/// Every block, in the order reports list them.
pub const ALL_IPS: [Ip; 8] = [
    Ip::Gc,
    Ip::Sdma0,
    Ip::Mmhub,
    Ip::Nbio,
    Ip::Mp0,
    Ip::Mp1,
    Ip::Hdp,
    Ip::Osssys,
];

impl Ip {
    /// The hardware id in the discovery table (docs/hw/amd-driver.md §4 step 1; NBIF 108 stands for
    /// NBIO).
    pub const fn hw_id(self) -> u16 {
        match self {
            Ip::Gc => 11,
            Ip::Sdma0 => 42,
            Ip::Mmhub => 34,
            Ip::Nbio => 108,
            Ip::Mp0 => 255,
            Ip::Mp1 => 1,
            Ip::Hdp => 41,
            Ip::Osssys => 40,
        }
    }

    /// Short name for reports and traces.
    pub const fn name(self) -> &'static str {
        match self {
            Ip::Gc => "GC",
            Ip::Sdma0 => "SDMA0",
            Ip::Mmhub => "MMHUB",
            Ip::Nbio => "NBIO",
            Ip::Mp0 => "MP0",
            Ip::Mp1 => "MP1",
            Ip::Hdp => "HDP",
            Ip::Osssys => "OSSSYS",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// An IP version (major.minor.revision).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct IpVersion(pub u8, pub u8, pub u8);

impl core::fmt::Display for IpVersion {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}.{}.{}", self.0, self.1, self.2)
    }
}

/// Segments per base tuple.
pub const SEGMENTS: usize = 6;

/// One block's discovered state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct IpEntry {
    /// Version; `None` when the block was not discovered.
    pub version: Option<IpVersion>,
    /// Base addresses (dwords) per segment; absent segments are 0.
    pub bases: [u64; SEGMENTS],
}

/// Versions and bases of every block.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct IpTable {
    entries: [IpEntry; ALL_IPS.len()],
}

const fn entry(v: IpVersion, b: [u64; 5]) -> IpEntry {
    IpEntry {
        version: Some(v),
        bases: [b[0], b[1], b[2], b[3], b[4], 0],
    }
}

impl IpTable {
    /// An empty table (nothing discovered).
    pub const fn empty() -> IpTable {
        IpTable {
            entries: [IpEntry {
                version: None,
                bases: [0; SEGMENTS],
            }; ALL_IPS.len()],
        }
    }

    /// The Navi31 default: versions of the fact sheet §13 and the Navi base table.
    pub const fn navi31() -> IpTable {
        const GC: [u64; 5] = [0x1260, 0xA000, 0x1C000, 0x0240_2C00, 0];
        const MP: [u64; 5] = [0x16000, 0xDC_0000, 0xE0_0000, 0xE4_0000, 0x0243_FC00];
        IpTable {
            entries: [
                entry(IpVersion(11, 0, 0), GC),
                entry(IpVersion(6, 0, 0), GC),
                entry(IpVersion(3, 0, 0), [0x1A000, 0x0240_8800, 0, 0, 0]),
                entry(IpVersion(4, 3, 0), [0, 0x14, 0xD20, 0x10400, 0x0241_B000]),
                entry(IpVersion(13, 0, 0), MP),
                entry(IpVersion(13, 0, 0), MP),
                entry(IpVersion(6, 0, 0), [0xF20, 0x0240_A400, 0, 0, 0]),
                entry(IpVersion(6, 0, 0), [0x10A0, 0x0240_A000, 0, 0, 0]),
            ],
        }
    }

    /// Record a discovered block.
    pub fn set(&mut self, ip: Ip, version: IpVersion, bases: [u64; SEGMENTS]) {
        self.entries[ip.index()] = IpEntry {
            version: Some(version),
            bases,
        };
    }

    /// The block's entry.
    pub fn get(&self, ip: Ip) -> &IpEntry {
        &self.entries[ip.index()]
    }

    /// The block's version, if discovered.
    pub fn version(&self, ip: Ip) -> Option<IpVersion> {
        self.get(ip).version
    }

    /// BAR5 byte address of `reg`, or `None` when its block was not discovered.
    pub fn byte(&self, reg: Reg) -> Option<u64> {
        let e = self.get(reg.ip);
        e.version?;
        Some((e.bases[reg.seg as usize] + reg.offset as u64) * 4)
    }

    /// Blocks missing from the table among those the boot needs (empty when complete).
    pub fn missing(&self) -> impl Iterator<Item = Ip> + '_ {
        ALL_IPS.into_iter().filter(|ip| self.version(*ip).is_none())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn navi31_versions_are_those_of_the_fact_sheet() {
        let t = IpTable::navi31();
        assert_eq!(t.version(Ip::Gc), Some(IpVersion(11, 0, 0)));
        assert_eq!(t.version(Ip::Sdma0), Some(IpVersion(6, 0, 0)));
        assert_eq!(t.version(Ip::Mp0), Some(IpVersion(13, 0, 0)));
        assert_eq!(t.missing().count(), 0);
        assert_eq!(IpTable::empty().missing().count(), ALL_IPS.len());
        assert_eq!(IpTable::empty().byte(super::super::regs::CP_STAT), None);
    }
}
