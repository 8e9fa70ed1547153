//! The emulator's own reading of the custom firmware's vendor requests (docs/hw/asm24-bridge.md,
//! "Vendor requests", "0xF0 TLP engine", "0xF2 SRAM DMA engine").
//!
//! Written from the protocol tables, not from the driver's encoders in `proto`: the emulator
//! must not share a layout mistake with the driver, or a wrong layout would pass every round-trip
//! test. The golden vectors recorded from tinygrad (`usbgpu/bridge/tests/golden/`) check this decoder on
//! its own. Besides decoding requests it builds the 8-byte completion the firmware answers a TLP
//! with.
use crate::proto::CplStatus;

/// bRequest codes of the vendor request table.
pub mod code {
    /// IN: read XDATA bytes at wValue.
    pub const XDATA_READ: u8 = 0xE4;
    /// OUT: write the low byte of wIndex to XDATA at wValue.
    pub const XDATA_WRITE: u8 = 0xE5;
    /// OUT: TLP request (12-byte data stage); IN: the last mode-0 completion (8 bytes).
    pub const TLP: u8 = 0xF0;
    /// OUT: SRAM DMA arm (no data stage).
    pub const SRAM_DMA: u8 = 0xF2;
    /// OUT: PCIe power (no data stage).
    pub const POWER: u8 = 0xF3;
}

/// Most bytes one 0xE4 request may read.
pub const XDATA_READ_LIMIT: usize = 255;
/// Bytes of a TLP completion.
pub const COMPLETION_BYTES: usize = 8;
/// Bytes of an SRAM DMA sector.
pub const SECTOR_BYTES: usize = 512;
/// Bytes of an SRAM DMA slot.
pub const SLOT_BYTES: usize = 16 * 1024;
/// Bytes of bridge SRAM.
pub const SRAM_BYTES: usize = 512 * 1024;

/// What a TLP asks the PCIe side to do (from its fmt_type).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlpKind {
    /// Configuration read; `type1` = forwarded through bridges (fmt 0x05), else type 0 (0x04).
    ConfigRead { type1: bool },
    /// Configuration write (0x44 / 0x45); completes like a read.
    ConfigWrite { type1: bool },
    /// Memory read with a 4-dword header (0x20).
    MemRead,
    /// Memory write with a 4-dword header (0x60); posted, no completion.
    MemWrite,
    /// A message (posted, ignored by the bridge model).
    Message(u8),
    /// Any other fmt_type.
    Other(u8),
}

impl TlpKind {
    fn of(fmt: u8) -> Self {
        match fmt {
            0x04 => TlpKind::ConfigRead { type1: false },
            0x05 => TlpKind::ConfigRead { type1: true },
            0x44 => TlpKind::ConfigWrite { type1: false },
            0x45 => TlpKind::ConfigWrite { type1: true },
            0x20 => TlpKind::MemRead,
            0x60 => TlpKind::MemWrite,
            // Message TLPs: type field 0b10rrr with fmt 0b00x / 0b01x.
            f if (f >> 3) & 0b1_0111 == 0b0_0110 => TlpKind::Message(f),
            f => TlpKind::Other(f),
        }
    }

    /// Posted TLPs produce no completion (memory writes and messages; 0x40 is the 3-dword MWr).
    pub fn posted(self) -> bool {
        matches!(
            self,
            TlpKind::MemWrite | TlpKind::Message(_) | TlpKind::Other(0x40)
        )
    }
}

/// Bus/device/function and register of a configuration TLP address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConfigTarget {
    pub bus: u8,
    pub device: u8,
    pub function: u8,
    /// Dword-aligned register offset (0..0xFFC).
    pub register: u16,
}

/// A decoded 0xF0 OUT request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlpRequest {
    /// Mode 0: one TLP, data in its byte lanes.
    Single {
        kind: TlpKind,
        /// Byte-enable mask, bits 3:0 (bit n = byte lane n of the dword).
        byte_enable: u8,
        /// Dword address.
        address: u64,
        /// The dword of write data (lanes outside `byte_enable` carry nothing).
        data: u32,
    },
    /// Mode 1: a burst of memory-write dwords arriving on the next bulk OUT.
    StreamWrite { address: u64, dwords: u32 },
    /// Mode 2: a burst of memory-read dwords leaving on the next bulk IN.
    StreamRead { address: u64, dwords: u32 },
}

/// A decoded 0xF2 arm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SramArm {
    /// true: SRAM → host (read arm, bit 15 of wValue); false: host → SRAM.
    pub to_host: bool,
    /// 512-byte sectors to move (wValue bits 14:0).
    pub sectors: u16,
    /// First 16 KiB slot (wIndex low byte).
    pub first_slot: u8,
    /// Number of slots the transfer covers (wIndex high byte).
    pub slots: u8,
}

impl SramArm {
    /// Byte offset of the first slot in SRAM.
    pub fn offset(&self) -> usize {
        self.first_slot as usize * SLOT_BYTES
    }

    /// Bytes the bulk transfer after this arm carries.
    pub fn bytes(&self) -> usize {
        self.sectors as usize * SECTOR_BYTES
    }
}

/// A decoded vendor OUT request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutRequest {
    XdataWrite { address: u16, value: u8 },
    Tlp(TlpRequest),
    Sram(SramArm),
    Power { on: bool },
}

/// A decoded vendor IN request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InRequest {
    XdataRead { address: u16, len: usize },
    Completion,
}

/// Why a request is not one the firmware understands (the device stalls it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Malformed {
    UnknownRequest(u8),
    /// A data stage where none belongs, or a 0xF0 payload that is not 12 bytes.
    DataStage {
        request: u8,
        len: usize,
    },
    /// 0xF0 mode 3.
    Mode(u16),
    /// A streaming TLP with a fmt_type other than 0x60 (write) / 0x20 (read).
    StreamFmt(u8),
    /// 0xE4 asking for more than 255 bytes, or reading past XDATA's end.
    XdataRange {
        address: u16,
        len: usize,
    },
    /// 0xF3 with a wValue other than 0 (off) or 1 (on).
    PowerValue(u16),
}

fn le32(b: &[u8]) -> u32 {
    u32::from(b[0]) | u32::from(b[1]) << 8 | u32::from(b[2]) << 16 | u32::from(b[3]) << 24
}

fn no_data(request: u8, data: &[u8]) -> Result<(), Malformed> {
    if data.is_empty() {
        Ok(())
    } else {
        Err(Malformed::DataStage {
            request,
            len: data.len(),
        })
    }
}

/// Decode the 0xF0 OUT setup fields and data stage.
///
/// wValue: fmt_type in bits 7:0, byte enables in bits 11:8. wIndex bits 1:0: mode.
/// Data (little endian): address bits 31:0, address bits 63:32, then the lane-shifted write data
/// (mode 0) or the dword count (modes 1 and 2).
pub fn decode_tlp(value: u16, index: u16, data: &[u8]) -> Result<TlpRequest, Malformed> {
    if data.len() != 12 {
        return Err(Malformed::DataStage {
            request: code::TLP,
            len: data.len(),
        });
    }
    let fmt = (value & 0xFF) as u8;
    let byte_enable = ((value >> 8) & 0xF) as u8;
    let address = u64::from(le32(&data[0..4])) | u64::from(le32(&data[4..8])) << 32;
    let word = le32(&data[8..12]);
    match index & 0b11 {
        0 => Ok(TlpRequest::Single {
            kind: TlpKind::of(fmt),
            byte_enable,
            address,
            data: word,
        }),
        1 if fmt == 0x60 => Ok(TlpRequest::StreamWrite {
            address,
            dwords: word,
        }),
        2 if fmt == 0x20 => Ok(TlpRequest::StreamRead {
            address,
            dwords: word,
        }),
        1 | 2 => Err(Malformed::StreamFmt(fmt)),
        _ => Err(Malformed::Mode(index)),
    }
}

/// Decode a vendor OUT request.
pub fn decode_out(
    request: u8,
    value: u16,
    index: u16,
    data: &[u8],
) -> Result<OutRequest, Malformed> {
    match request {
        code::XDATA_WRITE => {
            no_data(request, data)?;
            Ok(OutRequest::XdataWrite {
                address: value,
                value: (index & 0xFF) as u8,
            })
        }
        code::TLP => decode_tlp(value, index, data).map(OutRequest::Tlp),
        code::SRAM_DMA => {
            no_data(request, data)?;
            Ok(OutRequest::Sram(SramArm {
                to_host: value & 0x8000 != 0,
                sectors: value & 0x7FFF,
                first_slot: (index & 0xFF) as u8,
                slots: (index >> 8) as u8,
            }))
        }
        code::POWER => {
            no_data(request, data)?;
            match value {
                0 | 1 => Ok(OutRequest::Power { on: value == 1 }),
                other => Err(Malformed::PowerValue(other)),
            }
        }
        other => Err(Malformed::UnknownRequest(other)),
    }
}

/// Decode a vendor IN request asking for `len` bytes.
pub fn decode_in(request: u8, value: u16, len: usize) -> Result<InRequest, Malformed> {
    match request {
        code::XDATA_READ => {
            if len > XDATA_READ_LIMIT || value as usize + len > 0x1_0000 {
                return Err(Malformed::XdataRange {
                    address: value,
                    len,
                });
            }
            Ok(InRequest::XdataRead {
                address: value,
                len,
            })
        }
        code::TLP => Ok(InRequest::Completion),
        other => Err(Malformed::UnknownRequest(other)),
    }
}

/// Split a configuration TLP address: bus in bits 31:24, device 23:19, function 18:16, register
/// 11:2 (the byte offset inside the dword travels in the byte enables).
pub fn config_target(address: u64) -> ConfigTarget {
    ConfigTarget {
        bus: (address >> 24 & 0xFF) as u8,
        device: (address >> 19 & 0x1F) as u8,
        function: (address >> 16 & 0x7) as u8,
        register: (address & 0xFFC) as u16,
    }
}

/// The contiguous run of byte lanes a byte-enable mask selects: (first lane, lane count).
/// None for an empty mask or one with a hole (the host never sends either).
pub fn lanes(byte_enable: u8) -> Option<(u8, u8)> {
    let be = byte_enable & 0xF;
    if be == 0 {
        return None;
    }
    let first = be.trailing_zeros() as u8;
    let count = (be >> first).trailing_ones() as u8;
    (be >> first >> count == 0).then_some((first, count))
}

/// Completion status field values (byte 4, bits 7:5).
fn status_field(status: CplStatus) -> u8 {
    match status {
        CplStatus::Success => 0,
        CplStatus::UnsupportedRequest => 1,
        CplStatus::ConfigRetry => 2,
        CplStatus::CompleterAbort => 4,
        CplStatus::Reserved(bits) => bits & 7,
    }
}

/// The 8 bytes answered to 0xF0 IN: data dword (little endian), completion header (status in
/// byte 4 bits 7:5; byte count not modelled), firmware status byte, engine status (0 = done).
pub fn completion(data: u32, status: CplStatus, engine_status: u8) -> [u8; COMPLETION_BYTES] {
    let d = data.to_le_bytes();
    [
        d[0],
        d[1],
        d[2],
        d[3],
        status_field(status) << 5,
        0,
        0,
        engine_status,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lanes_of_masks() {
        assert_eq!(lanes(0x0F), Some((0, 4)));
        assert_eq!(lanes(0x08), Some((3, 1)));
        assert_eq!(lanes(0x06), Some((1, 2)));
        assert_eq!(lanes(0x0C), Some((2, 2)));
        assert_eq!(lanes(0x00), None);
        assert_eq!(lanes(0x05), None, "a hole is not one access");
    }

    #[test]
    fn posted_kinds() {
        // MWr 3DW/4DW and every message type are posted; reads and config writes are not.
        for f in [0x40u8, 0x60, 0x30, 0x34, 0x70, 0x72] {
            assert!(TlpKind::of(f).posted(), "{f:#x}");
        }
        for f in [0x04u8, 0x05, 0x44, 0x45, 0x20, 0x00] {
            assert!(!TlpKind::of(f).posted(), "{f:#x}");
        }
    }

    #[test]
    fn malformed_requests() {
        assert_eq!(
            decode_tlp(0x0F05, 0, &[0; 8]),
            Err(Malformed::DataStage {
                request: 0xF0,
                len: 8
            })
        );
        assert_eq!(decode_tlp(0x0F05, 3, &[0; 12]), Err(Malformed::Mode(3)));
        assert_eq!(
            decode_tlp(0x0F20, 1, &[0; 12]),
            Err(Malformed::StreamFmt(0x20))
        );
        assert_eq!(
            decode_out(0xF2, 1, 0, &[1]),
            Err(Malformed::DataStage {
                request: 0xF2,
                len: 1
            })
        );
        assert_eq!(
            decode_out(0x99, 0, 0, &[]),
            Err(Malformed::UnknownRequest(0x99))
        );
        assert!(decode_in(0xE4, 0xFFFF, 2).is_err());
        assert!(decode_in(0xE4, 0, 256).is_err());
    }
}
