//! The two things the RDNA3 tests need from a bundle's AMD kernel object (an ELF64 `ET_REL`,
//! docs/hw/tinygrad-export.md §8): the `.text` bytes, and the loaded image tinygrad's AMD runtime
//! builds (every `SHT_PROGBITS` section appended in section order at its alignment — the layout the
//! bundle's `entry_offset`/`descriptor_offset` refer to).

fn u16_at(b: &[u8], o: usize) -> usize {
    u16::from_le_bytes([b[o], b[o + 1]]) as usize
}
fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(b[o..o + 4].try_into().unwrap())
}
fn u64_at(b: &[u8], o: usize) -> usize {
    u64::from_le_bytes(b[o..o + 8].try_into().unwrap()) as usize
}

/// `(name, sh_type, offset, size, align)` of every section.
fn sections(elf: &[u8]) -> Vec<(String, u32, usize, usize, usize)> {
    assert_eq!(&elf[..4], b"\x7fELF", "not an ELF");
    let shoff = u64_at(elf, 0x28);
    let shentsize = u16_at(elf, 0x3a);
    let shnum = u16_at(elf, 0x3c);
    let shstrndx = u16_at(elf, 0x3e);
    let hdr = |i: usize| shoff + i * shentsize;
    let strtab = u64_at(elf, hdr(shstrndx) + 0x18);
    (0..shnum)
        .map(|i| {
            let h = hdr(i);
            let name_off = strtab + u32_at(elf, h) as usize;
            let end = elf[name_off..].iter().position(|&c| c == 0).unwrap();
            let name = String::from_utf8_lossy(&elf[name_off..name_off + end]).into_owned();
            (
                name,
                u32_at(elf, h + 4),
                u64_at(elf, h + 0x18),
                u64_at(elf, h + 0x20),
                u64_at(elf, h + 0x30).max(1),
            )
        })
        .collect()
}

/// The `.text` section's bytes.
pub fn text(elf: &[u8]) -> &[u8] {
    let (_, _, off, size, _) = sections(elf)
        .into_iter()
        .find(|s| s.0 == ".text")
        .expect("kernel object has .text");
    &elf[off..off + size]
}

/// The loaded image: `SHT_PROGBITS` (type 1) sections appended at their alignment.
pub fn image(elf: &[u8]) -> Vec<u8> {
    let mut img = Vec::new();
    for (_, ty, off, size, align) in sections(elf) {
        if ty != 1 {
            continue;
        }
        while img.len() % align != 0 {
            img.push(0);
        }
        img.extend_from_slice(&elf[off..off + size]);
    }
    img
}
