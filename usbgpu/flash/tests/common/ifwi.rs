//! IFWI directory structures (docs/hw/navi31-spi-flash.md §9) written into a test image, shared by the PSP streaming tests
//! (library and `gpuflash psp ifwi-all`).

/// Store `v` little-endian at `off`.
pub fn put(img: &mut [u8], off: usize, v: u32) {
    img[off..off + 4].copy_from_slice(&v.to_le_bytes());
}

/// Flash signature, `$PSP` tables at 0x2000 (2 entries) and 0x3000 (1 entry), and the pointer at
/// 0x1000 to a `$SGN` table at 0x8000 declaring 1 entry (the entry itself is left to the caller).
pub fn add_ifwi_tables(img: &mut [u8]) {
    img[..4].copy_from_slice(&[0xAA, 0x55, 0xAA, 0x55]);
    img[0x2000..0x2004].copy_from_slice(b"$PSP");
    put(img, 0x2008, 2);
    img[0x3000..0x3004].copy_from_slice(b"$PSP");
    put(img, 0x3008, 1);
    put(img, 0x1000, 0x8000);
    img[0x8000..0x8004].copy_from_slice(b"$SGN");
    put(img, 0x8008, 1);
}
