//! Raw ROM dump through the SMUIO ROM_INDEX/ROM_DATA aperture (docs/hw/navi31-spi-flash.md §7): exactly 2 MiB, read one
//! dword at a time from the auto-advancing data port (a burst would read consecutive registers,
//! not the port). The controller state is restored on every path before the result is judged.
//!
//! Restore choice: the reference tool restores *byte-swapped* originals (docs/hw/navi31-spi-flash.md §7 flags this as
//! unclear: they differ from what was read). We write back exactly the values read, the only
//! choice that returns the registers to their observed state under the documented register model.
use modelrt_hal::mmio::Mmio;

use super::regs::{ALL_ONES, ROM_CNTL, ROM_CNTL_APERTURE_BIT, ROM_DATA, ROM_INDEX};

/// Size of a raw dump.
pub const DUMP_SIZE: usize = 0x20_0000;
/// Aperture page size (one ROM_INDEX write per page).
pub const PAGE: usize = 0x1_0000;
/// IFWI magic at offset 0.
pub const IFWI_MAGIC: [u8; 4] = [0xAA, 0x55, 0xAA, 0x55];

/// Aperture dump failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApertureError<E> {
    /// BAR5 access failed.
    Mmio(E),
    /// ROM_CNTL reads all-ones.
    Unavailable,
    /// Output buffer is not 2 MiB.
    BufferSize(usize),
    /// Offset 0 lacks `AA 55 AA 55`.
    BadMagic([u8; 4]),
    /// The two 1 MiB halves are identical: the aperture ignores address bit 20.
    Mirrored,
}

impl<E: core::fmt::Display> core::fmt::Display for ApertureError<E> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ApertureError::Mmio(e) => write!(f, "BAR5 access failed: {e}"),
            ApertureError::Unavailable => write!(
                f,
                "raw SMUIO ROM controller is unavailable; the SOC15 function-ROM aperture is not a raw SPI dump"
            ),
            ApertureError::BufferSize(n) => write!(f, "dump buffer is {n} bytes, need {DUMP_SIZE}"),
            ApertureError::BadMagic(m) => {
                write!(f, "invalid raw flash dump: magic {m:02X?} at offset 0, expected AA 55 AA 55")
            }
            ApertureError::Mirrored => write!(
                f,
                "invalid raw flash dump: mirrored 1 MiB halves (aperture ignores address bit 20)"
            ),
        }
    }
}

/// Dump the flash through the aperture into `out` (2 MiB) and validate it. `progress` gets the
/// number of bytes read after every 64 KiB page.
pub fn dump<M: Mmio>(
    mmio: &mut M,
    out: &mut [u8],
    mut progress: impl FnMut(usize),
) -> Result<(), ApertureError<M::Error>> {
    if out.len() != DUMP_SIZE {
        return Err(ApertureError::BufferSize(out.len()));
    }
    let cntl = mmio.read32(ROM_CNTL).map_err(ApertureError::Mmio)?;
    if cntl == ALL_ONES {
        return Err(ApertureError::Unavailable);
    }
    let index = mmio.read32(ROM_INDEX).map_err(ApertureError::Mmio)?;
    let res = read_pages(mmio, cntl, out, &mut progress);
    let r1 = mmio.write32(ROM_INDEX, index);
    let r2 = mmio.write32(ROM_CNTL, cntl);
    res?;
    r1.and(r2).map_err(ApertureError::Mmio)?;
    validate(out)
}

fn read_pages<M: Mmio>(
    mmio: &mut M,
    cntl: u32,
    out: &mut [u8],
    progress: &mut impl FnMut(usize),
) -> Result<(), ApertureError<M::Error>> {
    mmio.write32(ROM_CNTL, (cntl | ROM_CNTL_APERTURE_BIT).swap_bytes())
        .map_err(ApertureError::Mmio)?;
    for (p, page) in out.chunks_mut(PAGE).enumerate() {
        let addr = (p * PAGE) as u32;
        mmio.write32(ROM_INDEX, (addr >> 8).swap_bytes())
            .map_err(ApertureError::Mmio)?;
        for word in page.chunks_mut(4) {
            let v = mmio.read32(ROM_DATA).map_err(ApertureError::Mmio)?;
            word.copy_from_slice(&v.to_le_bytes());
        }
        progress((p + 1) * PAGE);
    }
    Ok(())
}

/// Check the IFWI magic and refuse mirrored halves.
pub fn validate<E>(image: &[u8]) -> Result<(), ApertureError<E>> {
    if image.len() != DUMP_SIZE {
        return Err(ApertureError::BufferSize(image.len()));
    }
    let magic = [image[0], image[1], image[2], image[3]];
    if magic != IFWI_MAGIC {
        return Err(ApertureError::BadMagic(magic));
    }
    let (a, b) = image.split_at(DUMP_SIZE / 2);
    if a == b {
        return Err(ApertureError::Mirrored);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn index_encoding_equals_byte_address_below_16mib() {
        // docs/hw/navi31-spi-flash.md §7: for every 64 KiB-aligned p below 16 MiB, bswap32(p >> 8) == p.
        for p in (0..0x100_0000u32).step_by(0x1_0000) {
            assert_eq!((p >> 8).swap_bytes(), p);
        }
    }
}
