//! The IP discovery binary a Navi-class GPU keeps near the top of VRAM (the AM driver reads 10 KiB at
//! `vram_size − 64 KiB`): a binary header with a table list, the IP-discovery table (dies, and per die
//! the IP blocks with hardware id, instance, version and register base addresses), the harvest table
//! (instances fused off) and the GC info table (shader-engine counts). Layout in
//! docs/hw/amd-firmware.md §IP discovery.
//!
//! [`Discovery::parse`] checks both signatures and that every die, IP entry and table it will read lies
//! inside the buffer; afterwards every query is infallible and allocation-free. Malformed input is a
//! [`DiscoveryError`], never a panic.
#![forbid(unsafe_code)]

use core::fmt;

/// `binary_signature` of the binary header.
pub const BINARY_SIGNATURE: u32 = 0x2821_1407;
/// Signature of the IP-discovery table ("IPDS").
pub const IP_DISCOVERY_SIGNATURE: u32 = 0x5344_5049;
/// Signature of the harvest table ("HARV").
pub const HARVEST_SIGNATURE: u32 = 0x5652_4148;
/// Bytes the driver reads from VRAM.
pub const TABLE_BYTES: usize = 10 << 10;
/// Offset of the table below the end of VRAM.
pub const OFFSET_FROM_VRAM_END: u64 = 64 << 10;

/// Indices into the binary header's table list.
pub mod table {
    pub const IP_DISCOVERY: usize = 0;
    pub const GC: usize = 1;
    pub const HARVEST_INFO: usize = 2;
}

/// Hardware ids of the IP blocks the AM driver uses (Linux `*_HWID`).
pub mod hw_id {
    pub const MP1: u16 = 1;
    pub const SMUIO: u16 = 4;
    pub const GC: u16 = 11;
    pub const MMHUB: u16 = 34;
    pub const OSSSYS: u16 = 40;
    pub const HDP: u16 = 41;
    pub const SDMA0: u16 = 42;
    /// NBIF; the driver's NBIO block.
    pub const NBIF: u16 = 108;
    pub const MP0: u16 = 255;
}

const BINARY_HEADER_BYTES: usize = 12 + 6 * 8;
const IP_HEADER_BYTES: usize = 80;
const MAX_DIES: u16 = 16;
const HARVEST_ENTRIES: usize = 32;

/// Why a discovery binary was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DiscoveryError {
    /// `what` at `offset` needs `need` bytes but the buffer has `len`.
    Truncated {
        what: &'static str,
        offset: usize,
        need: usize,
        len: usize,
    },
    /// The binary header's signature is wrong.
    BinarySignature(u32),
    /// The IP-discovery table's signature is wrong.
    IpSignature(u32),
    /// More dies than the header has slots for.
    TooManyDies(u16),
    /// A GC info table version this parser does not know.
    GcInfoVersion { major: u16, minor: u16 },
}

impl fmt::Display for DiscoveryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            DiscoveryError::Truncated {
                what,
                offset,
                need,
                len,
            } => write!(
                f,
                "IP discovery: {what} at offset {offset:#x} needs {need} bytes, the table has {len}"
            ),
            DiscoveryError::BinarySignature(s) => write!(
                f,
                "IP discovery: binary signature {s:#010x} (expected {BINARY_SIGNATURE:#010x})"
            ),
            DiscoveryError::IpSignature(s) => write!(
                f,
                "IP discovery: table signature {s:#010x} (expected {IP_DISCOVERY_SIGNATURE:#010x})"
            ),
            DiscoveryError::TooManyDies(n) => {
                write!(f, "IP discovery: {n} dies (at most {MAX_DIES})")
            }
            DiscoveryError::GcInfoVersion { major, minor } => {
                write!(
                    f,
                    "IP discovery: GC info table version {major}.{minor} is not supported"
                )
            }
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for DiscoveryError {}

fn need<'b>(
    b: &'b [u8],
    off: usize,
    n: usize,
    what: &'static str,
) -> Result<&'b [u8], DiscoveryError> {
    off.checked_add(n)
        .and_then(|end| b.get(off..end))
        .ok_or(DiscoveryError::Truncated {
            what,
            offset: off,
            need: n,
            len: b.len(),
        })
}

fn u16_at(b: &[u8], off: usize, what: &'static str) -> Result<u16, DiscoveryError> {
    let s = need(b, off, 2, what)?;
    Ok(u16::from_le_bytes([s[0], s[1]]))
}

fn u32_at(b: &[u8], off: usize, what: &'static str) -> Result<u32, DiscoveryError> {
    let s = need(b, off, 4, what)?;
    Ok(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

/// One IP block instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IpEntry<'a> {
    pub die: u16,
    pub hw_id: u16,
    pub instance: u8,
    pub major: u8,
    pub minor: u8,
    pub revision: u8,
    /// Listed in the harvest table (fused off).
    pub harvested: bool,
    bases: &'a [u8],
    wide: bool,
}

impl IpEntry<'_> {
    /// Number of register base addresses (one per register segment).
    pub fn num_bases(&self) -> usize {
        self.bases.len() / if self.wide { 8 } else { 4 }
    }

    /// Base address `i` (in dwords, as the hardware lists them).
    pub fn base(&self, i: usize) -> Option<u64> {
        let w = if self.wide { 8 } else { 4 };
        let s = self.bases.get(i.checked_mul(w)?..(i + 1).checked_mul(w)?)?;
        let mut v = [0u8; 8];
        v[..w].copy_from_slice(s);
        Some(u64::from_le_bytes(v))
    }

    /// All base addresses in order.
    pub fn bases(&self) -> impl Iterator<Item = u64> + '_ {
        (0..self.num_bases()).filter_map(|i| self.base(i))
    }

    /// `(major, minor, revision)`.
    pub fn version(&self) -> (u8, u8, u8) {
        (self.major, self.minor, self.revision)
    }
}

/// The GC info table's counts (v1.x and v2.x share the leading fields).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GcInfo {
    pub version_major: u16,
    pub version_minor: u16,
    pub num_se: u32,
    /// CUs per shader array (v1.x lists WGPs, two CUs each, in two halves; v2.x lists CUs).
    pub num_cu_per_sa: u32,
    /// v1.x: shader arrays per SE; v2.x: SHs per SE.
    pub num_sa_per_se: u32,
    pub num_rb_per_se: u32,
    pub num_gprs: u32,
    pub wave_size: u32,
    pub max_waves_per_simd: u32,
    pub max_scratch_slots_per_cu: u32,
    pub lds_size: u32,
}

/// A checked discovery binary.
#[derive(Clone, Copy, Debug)]
pub struct Discovery<'a> {
    bytes: &'a [u8],
    ip_header: usize,
    num_dies: u16,
    wide: bool,
    harvest: Option<usize>,
    pub version_major: u16,
    pub version_minor: u16,
    pub gc_info: Option<GcInfo>,
}

impl<'a> Discovery<'a> {
    /// Parse the binary at the start of `bytes` (what the driver read from VRAM).
    pub fn parse(bytes: &'a [u8]) -> Result<Self, DiscoveryError> {
        need(bytes, 0, BINARY_HEADER_BYTES, "binary header")?;
        let sig = u32_at(bytes, 0, "binary header")?;
        if sig != BINARY_SIGNATURE {
            return Err(DiscoveryError::BinarySignature(sig));
        }
        let table_offset = |i: usize| u16_at(bytes, 12 + 8 * i, "table list").map(usize::from);
        let ip_header = table_offset(table::IP_DISCOVERY)?;
        need(bytes, ip_header, IP_HEADER_BYTES, "IP discovery header")?;
        let sig = u32_at(bytes, ip_header, "IP discovery header")?;
        if sig != IP_DISCOVERY_SIGNATURE {
            return Err(DiscoveryError::IpSignature(sig));
        }
        let num_dies = u16_at(bytes, ip_header + 12, "IP discovery header")?;
        if num_dies > MAX_DIES {
            return Err(DiscoveryError::TooManyDies(num_dies));
        }
        let wide = bytes[ip_header + 78] & 1 != 0;

        let harvest = match table_offset(table::HARVEST_INFO)? {
            0 => None,
            off => {
                need(bytes, off, 8 + 4 * HARVEST_ENTRIES, "harvest table")?;
                (u32_at(bytes, off, "harvest table")? == HARVEST_SIGNATURE).then_some(off)
            }
        };
        let gc_info = match table_offset(table::GC)? {
            0 => None,
            off => Some(parse_gc_info(bytes, off)?),
        };
        let d = Discovery {
            bytes,
            ip_header,
            num_dies,
            wide,
            harvest,
            version_major: u16_at(bytes, 4, "binary header")?,
            version_minor: u16_at(bytes, 6, "binary header")?,
            gc_info,
        };
        // Walk every die and entry once so that iteration later cannot fail.
        for die in 0..num_dies {
            let (_, mut at, n) = d.die(die)?;
            for _ in 0..n {
                at = d.entry(die, at)?.1;
            }
        }
        Ok(d)
    }

    /// `(die id, first entry offset, number of IPs)` of die slot `i`.
    fn die(&self, i: u16) -> Result<(u16, usize, u16), DiscoveryError> {
        let slot = self.ip_header + 14 + 4 * usize::from(i);
        let die_id = u16_at(self.bytes, slot, "die list")?;
        let off = usize::from(u16_at(self.bytes, slot + 2, "die list")?);
        need(self.bytes, off, 4, "die header")?;
        let num_ips = u16_at(self.bytes, off + 2, "die header")?;
        Ok((die_id, off + 4, num_ips))
    }

    /// The entry at `at` and the offset of the next one.
    fn entry(&self, die: u16, at: usize) -> Result<(IpEntry<'a>, usize), DiscoveryError> {
        let head = need(self.bytes, at, 8, "IP entry")?;
        let num_bases = usize::from(head[3]);
        let w = if self.wide { 8 } else { 4 };
        let bases = need(self.bytes, at + 8, num_bases * w, "IP base addresses")?;
        let hw_id = u16::from_le_bytes([head[0], head[1]]);
        let instance = head[2];
        Ok((
            IpEntry {
                die,
                hw_id,
                instance,
                major: head[4],
                minor: head[5],
                revision: head[6],
                harvested: self.is_harvested(hw_id, instance),
                bases,
                wide: self.wide,
            },
            at + 8 + num_bases * w,
        ))
    }

    fn is_harvested(&self, hw_id: u16, instance: u8) -> bool {
        let Some(off) = self.harvest else {
            return false;
        };
        (0..HARVEST_ENTRIES)
            .map(|i| off + 8 + 4 * i)
            .map(|at| {
                (
                    u16_at(self.bytes, at, "harvest table").unwrap_or(0),
                    self.bytes.get(at + 2).copied().unwrap_or(0),
                )
            })
            .take_while(|&(id, _)| id != 0)
            .any(|e| e == (hw_id, instance))
    }

    /// Number of dies.
    pub fn num_dies(&self) -> u16 {
        self.num_dies
    }

    /// Whether base addresses are 64-bit.
    pub fn base_addr_64_bit(&self) -> bool {
        self.wide
    }

    /// Every IP entry of every die, harvested ones included (see [`IpEntry::harvested`]).
    pub fn ips(&self) -> impl Iterator<Item = IpEntry<'a>> + '_ {
        (0..self.num_dies).flat_map(move |die| {
            let (_, first, n) = self.die(die).unwrap_or((0, 0, 0));
            let mut at = first;
            (0..n).map_while(move |_| {
                let (e, next) = self.entry(die, at).ok()?;
                at = next;
                Some(e)
            })
        })
    }

    /// The un-harvested instance `instance` of `hw_id`.
    pub fn find(&self, hw_id: u16, instance: u8) -> Option<IpEntry<'a>> {
        self.ips()
            .find(|e| e.hw_id == hw_id && e.instance == instance && !e.harvested)
    }

    /// The version of the first un-harvested instance of `hw_id`.
    pub fn version(&self, hw_id: u16) -> Option<(u8, u8, u8)> {
        self.ips()
            .find(|e| e.hw_id == hw_id && !e.harvested)
            .map(|e| e.version())
    }
}

fn parse_gc_info(b: &[u8], off: usize) -> Result<GcInfo, DiscoveryError> {
    need(b, off, 12, "GC info header")?;
    let major = u16_at(b, off + 4, "GC info header")?;
    let minor = u16_at(b, off + 6, "GC info header")?;
    if !(major == 1 || major == 2) {
        return Err(DiscoveryError::GcInfoVersion { major, minor });
    }
    need(b, off, 80, "GC info table")?;
    let r = |o: usize| u32_at(b, off + o, "GC info table");
    let (per_sa, sa_per_se) = if major == 1 {
        (r(16)?.saturating_add(r(20)?).saturating_mul(2), r(76)?)
    } else {
        (r(16)?, r(20)?)
    };
    Ok(GcInfo {
        version_major: major,
        version_minor: minor,
        num_se: r(12)?,
        num_cu_per_sa: per_sa,
        num_sa_per_se: sa_per_se,
        num_rb_per_se: r(24)?,
        num_gprs: r(32)?,
        wave_size: r(56)?,
        max_waves_per_simd: r(60)?,
        max_scratch_slots_per_cu: r(64)?,
        lds_size: r(68)?,
    })
}
