//! A small gzip/DEFLATE (RFC 1951/1952) decoder for the test captures, so the compressed `.rd` files can be read
//! without a dependency: stored, fixed-Huffman and dynamic-Huffman blocks; the CRC is not checked (a corrupt
//! capture fails the packet comparison instead).

struct Bits<'a> {
    d: &'a [u8],
    pos: usize,
    bit: u32,
}

impl Bits<'_> {
    fn get(&mut self, n: u32) -> Result<u32, String> {
        let mut v = 0;
        for k in 0..n {
            let byte = *self.d.get(self.pos).ok_or("deflate stream ends early")?;
            v |= ((byte >> self.bit) as u32 & 1) << k;
            self.bit += 1;
            if self.bit == 8 {
                self.bit = 0;
                self.pos += 1;
            }
        }
        Ok(v)
    }
}

/// A canonical Huffman code: symbols sorted by code length, and the count of codes of each length.
struct Huff {
    counts: [u16; 16],
    symbols: Vec<u16>,
}

impl Huff {
    fn new(lengths: &[u8]) -> Huff {
        let mut counts = [0u16; 16];
        for &l in lengths {
            counts[l as usize] += 1;
        }
        counts[0] = 0;
        let mut offs = [0u16; 16];
        for l in 1..16 {
            offs[l] = offs[l - 1] + counts[l - 1];
        }
        let mut symbols = vec![0u16; lengths.len()];
        for (s, &l) in lengths.iter().enumerate() {
            if l != 0 {
                symbols[offs[l as usize] as usize] = s as u16;
                offs[l as usize] += 1;
            }
        }
        Huff { counts, symbols }
    }

    fn decode(&self, b: &mut Bits<'_>) -> Result<u16, String> {
        let (mut code, mut first, mut index) = (0i32, 0i32, 0i32);
        for l in 1..16 {
            code |= b.get(1)? as i32;
            let count = self.counts[l] as i32;
            if code - count < first {
                return Ok(self.symbols[(index + code - first) as usize]);
            }
            index += count;
            first = (first + count) << 1;
            code <<= 1;
        }
        Err("invalid Huffman code".into())
    }
}

const LEN_BASE: [u16; 29] = [
    3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131,
    163, 195, 227, 258,
];
const LEN_EXTRA: [u8; 29] = [
    0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0,
];
const DIST_BASE: [u16; 30] = [
    1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537,
    2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577,
];
const DIST_EXTRA: [u8; 30] = [
    0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13,
    13,
];

fn codes(b: &mut Bits<'_>, out: &mut Vec<u8>, lit: &Huff, dist: &Huff) -> Result<(), String> {
    loop {
        let s = lit.decode(b)? as usize;
        if s < 256 {
            out.push(s as u8);
        } else if s == 256 {
            return Ok(());
        } else {
            let s = s - 257;
            if s >= 29 {
                return Err("bad length symbol".into());
            }
            let len = LEN_BASE[s] as usize + b.get(LEN_EXTRA[s] as u32)? as usize;
            let d = dist.decode(b)? as usize;
            if d >= 30 {
                return Err("bad distance symbol".into());
            }
            let dist = DIST_BASE[d] as usize + b.get(DIST_EXTRA[d] as u32)? as usize;
            if dist > out.len() {
                return Err("distance before the start of the output".into());
            }
            for _ in 0..len {
                out.push(out[out.len() - dist]);
            }
        }
    }
}

/// Decompress a raw DEFLATE stream.
pub fn inflate(d: &[u8]) -> Result<Vec<u8>, String> {
    let mut b = Bits { d, pos: 0, bit: 0 };
    let mut out = Vec::new();
    loop {
        let last = b.get(1)?;
        match b.get(2)? {
            0 => {
                if b.bit != 0 {
                    b.bit = 0;
                    b.pos += 1;
                }
                let h = d
                    .get(b.pos..b.pos + 4)
                    .ok_or("stored block header cut off")?;
                let len = u16::from_le_bytes([h[0], h[1]]) as usize;
                b.pos += 4;
                out.extend_from_slice(d.get(b.pos..b.pos + len).ok_or("stored block cut off")?);
                b.pos += len;
            }
            1 => {
                let mut l = [8u8; 288];
                l[144..256].fill(9);
                l[256..280].fill(7);
                codes(&mut b, &mut out, &Huff::new(&l), &Huff::new(&[5u8; 30]))?;
            }
            2 => {
                let nlen = b.get(5)? as usize + 257;
                let ndist = b.get(5)? as usize + 1;
                let ncode = b.get(4)? as usize + 4;
                const ORDER: [usize; 19] = [
                    16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15,
                ];
                let mut cl = [0u8; 19];
                for &o in &ORDER[..ncode] {
                    cl[o] = b.get(3)? as u8;
                }
                let ch = Huff::new(&cl);
                let mut lens = Vec::with_capacity(nlen + ndist);
                while lens.len() < nlen + ndist {
                    let (v, n) = match ch.decode(&mut b)? {
                        s @ 0..=15 => (s as u8, 1),
                        16 => (
                            *lens.last().ok_or("repeat with no previous length")?,
                            3 + b.get(2)?,
                        ),
                        17 => (0, 3 + b.get(3)?),
                        _ => (0, 11 + b.get(7)?),
                    };
                    lens.extend(std::iter::repeat_n(v, n as usize));
                }
                lens.truncate(nlen + ndist);
                let lit = Huff::new(&lens[..nlen]);
                let dist = Huff::new(&lens[nlen..]);
                codes(&mut b, &mut out, &lit, &dist)?;
            }
            _ => return Err("reserved DEFLATE block type".into()),
        }
        if last == 1 {
            return Ok(out);
        }
    }
}

/// Decompress a gzip file (one member; FEXTRA/FNAME/FCOMMENT/FHCRC headers skipped).
pub fn gunzip(d: &[u8]) -> Result<Vec<u8>, String> {
    if d.len() < 18 || d[0] != 0x1f || d[1] != 0x8b || d[2] != 8 {
        return Err("not a gzip file".into());
    }
    let flags = d[3];
    let mut p = 10;
    if flags & 4 != 0 {
        p += 2 + u16::from_le_bytes([d[p], d[p + 1]]) as usize;
    }
    for bit in [8u8, 16] {
        if flags & bit != 0 {
            p += d[p..]
                .iter()
                .position(|&c| c == 0)
                .ok_or("unterminated gzip name")?
                + 1;
        }
    }
    if flags & 2 != 0 {
        p += 2;
    }
    let out = inflate(&d[p..])?;
    let isize = u32::from_le_bytes(d[d.len() - 4..].try_into().unwrap()) as usize;
    if out.len() % (1 << 32) != isize {
        return Err(format!("gzip size {} but trailer says {isize}", out.len()));
    }
    Ok(out)
}
