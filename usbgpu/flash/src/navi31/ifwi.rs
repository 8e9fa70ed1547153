//! IFWI item resolution for PSP early-boot streaming (docs/hw/navi31-spi-flash.md §9): which byte range of a 2 MiB image
//! the firmware means by an item id. All integers little-endian u32.
use core::ops::Range;

/// Image size the resolver expects.
pub const IMAGE_SIZE: usize = 0x20_0000;

/// Resolution failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IfwiError {
    /// Item id not in the table.
    Unsupported(u8),
    /// A signature (`$PSP`, `$SGN`) is missing at `offset`.
    MissingSignature { item: u8, offset: usize },
    /// The item extends past the image end.
    OutOfImage { item: u8 },
    /// The `$SGN` table does not have exactly one entry of the wanted type.
    SgnEntry { item: u8, matches: u32 },
}

impl core::fmt::Display for IfwiError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            IfwiError::Unsupported(i) => {
                write!(f, "IFWI resolver does not yet support requested item 0x{i:02X}")
            }
            IfwiError::MissingSignature { item, offset } => {
                write!(f, "IFWI item 0x{item:02X}: missing signature at 0x{offset:X}")
            }
            IfwiError::OutOfImage { item } => write!(f, "IFWI item 0x{item:02X} extends past the image end"),
            IfwiError::SgnEntry { item, matches } => write!(
                f,
                "IFWI item 0x{item:02X}: $SGN table has {matches} entries of type {}, need exactly 1",
                item.wrapping_sub(0x81)
            ),
        }
    }
}

fn u32_at(img: &[u8], off: usize, item: u8) -> Result<u32, IfwiError> {
    img.get(off..off + 4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .ok_or(IfwiError::OutOfImage { item })
}

fn sig(img: &[u8], off: usize, s: &[u8; 4], item: u8) -> Result<(), IfwiError> {
    match img.get(off..off + 4) {
        Some(b) if b == s => Ok(()),
        Some(_) => Err(IfwiError::MissingSignature { item, offset: off }),
        None => Err(IfwiError::OutOfImage { item }),
    }
}

fn table_size(img: &[u8], off: usize, item: u8) -> Result<usize, IfwiError> {
    let count = u32_at(img, off + 8, item)? as usize;
    count
        .checked_add(1)
        .and_then(|c| c.checked_mul(0x10))
        .ok_or(IfwiError::OutOfImage { item })
}

/// Byte range of `item` inside `img`.
pub fn resolve(img: &[u8], item: u8) -> Result<Range<usize>, IfwiError> {
    let (off, size): (usize, usize) = match item {
        0x01 => (0x0, 0x54),
        0x02 | 0x03 => {
            let off = if item == 0x02 { 0x2000 } else { 0x3000 };
            sig(img, off, b"$PSP", item)?;
            (off, table_size(img, off, item)?)
        }
        0x04 => (0x10000, 0x1000),
        0x05 => (0x11000, 0x1000),
        0x06 => (0x12000, 0x20),
        0x07 => (0x13000, 0x20),
        0x08 => (
            u32_at(img, 0x12010, item)? as usize,
            u32_at(img, 0x12018, item)? as usize,
        ),
        0x80 => (0x1000, 4),
        0x81..=0x88 => {
            let t = u32_at(img, 0x1000, item)? as usize;
            sig(img, t, b"$SGN", item)?;
            if item == 0x81 {
                (t, table_size(img, t, item)?)
            } else {
                let want = (item - 0x81) as u32;
                let count = u32_at(img, t + 8, item)? as usize;
                let mut found = None;
                let mut matches = 0;
                for i in 0..count.min(IMAGE_SIZE / 16) {
                    let e = t + 0x10 + 16 * i;
                    if u32_at(img, e, item)? == want {
                        matches += 1;
                        found = Some((
                            u32_at(img, e + 12, item)? as usize,
                            u32_at(img, e + 8, item)? as usize,
                        ));
                    }
                }
                match (matches, found) {
                    (1, Some(r)) => r,
                    _ => return Err(IfwiError::SgnEntry { item, matches }),
                }
            }
        }
        0x89 => (0x1F_0000, 0x100),
        other => return Err(IfwiError::Unsupported(other)),
    };
    let end = off
        .checked_add(size)
        .ok_or(IfwiError::OutOfImage { item })?;
    if end > img.len() {
        return Err(IfwiError::OutOfImage { item });
    }
    Ok(off..end)
}

#[cfg(test)]
mod tests {
    use super::*;
    extern crate std;
    use std::vec;

    fn put(img: &mut [u8], off: usize, v: u32) {
        img[off..off + 4].copy_from_slice(&v.to_le_bytes());
    }

    #[test]
    fn resolves_table_items_from_spec_layout() {
        let mut img = vec![0u8; IMAGE_SIZE];
        img[0x2000..0x2004].copy_from_slice(b"$PSP");
        put(&mut img, 0x2008, 3);
        put(&mut img, 0x12010, 0x40000);
        put(&mut img, 0x12018, 0x1234);
        put(&mut img, 0x1000, 0x8000);
        img[0x8000..0x8004].copy_from_slice(b"$SGN");
        put(&mut img, 0x8008, 2);
        // entry 0: type 1, size 0x100 @ 0x9000; entry 1: type 7, size 0x20 @ 0xA000
        put(&mut img, 0x8010, 1);
        put(&mut img, 0x8018, 0x100);
        put(&mut img, 0x801C, 0x9000);
        put(&mut img, 0x8020, 7);
        put(&mut img, 0x8028, 0x20);
        put(&mut img, 0x802C, 0xA000);
        assert_eq!(resolve(&img, 0x01), Ok(0..0x54));
        assert_eq!(resolve(&img, 0x02), Ok(0x2000..0x2040));
        assert_eq!(
            resolve(&img, 0x03),
            Err(IfwiError::MissingSignature {
                item: 3,
                offset: 0x3000
            })
        );
        assert_eq!(resolve(&img, 0x08), Ok(0x40000..0x41234));
        assert_eq!(resolve(&img, 0x80), Ok(0x1000..0x1004));
        assert_eq!(resolve(&img, 0x81), Ok(0x8000..0x8030));
        assert_eq!(resolve(&img, 0x82), Ok(0x9000..0x9100));
        assert_eq!(resolve(&img, 0x88), Ok(0xA000..0xA020));
        assert_eq!(
            resolve(&img, 0x83),
            Err(IfwiError::SgnEntry {
                item: 0x83,
                matches: 0
            })
        );
        assert_eq!(resolve(&img, 0x89), Ok(0x1F0000..0x1F0100));
        assert_eq!(resolve(&img, 0x42), Err(IfwiError::Unsupported(0x42)));
        put(&mut img, 0x12010, 0x1FFFF0);
        assert_eq!(resolve(&img, 0x08), Err(IfwiError::OutOfImage { item: 8 }));
    }
}
