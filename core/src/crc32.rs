//! CRC-32 (IEEE 802.3: reflected, polynomial 0xEDB88320, initial value and final XOR 0xFFFFFFFF),
//! the checksum of the bundle header and body. A 16-entry half-byte table (64 bytes of rodata) is
//! plenty for a check that runs once per load; it keeps the `no_std` footprint small.

/// CRC-32 of the 16 possible values of one half-byte, reflected (computed at compile time).
const TABLE: [u32; 16] = {
    let mut table = [0u32; 16];
    let mut n = 0;
    while n < 16 {
        let mut c = n as u32;
        let mut bit = 0;
        while bit < 4 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0xEDB8_8320
            } else {
                c >> 1
            };
            bit += 1;
        }
        table[n] = c;
        n += 1;
    }
    table
};

/// The CRC-32 (IEEE) of `bytes`.
#[inline(never)] // one copy for the header and the body check: smaller no_std footprint
pub fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        crc = (crc >> 4) ^ TABLE[(crc & 0xF) as usize];
        crc = (crc >> 4) ^ TABLE[(crc & 0xF) as usize];
    }
    !crc
}

#[cfg(test)]
mod tests {
    use super::crc32;

    #[test]
    fn published_check_values() {
        // The "check" value of CRC-32/ISO-HDLC in the CRC catalogue (reveng), and the empty string.
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
        // The widely published CRC-32 of the pangram (e.g. the Wikipedia CRC-32 article).
        assert_eq!(
            crc32(b"The quick brown fox jumps over the lazy dog"),
            0x414F_A339
        );
    }
}
