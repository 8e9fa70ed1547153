//! The loaded image of an AMD kernel code object (an ELF64 relocatable object from the exporter):
//! every `SHT_PROGBITS` section appended in section order at its alignment — the layout the
//! bundle's `descriptor_offset` / `entry_offset` refer to (docs/hw/tinygrad-export.md §8). Every
//! header field is bounds-checked; a malformed object is an error, never a panic.

/// Why a code object was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("AMD code object: {0}")]
pub struct CodeObjectError(pub String);

fn field(b: &[u8], off: usize, n: usize) -> Result<u64, CodeObjectError> {
    let s = b
        .get(
            off..off
                .checked_add(n)
                .ok_or_else(|| CodeObjectError("offset overflow".into()))?,
        )
        .ok_or_else(|| CodeObjectError(format!("truncated at byte {off}")))?;
    let mut v = [0u8; 8];
    v[..n].copy_from_slice(s);
    Ok(u64::from_le_bytes(v))
}

/// Largest accepted section alignment.
const MAX_ALIGN: u64 = 1 << 16;

/// Build the loaded image; returns it and its required base alignment.
pub fn loaded_image(elf: &[u8]) -> Result<(Vec<u8>, u64), CodeObjectError> {
    if elf.get(..4) != Some(b"\x7fELF") || elf.get(4) != Some(&2) || elf.get(5) != Some(&1) {
        return Err(CodeObjectError("not a little-endian ELF64 file".into()));
    }
    let shoff = field(elf, 0x28, 8)? as usize;
    let shentsize = field(elf, 0x3A, 2)? as usize;
    let shnum = field(elf, 0x3C, 2)? as usize;
    if shentsize < 0x40 {
        return Err(CodeObjectError(format!("section header size {shentsize}")));
    }
    let mut image = Vec::new();
    let mut base_align = 256u64;
    for i in 0..shnum {
        let h = shoff
            .checked_add(i * shentsize)
            .ok_or_else(|| CodeObjectError("section table overflow".into()))?;
        let ty = field(elf, h + 4, 4)?;
        if ty != 1 {
            continue;
        }
        let off = field(elf, h + 0x18, 8)? as usize;
        let size = field(elf, h + 0x20, 8)? as usize;
        let align = field(elf, h + 0x30, 8)?.max(1);
        if !align.is_power_of_two() || align > MAX_ALIGN {
            return Err(CodeObjectError(format!("section {i} alignment {align}")));
        }
        base_align = base_align.max(align);
        let data = off
            .checked_add(size)
            .and_then(|end| elf.get(off..end))
            .ok_or_else(|| {
                CodeObjectError(format!(
                    "section {i} ({size} bytes at {off}) outside the file"
                ))
            })?;
        let at = (image.len() as u64).next_multiple_of(align) as usize;
        image.resize(at, 0);
        image.extend_from_slice(data);
    }
    if image.is_empty() {
        return Err(CodeObjectError("no loadable (PROGBITS) sections".into()));
    }
    Ok((image, base_align))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn garbage_is_refused_not_a_panic() {
        assert!(loaded_image(b"").is_err());
        assert!(loaded_image(b"\x7fELF\x02\x01").is_err());
        let mut e = vec![0u8; 64];
        e[..6].copy_from_slice(b"\x7fELF\x02\x01");
        e[0x28] = 0xFF; // section table past the end
        e[0x3A] = 0x40;
        e[0x3C] = 1;
        assert!(loaded_image(&e).is_err());
    }
}
