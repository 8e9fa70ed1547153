//! PM4 packet encoding and decoding for Adreno a6xx (type-4 register writes, type-7 opcode packets).
//!
//! Headers carry odd-parity bits over the count and over the opcode/register (docs/hw/adreno-kgsl-pm4.md §6.1). Pure functions over
//! dwords: the stream builder ([`crate::a6xx::stream`]) encodes with them and the KGSL model decodes with them.

/// Type-7 packet marker (top nibble 7).
pub const TYPE7: u32 = 0x7000_0000;
/// Type-4 packet marker (top nibble 4).
pub const TYPE4: u32 = 0x4000_0000;

/// Type-7 opcodes used by the a6xx compute path (docs/hw/adreno-kgsl-pm4.md §6.2).
pub mod op {
    pub const CP_NOP: u8 = 0x10;
    pub const CP_WAIT_MEM_WRITES: u8 = 0x12;
    pub const CP_WAIT_FOR_IDLE: u8 = 0x26;
    pub const CP_RUN_OPENCL: u8 = 0x31;
    pub const CP_EXEC_CS: u8 = 0x33;
    pub const CP_LOAD_STATE6_FRAG: u8 = 0x34;
    pub const CP_WAIT_REG_MEM: u8 = 0x3C;
    pub const CP_REG_TO_MEM: u8 = 0x3E;
    pub const CP_EVENT_WRITE: u8 = 0x46;
    pub const CP_SET_MARKER: u8 = 0x65;
}

/// CP_EVENT_WRITE event numbers (a6xx).
pub mod event {
    /// Flush dirty lines, then store dword 3 to the address in dwords 1–2.
    pub const CACHE_FLUSH_TS: u32 = 4;
    /// Invalidate cache lines (a6xx only; 49 means CACHE_CLEAN on a7xx).
    pub const CACHE_INVALIDATE: u32 = 0x31;
}

/// 1 when `x` has an even number of set bits, so that `x` plus the parity bit has odd weight.
pub const fn odd_parity(x: u32) -> u32 {
    (x.count_ones() & 1) ^ 1
}

/// Type-7 header for `opcode` with `count` payload dwords.
pub const fn pkt7_hdr(opcode: u8, count: u16) -> u32 {
    let cnt = count as u32 & 0x3FFF;
    let op = opcode as u32 & 0x7F;
    TYPE7 | cnt | odd_parity(cnt) << 15 | op << 16 | odd_parity(op) << 23
}

/// Type-4 header writing `count` consecutive registers starting at `reg`.
pub const fn pkt4_hdr(reg: u32, count: u8) -> u32 {
    let cnt = count as u32 & 0x7F;
    let reg = reg & 0x3FFFF;
    TYPE4 | cnt | odd_parity(cnt) << 7 | reg << 8 | odd_parity(reg) << 27
}

/// A decoded packet header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Header {
    /// Opcode packet with `count` payload dwords.
    Type7 { opcode: u8, count: u16 },
    /// Register write of `count` values starting at `reg`.
    Type4 { reg: u32, count: u8 },
}

impl Header {
    /// Number of payload dwords following the header.
    pub const fn payload_len(self) -> usize {
        match self {
            Header::Type7 { count, .. } => count as usize,
            Header::Type4 { count, .. } => count as usize,
        }
    }
}

/// Why a dword is not a valid header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeaderError {
    /// Top nibble is neither 4 nor 7.
    UnknownType(u32),
    /// A parity bit does not match.
    BadParity(u32),
    /// A type-7 header with bits set outside its fields.
    ReservedBits(u32),
}

impl core::fmt::Display for HeaderError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            HeaderError::UnknownType(h) => {
                write!(f, "packet header {h:#010x} is neither type-4 nor type-7")
            }
            HeaderError::BadParity(h) => {
                write!(f, "packet header {h:#010x} has a wrong parity bit")
            }
            HeaderError::ReservedBits(h) => {
                write!(f, "packet header {h:#010x} has reserved bits set")
            }
        }
    }
}

/// Decode one header dword, checking both parity bits.
pub fn decode_header(h: u32) -> Result<Header, HeaderError> {
    match h >> 28 {
        7 => {
            let count = (h & 0x3FFF) as u16;
            let opcode = ((h >> 16) & 0x7F) as u8;
            if h & (1 << 14 | 0x0F00_0000) != 0 {
                return Err(HeaderError::ReservedBits(h));
            }
            if pkt7_hdr(opcode, count) != h {
                return Err(HeaderError::BadParity(h));
            }
            Ok(Header::Type7 { opcode, count })
        }
        4 => {
            let count = (h & 0x7F) as u8;
            let reg = (h >> 8) & 0x3FFFF;
            if pkt4_hdr(reg, count) != h {
                return Err(HeaderError::BadParity(h));
            }
            Ok(Header::Type4 { reg, count })
        }
        _ => Err(HeaderError::UnknownType(h)),
    }
}

/// One packet inside a stream: its header, the index of the header dword and the payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packet<'a> {
    pub at: usize,
    pub header: Header,
    pub payload: &'a [u32],
}

/// A stream decoding error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamError {
    Header {
        at: usize,
        err: HeaderError,
    },
    /// The payload runs past the end of the stream.
    Truncated {
        at: usize,
        need: usize,
        have: usize,
    },
}

impl core::fmt::Display for StreamError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            StreamError::Header { at, err } => write!(f, "dword {at}: {err}"),
            StreamError::Truncated { at, need, have } => {
                write!(
                    f,
                    "dword {at}: packet needs {need} payload dwords, only {have} left"
                )
            }
        }
    }
}

/// Iterator over the packets of a stream; stops after the first error.
pub struct Packets<'a> {
    dw: &'a [u32],
    pos: usize,
    failed: bool,
}

/// Walk the packets of `dw`.
pub fn packets(dw: &[u32]) -> Packets<'_> {
    Packets {
        dw,
        pos: 0,
        failed: false,
    }
}

impl<'a> Iterator for Packets<'a> {
    type Item = Result<Packet<'a>, StreamError>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.pos >= self.dw.len() {
            return None;
        }
        let at = self.pos;
        let header = match decode_header(self.dw[at]) {
            Ok(h) => h,
            Err(err) => {
                self.failed = true;
                return Some(Err(StreamError::Header { at, err }));
            }
        };
        let need = header.payload_len();
        let have = self.dw.len() - at - 1;
        if need > have {
            self.failed = true;
            return Some(Err(StreamError::Truncated { at, need, have }));
        }
        self.pos = at + 1 + need;
        Some(Ok(Packet {
            at,
            header,
            payload: &self.dw[at + 1..at + 1 + need],
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_match_spec_table() {
        // docs/hw/adreno-kgsl-pm4.md §6.2 "Header with the count tinygrad uses"
        assert_eq!(pkt7_hdr(op::CP_WAIT_MEM_WRITES, 0), 0x7092_8000);
        assert_eq!(pkt7_hdr(op::CP_WAIT_FOR_IDLE, 0), 0x7026_8000);
        assert_eq!(pkt7_hdr(op::CP_RUN_OPENCL, 1), 0x7031_0001);
        assert_eq!(pkt7_hdr(op::CP_EXEC_CS, 4), 0x70B3_0004);
        assert_eq!(pkt7_hdr(op::CP_LOAD_STATE6_FRAG, 3), 0x7034_8003);
        assert_eq!(pkt7_hdr(op::CP_WAIT_REG_MEM, 6), 0x70BC_8006);
        assert_eq!(pkt7_hdr(op::CP_REG_TO_MEM, 3), 0x703E_8003);
        assert_eq!(pkt7_hdr(op::CP_EVENT_WRITE, 4), 0x7046_0004);
        assert_eq!(pkt7_hdr(op::CP_EVENT_WRITE, 1), 0x7046_0001);
        assert_eq!(pkt7_hdr(op::CP_SET_MARKER, 1), 0x70E5_0001);
    }

    #[test]
    fn parity_makes_odd_weight() {
        for x in [0u32, 1, 2, 3, 0x7F, 0xBB08, 0x3FFFF, 12] {
            assert_eq!((x.count_ones() + odd_parity(x)) % 2, 1, "{x:#x}");
        }
    }

    #[test]
    fn decode_rejects_flipped_bits() {
        let h = pkt4_hdr(0xB990, 12);
        assert_eq!(
            decode_header(h),
            Ok(Header::Type4 {
                reg: 0xB990,
                count: 12
            })
        );
        assert_eq!(
            decode_header(h ^ (1 << 7)),
            Err(HeaderError::BadParity(h ^ (1 << 7)))
        );
        assert_eq!(
            decode_header(h ^ (1 << 27)),
            Err(HeaderError::BadParity(h ^ (1 << 27)))
        );
        assert_eq!(
            decode_header(0x1234_5678),
            Err(HeaderError::UnknownType(0x1234_5678))
        );
    }

    #[test]
    fn truncated_stream_is_an_error() {
        let s = [pkt7_hdr(op::CP_EXEC_CS, 4), 0, 1];
        let r: Result<heapless::Vec<Packet<'_>, 4>, _> = packets(&s).collect();
        assert_eq!(
            r,
            Err(StreamError::Truncated {
                at: 0,
                need: 4,
                have: 2
            })
        );
    }

    mod prop {
        use super::super::*;
        use proptest::prelude::*;
        proptest! {
            #[test]
            fn type7_roundtrip(opcode in 0u8..0x80, count in 0u16..0x4000) {
                prop_assert_eq!(decode_header(pkt7_hdr(opcode, count)), Ok(Header::Type7 { opcode, count }));
            }
            #[test]
            fn type4_roundtrip(reg in 0u32..0x40000, count in 0u8..0x80) {
                prop_assert_eq!(decode_header(pkt4_hdr(reg, count)), Ok(Header::Type4 { reg, count }));
            }
            #[test]
            fn single_bit_flip_in_fields_is_detected(reg in 0u32..0x40000, count in 1u8..0x80, bit in 0u32..18) {
                let h = pkt4_hdr(reg, count) ^ (1 << (8 + bit));
                prop_assert!(decode_header(h).is_err());
            }
        }
    }
}
