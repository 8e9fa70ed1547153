//! A minimal ZIP writer for wheels: every member stored (method 0, no compression), with CRC-32,
//! local headers, the central directory and its end record (APPNOTE.TXT §4.3). Wheels may be
//! stored uncompressed; pip and `zipfile` read them.

/// CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320), as ZIP requires.
pub fn crc32(data: &[u8]) -> u32 {
    let mut c = !0u32;
    for &b in data {
        c ^= b as u32;
        for _ in 0..8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0xEDB8_8320
            } else {
                c >> 1
            };
        }
    }
    !c
}

/// Members written so far and the central directory entries for them.
#[derive(Default)]
pub struct Writer {
    out: Vec<u8>,
    central: Vec<u8>,
    count: u16,
}

fn u16le(v: &mut Vec<u8>, x: u16) {
    v.extend_from_slice(&x.to_le_bytes());
}

fn u32le(v: &mut Vec<u8>, x: u32) {
    v.extend_from_slice(&x.to_le_bytes());
}

impl Writer {
    /// Add a member; `executable` sets Unix mode 0755 (else 0644) in the external attributes.
    pub fn add(&mut self, name: &str, data: &[u8], executable: bool) {
        let crc = crc32(data);
        let size = u32::try_from(data.len()).expect("wheel member under 4 GiB");
        let offset = u32::try_from(self.out.len()).expect("wheel under 4 GiB");
        // DOS date 1980-01-01 00:00 keeps the wheel reproducible.
        let (time, date) = (0u16, (1 << 5) | 1);
        let o = &mut self.out;
        u32le(o, 0x0403_4b50);
        for x in [20, 0, 0, time, date] {
            u16le(o, x);
        }
        for x in [crc, size, size] {
            u32le(o, x);
        }
        u16le(o, name.len() as u16);
        u16le(o, 0);
        o.extend_from_slice(name.as_bytes());
        o.extend_from_slice(data);

        let c = &mut self.central;
        u32le(c, 0x0201_4b50);
        // made by: Unix (3), spec 2.0; needed 2.0; flags; method; time; date
        for x in [(3 << 8) | 20, 20, 0, 0, time, date] {
            u16le(c, x);
        }
        for x in [crc, size, size] {
            u32le(c, x);
        }
        // name length, extra, comment, disk, internal attributes
        for x in [name.len() as u16, 0, 0, 0, 0] {
            u16le(c, x);
        }
        let mode: u32 = if executable { 0o100755 } else { 0o100644 };
        u32le(c, mode << 16);
        u32le(c, offset);
        c.extend_from_slice(name.as_bytes());
        self.count += 1;
    }

    /// The archive bytes.
    pub fn finish(mut self) -> Vec<u8> {
        let start = self.out.len() as u32;
        let len = self.central.len() as u32;
        self.out.extend_from_slice(&self.central);
        let o = &mut self.out;
        u32le(o, 0x0605_4b50);
        for x in [0, 0, self.count, self.count] {
            u16le(o, x);
        }
        u32le(o, len);
        u32le(o, start);
        u16le(o, 0);
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_check_value() {
        // The standard check value of CRC-32/ISO-HDLC for "123456789".
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    }
}
