//! Navi31 BAR5 register offsets and bit fields used by the flash and PSP tools
//! (docs/hw/navi31-spi-flash.md §2). Byte offsets into BAR5; all registers are 32-bit little-endian.

/// SPI controller control: prescaler (27:24), prescaler select (28), aperture swap bit (29).
pub const ROM_CNTL: u64 = 0x5A380;
/// Page-mirror control; bits 27:25 are forced to 0b011 during ROM_SW transactions.
pub const PAGE_MIRROR_CNTL: u64 = 0x5A384;
/// ROM aperture read address (dump path).
pub const ROM_INDEX: u64 = 0x5A390;
/// ROM aperture data port, auto-advancing by 4 per read.
pub const ROM_DATA: u64 = 0x5A394;
/// ROM_SW transaction control / start.
pub const ROM_SW_CNTL: u64 = 0x5A3A0;
/// ROM_SW status: bit 0 = done; write 0 to clear.
pub const ROM_SW_STATUS: u64 = 0x5A3A4;
/// ROM_SW command: `(address24 << 8) | opcode`.
pub const ROM_SW_COMMAND: u64 = 0x5A3A8;
/// First of the 64 ROM_SW data dwords (256-byte TX/RX window).
pub const ROM_SW_DATA: u64 = 0x5A3B0;
/// Number of dwords in the ROM_SW data window.
pub const ROM_SW_DATA_DWORDS: usize = 64;
/// GPIO pad mask; SPI pad bits cleared during transactions.
pub const GPIO_PAD_MASK: u64 = 0x5A504;
/// GPIO pad A; SPI pad bits cleared during transactions.
pub const GPIO_PAD_A: u64 = 0x5A508;
/// GPIO pad enable; SPI pad bits cleared during transactions.
pub const GPIO_PAD_EN: u64 = 0x5A510;

/// PSP doorbell (MP0 C2PMSG_73, inferred): write 1 to submit.
pub const PSP_DOORBELL: u64 = 0x58224;
/// PSP command (MP0 C2PMSG_115, inferred): `cmd << 16`; bit 31 ready; low 16 bits error.
pub const PSP_COMMAND: u64 = 0x582CC;
/// PSP command data (MP0 C2PMSG_116, inferred): argument in / response out.
pub const PSP_COMMAND_DATA: u64 = 0x582D0;

/// GPIO pad bits 10:7 that carry the SPI pads.
pub const GPIO_SPI_PAD_BITS: u32 = 0x780;
/// PAGE_MIRROR_CNTL field 27:25 mask.
pub const MIRROR_FIELD_MASK: u32 = 0x0E00_0000;
/// PAGE_MIRROR_CNTL field value forced during transactions (0b011 in bits 27:25).
pub const MIRROR_FIELD_FORCED: u32 = 0x0600_0000;
/// ROM_CNTL low nibble forced to this value during transactions.
pub const ROM_CNTL_FORCED_NIBBLE: u32 = 8;
/// ROM_CNTL prescaler field 27:24.
pub const ROM_CNTL_PRESCALE_SHIFT: u32 = 24;
/// ROM_CNTL bit 28: use the programmed prescaler.
pub const ROM_CNTL_PRESCALE_SELECT: u32 = 1 << 28;
/// ROM_CNTL bit 29: set (byte-swapped) during the aperture dump.
pub const ROM_CNTL_APERTURE_BIT: u32 = 1 << 29;

/// ROM_SW_CNTL bits 8:0: data byte count.
pub const SW_CNTL_COUNT_MASK: u32 = 0x1FF;
/// ROM_SW_CNTL bits 17:16: number of address bytes.
pub const SW_CNTL_ADDR_SHIFT: u32 = 16;
/// ROM_SW_CNTL bit 19: RETURN_DATA_EN (RX).
pub const SW_CNTL_RETURN_DATA_EN: u32 = 1 << 19;
/// ROM_SW_STATUS bit 0: transaction done.
pub const SW_STATUS_DONE: u32 = 1;
/// ROM_SW_STATUS value when a healthy autonomous boot has gated the engine.
pub const SW_STATUS_GATED: u32 = 0x0400_0800;
/// What a read returns when the device is gone (PCIe master abort / surprise removal).
pub const ALL_ONES: u32 = 0xFFFF_FFFF;

/// Maximum data bytes of one ROM_SW transaction (TX or RX).
pub const SW_MAX_DATA: usize = 256;

/// ROM_CNTL value at engine open: prescaler programmed and selected, bit 0 set (docs/hw/navi31-spi-flash.md §3).
pub const fn rom_cntl_engine_open(original: u32, prescale: u8) -> u32 {
    (original & 0xE0FF_FFFF)
        | ROM_CNTL_PRESCALE_SELECT
        | (((prescale & 0xF) as u32) << ROM_CNTL_PRESCALE_SHIFT)
        | 1
}

/// ROM_CNTL value during a transaction: low nibble forced to 8.
pub const fn rom_cntl_transaction(open_value: u32) -> u32 {
    (open_value & !0xF) | ROM_CNTL_FORCED_NIBBLE
}

/// PAGE_MIRROR_CNTL value during a transaction.
pub const fn mirror_transaction(saved: u32) -> u32 {
    (saved & 0xF1FF_FFFF) | MIRROR_FIELD_FORCED
}

/// ROM_SW_COMMAND word.
pub const fn sw_command(opcode: u8, address: u32) -> u32 {
    ((address & 0x00FF_FFFF) << 8) | opcode as u32
}

/// ROM_SW_CNTL start word: `address_len` address bytes (0..=3), `count` data bytes (0..=256).
pub const fn sw_control(address_len: u8, rx: bool, count: u16) -> u32 {
    let addr = if address_len == 0 {
        0
    } else {
        (address_len as u32) << SW_CNTL_ADDR_SHIFT
    };
    let rx_bit = if rx { SW_CNTL_RETURN_DATA_EN } else { 0 };
    addr | rx_bit | (count as u32 & SW_CNTL_COUNT_MASK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_words_match_spec_sequence() {
        // docs/hw/navi31-spi-flash.md §6 sequence: RDSR prime 0x80002, RDSR real 0x80001, PP 256 bytes 0x30100, WREN 0.
        assert_eq!(sw_control(0, true, 2), 0x80002);
        assert_eq!(sw_control(0, true, 1), 0x80001);
        assert_eq!(sw_control(3, false, 256), 0x30100);
        assert_eq!(sw_control(0, false, 0), 0);
    }

    #[test]
    fn forced_values_match_spec() {
        assert_eq!(mirror_transaction(0xFFFF_FFFF), 0xF7FF_FFFF);
        assert_eq!(mirror_transaction(0), 0x0600_0000);
        assert_eq!(rom_cntl_transaction(0x1800_0001), 0x1800_0008);
        assert_eq!(rom_cntl_engine_open(0xFFFF_FFF0, 8), 0xF8FF_FFF1);
        assert_eq!(sw_command(0x02, 0x12_3456), 0x1234_5602);
        assert_eq!(sw_command(0x03, 0xFF12_3456), 0x1234_5603);
    }
}
