//! Pure encoders of the ASM24 custom-firmware vendor requests and the parser of the TLP completion
//! (docs/hw/asm24-bridge.md §2–§5): 0xF0 TLP requests, config addresses, byte enables and 0xF2
//! SRAM DMA arms. Nothing here does I/O. The emulator does not use these: it decodes with its own
//! code (`emu::bridge::wire`), and both are checked against tinygrad's recorded traffic
//! (docs/hw/asm24-bridge.md §15) and against each other (`tests/bridge_proto.rs`).
use core::fmt;
use modelrt_hal::pci::Bdf;

/// Vendor request codes (bRequest), docs/hw/asm24-bridge.md §2.
pub mod request {
    /// IN: read up to 255 bytes of XDATA at wValue.
    pub const XDATA_READ: u8 = 0xE4;
    /// OUT: write the byte in wIndex to XDATA at wValue.
    pub const XDATA_WRITE: u8 = 0xE5;
    /// OUT: program the TLP engine (12-byte payload); IN: fetch the 8-byte completion.
    pub const TLP: u8 = 0xF0;
    /// OUT: arm the SRAM DMA engine.
    pub const SRAM_DMA: u8 = 0xF2;
    /// OUT: PCIe power/link on (wValue 1) or off (0).
    pub const PCIE_POWER: u8 = 0xF3;
}

/// TLP fmt_type values used by the host, docs/hw/asm24-bridge.md §3.2.
pub mod fmt_type {
    pub const CFG_RD0: u8 = 0x04;
    pub const CFG_RD1: u8 = 0x05;
    pub const CFG_WR0: u8 = 0x44;
    pub const CFG_WR1: u8 = 0x45;
    /// Memory read, 4-DW header.
    pub const MRD64: u8 = 0x20;
    /// Memory write, 4-DW header (posted).
    pub const MWR64: u8 = 0x60;
}

/// Length of the 0xF0 OUT payload.
pub const TLP_OUT_LEN: usize = 12;
/// Length of the 0xF0 IN completion.
pub const COMPLETION_LEN: usize = 8;
/// Largest 0xE4 read per control transfer.
pub const XDATA_READ_MAX: usize = 0xFF;
/// SRAM DMA sector.
pub const SECTOR: usize = 512;
/// SRAM DMA slot (16 KiB).
pub const SLOT: usize = 0x4000;
/// Bridge SRAM size (512 KiB, 32 slots).
pub const SRAM_SIZE: usize = 0x80000;
/// Number of SRAM slots.
pub const SRAM_SLOTS: usize = SRAM_SIZE / SLOT;

/// Why a request could not be encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EncodeError {
    /// Access size not in 1..=4 or crossing a dword boundary.
    BadAccess { offset: u8, size: u8 },
    /// Config register offset ≥ 0x1000, device ≥ 32 or function ≥ 8.
    BadConfigAddress,
    /// Streaming length not a non-zero multiple of 4 or too many dwords.
    BadStreamLength(usize),
    /// SRAM DMA transfer outside the 512 KiB SRAM, empty, or not sector-padded where required.
    BadSramRange { first_slot: usize, len: usize },
    /// A mode field not in the table of docs/hw/asm24-bridge.md §2.
    BadMode(u16),
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EncodeError::BadAccess { offset, size } => {
                write!(f, "bad access: {size} bytes at byte offset {offset} (must be 1-4 bytes inside one dword)")
            }
            EncodeError::BadConfigAddress => {
                write!(f, "bad config address (reg < 0x1000, dev < 32, fn < 8)")
            }
            EncodeError::BadStreamLength(n) => {
                write!(f, "bad streaming length {n} (non-zero multiple of 4)")
            }
            EncodeError::BadSramRange { first_slot, len } => {
                write!(f, "SRAM transfer of {len} bytes at slot {first_slot} does not fit the 512 KiB SRAM")
            }
            EncodeError::BadMode(m) => write!(f, "unknown TLP mode {m}"),
        }
    }
}

impl core::error::Error for EncodeError {}

/// 0xF0 wIndex mode (bits 1:0), docs/hw/asm24-bridge.md §2/§3.7.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlpMode {
    /// One TLP; completion fetched with 0xF0 IN.
    Single = 0,
    /// Stream of MWr dwords taken from the next bulk OUT.
    StreamWrite = 1,
    /// Stream of MRd dwords delivered on the next bulk IN.
    StreamRead = 2,
}

/// One 0xF0 OUT request: setup fields plus the 12-byte payload (docs/hw/asm24-bridge.md §3.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TlpRequest {
    pub fmt_type: u8,
    /// 4-bit byte-enable mask.
    pub byte_enable: u8,
    /// Dword-aligned address (bits 1:0 clear).
    pub address: u64,
    /// Mode 0: write data already shifted to its byte lane; modes 1/2: dword count.
    pub data: u32,
    pub mode: TlpMode,
}

impl TlpRequest {
    /// wValue = fmt_type | byte_enable << 8.
    pub fn value(&self) -> u16 {
        self.fmt_type as u16 | ((self.byte_enable as u16 & 0xF) << 8)
    }

    /// wIndex = mode.
    pub fn index(&self) -> u16 {
        self.mode as u16
    }

    /// The 12-byte little-endian payload: address low, address high, data/count.
    pub fn payload(&self) -> [u8; TLP_OUT_LEN] {
        let mut p = [0u8; TLP_OUT_LEN];
        p[0..4].copy_from_slice(&(self.address as u32).to_le_bytes());
        p[4..8].copy_from_slice(&((self.address >> 32) as u32).to_le_bytes());
        p[8..12].copy_from_slice(&self.data.to_le_bytes());
        p
    }

    /// Host rule (docs/hw/asm24-bridge.md §3.2): no 0xF0 IN for MWr (`fmt & 0xDF == 0x40`) or messages
    /// (`fmt & 0xB8 == 0x30`); streaming modes never read a completion.
    pub fn expects_completion(&self) -> bool {
        self.mode == TlpMode::Single && !is_posted(self.fmt_type)
    }
}

/// True for fmt_types the host sends without reading a completion (docs/hw/asm24-bridge.md §3.2).
pub fn is_posted(fmt: u8) -> bool {
    (fmt & 0xDF) == 0x40 || (fmt & 0xB8) == 0x30
}

/// Byte-enable mask for `size` bytes at byte `offset` of a dword (docs/hw/asm24-bridge.md §3.3).
pub fn byte_enable(offset: u8, size: u8) -> Result<u8, EncodeError> {
    if !(1..=4).contains(&size) || offset > 3 || offset + size > 4 {
        return Err(EncodeError::BadAccess { offset, size });
    }
    Ok((((1u16 << size) - 1) << offset) as u8)
}

/// `bus<<24 | dev<<19 | fn<<16 | reg` (docs/hw/asm24-bridge.md §3.4); `reg` keeps its byte offset here.
pub fn config_address(bdf: Bdf, reg: u16) -> Result<u32, EncodeError> {
    if reg >= 0x1000 || bdf.dev >= 32 || bdf.func >= 8 {
        return Err(EncodeError::BadConfigAddress);
    }
    Ok((bdf.bus as u32) << 24 | (bdf.dev as u32) << 19 | (bdf.func as u32) << 16 | reg as u32)
}

fn single(fmt: u8, address: u64, size: u8, value: u32) -> Result<TlpRequest, EncodeError> {
    let offset = (address & 3) as u8;
    let byte_enable = byte_enable(offset, size)?;
    let mask = if size == 4 {
        u32::MAX
    } else {
        (1u32 << (8 * size)) - 1
    };
    Ok(TlpRequest {
        fmt_type: fmt,
        byte_enable,
        address: address & !3,
        data: (value & mask) << (8 * offset),
        mode: TlpMode::Single,
    })
}

/// Config read of `size` bytes; type 1 when `bus > 0` (docs/hw/asm24-bridge.md §3.2).
pub fn config_read(bdf: Bdf, reg: u16, size: u8) -> Result<TlpRequest, EncodeError> {
    let fmt = if bdf.bus > 0 {
        fmt_type::CFG_RD1
    } else {
        fmt_type::CFG_RD0
    };
    single(fmt, config_address(bdf, reg)? as u64, size, 0)
}

/// Config write of `size` bytes of `value`; type 1 when `bus > 0`.
pub fn config_write(bdf: Bdf, reg: u16, size: u8, value: u32) -> Result<TlpRequest, EncodeError> {
    let fmt = if bdf.bus > 0 {
        fmt_type::CFG_WR1
    } else {
        fmt_type::CFG_WR0
    };
    single(fmt, config_address(bdf, reg)? as u64, size, value)
}

/// Mode-0 memory read of `size` bytes (64-bit MRd).
pub fn mem_read(address: u64, size: u8) -> Result<TlpRequest, EncodeError> {
    single(fmt_type::MRD64, address, size, 0)
}

/// Mode-0 memory write of `size` bytes (posted 64-bit MWr).
pub fn mem_write(address: u64, size: u8, value: u32) -> Result<TlpRequest, EncodeError> {
    single(fmt_type::MWR64, address, size, value)
}

fn stream(fmt: u8, mode: TlpMode, address: u64, len: usize) -> Result<TlpRequest, EncodeError> {
    if len == 0 || !len.is_multiple_of(4) || len / 4 > u32::MAX as usize || address & 3 != 0 {
        return Err(EncodeError::BadStreamLength(len));
    }
    Ok(TlpRequest {
        fmt_type: fmt,
        byte_enable: 0xF,
        address,
        data: (len / 4) as u32,
        mode,
    })
}

/// Mode-1 streaming write of `len` bytes (followed by one bulk OUT of `len` bytes).
pub fn stream_write(address: u64, len: usize) -> Result<TlpRequest, EncodeError> {
    stream(fmt_type::MWR64, TlpMode::StreamWrite, address, len)
}

/// Mode-2 streaming read of `len` bytes (followed by one bulk IN of `len` bytes).
pub fn stream_read(address: u64, len: usize) -> Result<TlpRequest, EncodeError> {
    stream(fmt_type::MRD64, TlpMode::StreamRead, address, len)
}

/// PCIe completion status, bits 7:5 of completion byte 4 (docs/hw/asm24-bridge.md §3.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CplStatus {
    Success,
    UnsupportedRequest,
    ConfigRetry,
    CompleterAbort,
    Reserved(u8),
}

impl CplStatus {
    /// From the 3-bit field.
    pub fn from_bits(bits: u8) -> Self {
        match bits & 7 {
            0b000 => CplStatus::Success,
            0b001 => CplStatus::UnsupportedRequest,
            0b010 => CplStatus::ConfigRetry,
            0b100 => CplStatus::CompleterAbort,
            other => CplStatus::Reserved(other),
        }
    }

    /// The 3-bit field.
    pub fn bits(self) -> u8 {
        match self {
            CplStatus::Success => 0b000,
            CplStatus::UnsupportedRequest => 0b001,
            CplStatus::ConfigRetry => 0b010,
            CplStatus::CompleterAbort => 0b100,
            CplStatus::Reserved(b) => b & 7,
        }
    }
}

impl fmt::Display for CplStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CplStatus::Success => write!(f, "Success"),
            CplStatus::UnsupportedRequest => write!(f, "Unsupported Request"),
            CplStatus::ConfigRetry => write!(f, "Config Retry"),
            CplStatus::CompleterAbort => write!(f, "Completer Abort"),
            CplStatus::Reserved(b) => write!(f, "Reserved (0b{b:03b})"),
        }
    }
}

/// The 8-byte 0xF0 IN completion (docs/hw/asm24-bridge.md §3.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Completion {
    /// Completion data (whole dword; select lanes with [`extract_lanes`]).
    pub data: u32,
    /// Completion header bytes 4..5 (status in byte 4 bits 7:5).
    pub header: [u8; 2],
    /// Firmware "compl_status" byte (not interpreted by the host).
    pub compl_status: u8,
    /// Engine status: 0 = OK, non-zero = engine error/timeout (retried).
    pub ret_status: u8,
}

impl Completion {
    pub fn from_bytes(b: &[u8; COMPLETION_LEN]) -> Self {
        Completion {
            data: u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
            header: [b[4], b[5]],
            compl_status: b[6],
            ret_status: b[7],
        }
    }

    /// Completion status from byte 4 bits 7:5.
    pub fn status(&self) -> CplStatus {
        CplStatus::from_bits(self.header[0] >> 5)
    }
}

/// Bytes `offset..offset+size` of a completion dword (docs/hw/asm24-bridge.md §3.3).
pub fn extract_lanes(data: u32, offset: u8, size: u8) -> u32 {
    let v = data >> (8 * (offset as u32 & 3));
    if size >= 4 {
        v
    } else {
        v & ((1u32 << (8 * size as u32)) - 1)
    }
}

/// One 0xF2 SRAM DMA arm (docs/hw/asm24-bridge.md §5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SramArm {
    /// Number of 512-byte sectors (15 bits).
    pub sectors: u16,
    /// true = SRAM → host (read arm), false = host → SRAM (write arm).
    pub to_host: bool,
    pub first_slot: u8,
    /// Number of 16 KiB slots covered.
    pub slots: u8,
}

impl SramArm {
    /// wValue = sectors | direction << 15.
    pub fn value(&self) -> u16 {
        (self.sectors & 0x7FFF) | if self.to_host { 0x8000 } else { 0 }
    }

    /// wIndex = first_slot | slots << 8.
    pub fn index(&self) -> u16 {
        self.first_slot as u16 | (self.slots as u16) << 8
    }

    /// Bytes moved on the bulk endpoint after this arm.
    pub fn wire_len(&self) -> usize {
        self.sectors as usize * SECTOR
    }
}

/// `len` rounded up to whole sectors.
pub fn sector_padded(len: usize) -> usize {
    len.div_ceil(SECTOR) * SECTOR
}

/// Write arm for `len` payload bytes landing at `first_slot` (docs/hw/asm24-bridge.md §5.1; padded to sectors).
pub fn sram_write_arm(first_slot: usize, len: usize) -> Result<SramArm, EncodeError> {
    let padded = sector_padded(len);
    if len == 0 || first_slot >= SRAM_SLOTS || first_slot * SLOT + padded > SRAM_SIZE {
        return Err(EncodeError::BadSramRange { first_slot, len });
    }
    Ok(SramArm {
        sectors: (padded / SECTOR) as u16,
        to_host: false,
        first_slot: first_slot as u8,
        slots: padded.div_ceil(SLOT) as u8,
    })
}

/// Read arm for `len` bytes from SRAM offset 0 (docs/hw/asm24-bridge.md §5.2).
pub fn sram_read_arm(len: usize) -> Result<SramArm, EncodeError> {
    if len == 0 || len > SRAM_SIZE {
        return Err(EncodeError::BadSramRange { first_slot: 0, len });
    }
    Ok(SramArm {
        sectors: (len.div_ceil(SECTOR) & 0x7FFF) as u16,
        to_host: true,
        first_slot: 0,
        slots: len.div_ceil(SLOT) as u8,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const GPU: Bdf = Bdf {
        bus: 4,
        dev: 0,
        func: 0,
    };

    #[test]
    fn byte_enable_table() {
        // docs/hw/asm24-bridge.md §3.3: ((1<<size)-1) << offset
        assert_eq!(byte_enable(0, 4), Ok(0x0F));
        assert_eq!(byte_enable(0, 1), Ok(0x01));
        assert_eq!(byte_enable(3, 1), Ok(0x08));
        assert_eq!(byte_enable(2, 2), Ok(0x0C));
        assert_eq!(byte_enable(1, 2), Ok(0x06));
        assert!(byte_enable(2, 4).is_err());
        assert!(byte_enable(0, 0).is_err());
        assert!(byte_enable(0, 5).is_err());
    }

    #[test]
    fn config_address_layout() {
        // docs/hw/asm24-bridge.md §3.4: bus<<24 | dev<<19 | fn<<16 | reg
        let bdf = Bdf {
            bus: 4,
            dev: 0,
            func: 0,
        };
        assert_eq!(config_address(bdf, 0x10), Ok(0x0400_0010));
        let bdf = Bdf {
            bus: 0xFF,
            dev: 31,
            func: 7,
        };
        assert_eq!(config_address(bdf, 0xFFF), Ok(0xFFFF_0FFF));
        assert!(config_address(bdf, 0x1000).is_err());
        assert!(config_address(
            Bdf {
                bus: 0,
                dev: 32,
                func: 0
            },
            0
        )
        .is_err());
        assert!(config_address(
            Bdf {
                bus: 0,
                dev: 0,
                func: 8
            },
            0
        )
        .is_err());
    }

    #[test]
    fn config_read_golden() {
        // Type 1 (0x05) on bus 4, BE 0x0F, address 0x04000010, wIndex 0 (mode 0).
        let r = config_read(GPU, 0x10, 4).unwrap();
        assert_eq!(r.value(), 0x0F05);
        assert_eq!(r.index(), 0);
        assert_eq!(r.payload(), [0x10, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert!(r.expects_completion());
        // Type 0 on bus 0; 1-byte command register read at 0x04.
        let r = config_read(
            Bdf {
                bus: 0,
                dev: 0,
                func: 0,
            },
            0x04,
            1,
        )
        .unwrap();
        assert_eq!(r.value(), 0x0104);
    }

    #[test]
    fn config_write_golden() {
        // docs/hw/asm24-bridge.md §7.6: command = 0x07 (1 byte at 0x04) on bus 4 → 0x45, BE 0x1.
        let r = config_write(GPU, 0x04, 1, 0x07).unwrap();
        assert_eq!(r.value(), 0x0145);
        assert_eq!(r.payload(), [0x04, 0, 0, 4, 0, 0, 0, 0, 0x07, 0, 0, 0]);
        assert!(
            r.expects_completion(),
            "config writes wait for the completion (§7.2)"
        );
        // 2-byte write at 0x22 (memory limit 0xFFFF) on bus 0: CfgWr0, BE 0xC, data shifted by 16.
        let r = config_write(
            Bdf {
                bus: 0,
                dev: 0,
                func: 0,
            },
            0x22,
            2,
            0xFFFF,
        )
        .unwrap();
        assert_eq!(r.value(), 0x0C44);
        assert_eq!(r.address, 0x20);
        assert_eq!(r.data, 0xFFFF_0000);
    }

    #[test]
    fn memory_and_stream_golden() {
        let r = mem_write(0x1020_0006, 2, 0xABCD).unwrap();
        assert_eq!(
            (r.value(), r.address, r.data),
            (0x0C60, 0x1020_0004, 0xABCD_0000)
        );
        assert!(!r.expects_completion(), "MWr is posted");
        let r = mem_read(0x8_0000_0001, 1).unwrap();
        assert_eq!((r.value(), r.address), (0x0220, 0x8_0000_0000));
        assert_eq!(r.payload()[4..8], [8, 0, 0, 0]);
        // docs/hw/asm24-bridge.md §3.7: modes 1/2 use 0x60/0x20 with BE 0x0F, data = dword count.
        let w = stream_write(0x1020_0000, 16).unwrap();
        assert_eq!((w.value(), w.index(), w.data), (0x0F60, 1, 4));
        assert!(!w.expects_completion());
        let r = stream_read(0x1020_0000, 4).unwrap();
        assert_eq!((r.value(), r.index(), r.data), (0x0F20, 2, 1));
        assert!(!r.expects_completion());
        assert!(stream_read(0, 6).is_err());
        assert!(stream_write(0, 0).is_err());
    }

    #[test]
    fn posted_rule() {
        // docs/hw/asm24-bridge.md §3.2: (fmt & 0xDF) == 0x40 or (fmt & 0xB8) == 0x30 skip the completion.
        for f in [0x40u8, 0x60, 0x30, 0x31, 0x34, 0x70, 0x72] {
            assert!(is_posted(f), "{f:#x}");
        }
        for f in [0x04u8, 0x05, 0x44, 0x45, 0x20, 0x00] {
            assert!(!is_posted(f), "{f:#x}");
        }
    }

    #[test]
    fn completion_status_table() {
        // docs/hw/asm24-bridge.md §3.5: bits 7:5 of byte 4.
        let c = |b4: u8| Completion::from_bytes(&[0, 0, 0, 0, b4, 0, 0, 0]).status();
        assert_eq!(c(0x00), CplStatus::Success);
        assert_eq!(c(0x20), CplStatus::UnsupportedRequest);
        assert_eq!(c(0x40), CplStatus::ConfigRetry);
        assert_eq!(c(0x80), CplStatus::CompleterAbort);
        assert_eq!(c(0x60), CplStatus::Reserved(3));
        assert_eq!(
            c(0x1F),
            CplStatus::Success,
            "low bits are byte count, not status"
        );
        let raw = [0x78, 0x56, 0x34, 0x12, 0x00, 0x04, 0x11, 0x02];
        let cpl = Completion::from_bytes(&raw);
        assert_eq!(
            (cpl.data, cpl.compl_status, cpl.ret_status),
            (0x1234_5678, 0x11, 2)
        );
    }

    #[test]
    fn lanes() {
        assert_eq!(extract_lanes(0x1234_5678, 0, 4), 0x1234_5678);
        assert_eq!(extract_lanes(0x1234_5678, 2, 2), 0x1234);
        assert_eq!(extract_lanes(0x1234_5678, 3, 1), 0x12);
        assert_eq!(extract_lanes(0x1234_5678, 1, 1), 0x56);
    }

    #[test]
    fn sram_arm_golden() {
        // docs/hw/asm24-bridge.md §14.1: full window at slot 16: wire = round_up(0x3FFFC + 4, 512) = 0x40000
        // → wValue 0x200 sectors, wIndex 16 | 16<<8.
        let a = sram_write_arm(16, 0x40000).unwrap();
        assert_eq!((a.value(), a.index()), (0x0200, 0x1010));
        // 1 byte at slot 0 pads to one sector, one slot.
        let a = sram_write_arm(0, 1).unwrap();
        assert_eq!((a.value(), a.index(), a.wire_len()), (0x0001, 0x0100, 512));
        // docs/hw/asm24-bridge.md §5.2: read arm of 0x80000 → 0x400 | 0x8000, 32 slots.
        let r = sram_read_arm(0x80000).unwrap();
        assert_eq!((r.value(), r.index()), (0x8400, 0x2000));
        let r = sram_read_arm(1000).unwrap();
        assert_eq!((r.value(), r.index()), (0x8002, 0x0100));
        assert!(sram_write_arm(16, 0x40001).is_err());
        assert!(sram_write_arm(32, 512).is_err());
        assert!(sram_read_arm(0x80001).is_err());
    }
}
