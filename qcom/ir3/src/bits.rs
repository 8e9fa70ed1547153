//! Bit fields of a 64-bit instruction word, the one vocabulary the decoder (`decode`) and the text of the
//! non-executed encodings (`disasm::text`) read words with. Bit numbers are those of Mesa's ISA XML and
//! docs/hw/adreno-kgsl-pm4.md §16 (bit 0 = least significant bit of the word).

/// Bits `lo..=hi` of `w`, shifted down to bit 0 (`hi - lo` below 63).
pub fn bits(w: u64, lo: u32, hi: u32) -> u64 {
    (w >> lo) & ((1u64 << (hi - lo + 1)) - 1)
}

/// Whether bit `b` of `w` is set.
pub fn bit(w: u64, b: u32) -> bool {
    (w >> b) & 1 == 1
}

/// The low `width` bits of `v` as a two's-complement number.
pub fn sext(v: u64, width: u32) -> i64 {
    let s = 64 - width;
    ((v << s) as i64) >> s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_sign_and_flags() {
        let w = 0xA380_1102_0000_0001u64;
        assert_eq!(bits(w, 61, 63), 5);
        assert_eq!(bits(w, 0, 0), 1);
        assert!(bit(w, 0) && !bit(w, 1));
        assert_eq!(sext(0x1FFF, 13), -1);
        assert_eq!(sext(0x0FFF, 13), 0x0FFF);
        assert_eq!(sext(0x200, 10) as i32, -512);
    }
}
