//! SPI NOR chip table: what the flash driver knows about each supported part, as data.
//! Adding a chip is adding a row; the driver has no per-chip code paths.

/// One supported SPI NOR part.
#[derive(Debug, PartialEq, Eq)]
pub struct ChipInfo {
    /// Marketing name.
    pub name: &'static str,
    /// JEDEC manufacturer, memory type, capacity bytes (RDID 0x9F).
    pub jedec: [u8; 3],
    /// Array size in bytes.
    pub size: u32,
    /// Smallest erase unit (0x20 sector erase) in bytes.
    pub sector_size: u32,
    /// Page program unit in bytes.
    pub page_size: u32,
    /// SR2 bit that is the complement-protect (CMP) bit, if the part has one.
    pub sr2_cmp: Option<u8>,
    /// SR1 block-protect bits (BP0..BP4, SRP excluded) shown by `info`.
    pub sr1_bp_mask: u8,
    /// Dummy bytes after the 3-byte address of the SFDP read (0x5A).
    pub sfdp_dummy: u8,
    /// Busy timeout after a sector erase, milliseconds.
    pub erase_timeout_ms: u32,
    /// Busy timeout after a page program, milliseconds.
    pub program_timeout_ms: u32,
    /// Busy timeout after a status-register write, milliseconds.
    pub wrsr_timeout_ms: u32,
}

impl ChipInfo {
    /// Number of erase sectors.
    pub const fn sectors(&self) -> u32 {
        self.size / self.sector_size
    }
}

/// GigaDevice GD25LQ16E, the Navi31 board flash (docs/hw/navi31-spi-flash.md §5): 2 MiB, 4 KiB sectors, 256-byte pages.
pub const GD25LQ16E: ChipInfo = ChipInfo {
    name: "GD25LQ16E",
    jedec: [0xC8, 0x60, 0x15],
    size: 0x20_0000,
    sector_size: 0x1000,
    page_size: 0x100,
    sr2_cmp: Some(0x40),
    sr1_bp_mask: 0x7C,
    sfdp_dummy: 1,
    erase_timeout_ms: 2000,
    program_timeout_ms: 1000,
    wrsr_timeout_ms: 1000,
};

/// All supported chips.
pub const CHIPS: &[ChipInfo] = &[GD25LQ16E];

/// Result of matching a raw RDID capture against the table.
#[derive(Debug, PartialEq, Eq)]
pub enum Identify {
    /// A known chip.
    Known(&'static ChipInfo),
    /// The capture is all 0xFF or all 0x00: nothing drives MISO.
    NoResponse,
    /// Something answered, but no table row matches.
    Unknown,
}

/// Match a 4-byte RDID capture. Tolerates a byte rotation of the capture (docs/hw/navi31-spi-flash.md §4: the reference
/// tool searches the id inside the capture concatenated with its first two bytes).
pub fn identify(capture: &[u8; 4]) -> Identify {
    if capture.iter().all(|&b| b == 0xFF) || capture.iter().all(|&b| b == 0) {
        return Identify::NoResponse;
    }
    let mut ring = [0u8; 6];
    ring[..4].copy_from_slice(capture);
    ring[4..].copy_from_slice(&capture[..2]);
    for chip in CHIPS {
        if ring.windows(3).any(|w| w == chip.jedec) {
            return Identify::Known(chip);
        }
    }
    Identify::Unknown
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gd25lq16e_geometry() {
        assert_eq!(GD25LQ16E.sectors(), 512);
    }

    #[test]
    fn identify_plain_and_rotated() {
        assert_eq!(
            identify(&[0xC8, 0x60, 0x15, 0xC8]),
            Identify::Known(&GD25LQ16E)
        );
        assert_eq!(
            identify(&[0x15, 0xC8, 0xC8, 0x60]),
            Identify::Known(&GD25LQ16E)
        );
        assert_eq!(
            identify(&[0x60, 0x15, 0x00, 0xC8]),
            Identify::Known(&GD25LQ16E)
        );
        assert_eq!(identify(&[0xFF; 4]), Identify::NoResponse);
        assert_eq!(identify(&[0x00; 4]), Identify::NoResponse);
        assert_eq!(identify(&[0xEF, 0x40, 0x18, 0x00]), Identify::Unknown);
    }
}
