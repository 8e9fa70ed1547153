//! Relocation arithmetic for x86_64 and aarch64 RELA entries, as pure functions over a byte image.
//!
//! Every relocation is computed with absolute addresses: `S` (symbol address), `A` (addend) and `P`
//! (address of the patched field), following the x86-64 psABI and the AArch64 ELF ABI (AAELF64)
//! formulas. `Page(x)` is `x & !0xfff`.
use modelrt_hal::target::CpuArch;
use object::elf;

use super::error::CpuError;

/// One relocation to apply: the patched field is at `image[offset..]`, whose absolute address is `p`.
#[derive(Clone, Copy, Debug)]
pub struct Reloc {
    pub rtype: u32,
    /// Offset of the patched field inside the image.
    pub offset: usize,
    /// Absolute address of the symbol (`S`).
    pub s: u64,
    /// Addend (`A`).
    pub a: i64,
    /// Absolute address of the patched field (`P`).
    pub p: u64,
}

/// Width in bytes of the field a relocation patches, or `None` for an unsupported type.
pub fn field_width(arch: CpuArch, rtype: u32) -> Option<usize> {
    match arch {
        CpuArch::X86_64 => match rtype {
            elf::R_X86_64_NONE => Some(0),
            elf::R_X86_64_64 | elf::R_X86_64_PC64 => Some(8),
            elf::R_X86_64_PC32 | elf::R_X86_64_PLT32 | elf::R_X86_64_32 | elf::R_X86_64_32S => {
                Some(4)
            }
            _ => None,
        },
        CpuArch::Aarch64 => match rtype {
            elf::R_AARCH64_NONE => Some(0),
            elf::R_AARCH64_ABS64 | elf::R_AARCH64_PREL64 => Some(8),
            elf::R_AARCH64_PREL32
            | elf::R_AARCH64_ADR_PREL_PG_HI21
            | elf::R_AARCH64_ADD_ABS_LO12_NC
            | elf::R_AARCH64_LDST8_ABS_LO12_NC
            | elf::R_AARCH64_LDST16_ABS_LO12_NC
            | elf::R_AARCH64_LDST32_ABS_LO12_NC
            | elf::R_AARCH64_LDST64_ABS_LO12_NC
            | elf::R_AARCH64_LDST128_ABS_LO12_NC
            | elf::R_AARCH64_CALL26
            | elf::R_AARCH64_JUMP26 => Some(4),
            _ => None,
        },
    }
}

/// Apply `r` to `image`. The caller guarantees nothing; every bound is checked here.
pub fn apply(arch: CpuArch, image: &mut [u8], r: &Reloc) -> Result<(), CpuError> {
    let unknown = CpuError::UnknownRelocation {
        arch,
        rtype: r.rtype,
        offset: r.offset as u64,
    };
    let width = field_width(arch, r.rtype).ok_or(unknown.clone())?;
    let field = r
        .offset
        .checked_add(width)
        .and_then(|end| image.get_mut(r.offset..end))
        .ok_or(CpuError::RelocationOutsideSection {
            offset: r.offset as u64,
        })?;
    let sa = r.s.wrapping_add(r.a as u64);
    let sap = sa.wrapping_sub(r.p) as i64;
    let out_of_range = |value: i64| CpuError::RelocationOutOfRange {
        rtype: r.rtype,
        offset: r.offset as u64,
        value,
    };
    let misaligned = |value: i64| CpuError::RelocationMisaligned {
        rtype: r.rtype,
        offset: r.offset as u64,
        value,
    };
    match arch {
        CpuArch::X86_64 => match r.rtype {
            elf::R_X86_64_NONE => {}
            elf::R_X86_64_64 => field.copy_from_slice(&sa.to_le_bytes()),
            elf::R_X86_64_PC64 => field.copy_from_slice(&sap.to_le_bytes()),
            elf::R_X86_64_PC32 | elf::R_X86_64_PLT32 => {
                let v = i32::try_from(sap).map_err(|_| out_of_range(sap))?;
                field.copy_from_slice(&v.to_le_bytes());
            }
            elf::R_X86_64_32 => {
                let v = u32::try_from(sa).map_err(|_| out_of_range(sa as i64))?;
                field.copy_from_slice(&v.to_le_bytes());
            }
            elf::R_X86_64_32S => {
                let v = i32::try_from(sa as i64).map_err(|_| out_of_range(sa as i64))?;
                field.copy_from_slice(&v.to_le_bytes());
            }
            _ => return Err(unknown),
        },
        CpuArch::Aarch64 => match r.rtype {
            elf::R_AARCH64_NONE => {}
            elf::R_AARCH64_ABS64 => field.copy_from_slice(&sa.to_le_bytes()),
            elf::R_AARCH64_PREL64 => field.copy_from_slice(&sap.to_le_bytes()),
            elf::R_AARCH64_PREL32 => {
                // AAELF64: overflow check -2^31 <= X < 2^32.
                if !(-(1i64 << 31)..(1i64 << 32)).contains(&sap) {
                    return Err(out_of_range(sap));
                }
                field.copy_from_slice(&(sap as u32).to_le_bytes());
            }
            rtype => {
                let insn = u32::from_le_bytes([field[0], field[1], field[2], field[3]]);
                let patched = patch_aarch64_insn(rtype, insn, sa, r.p).map_err(|e| match e {
                    InsnError::Range(v) => out_of_range(v),
                    InsnError::Align(v) => misaligned(v),
                    InsnError::Unknown => unknown,
                })?;
                field.copy_from_slice(&patched.to_le_bytes());
            }
        },
    }
    Ok(())
}

/// Why an aarch64 instruction field could not be encoded.
#[derive(Debug, PartialEq, Eq)]
pub enum InsnError {
    Range(i64),
    Align(i64),
    /// Not an instruction relocation this module encodes.
    Unknown,
}

fn page(x: u64) -> u64 {
    x & !0xfff
}

/// Patch the immediate of the aarch64 instruction `insn` for relocation `rtype` with
/// `sa = S + A` at address `p`.
pub fn patch_aarch64_insn(rtype: u32, insn: u32, sa: u64, p: u64) -> Result<u32, InsnError> {
    let lo12 = (sa & 0xfff) as u32;
    let ldst = |shift: u32| -> Result<u32, InsnError> {
        if lo12 & ((1 << shift) - 1) != 0 {
            return Err(InsnError::Align(sa as i64));
        }
        Ok((insn & !(0xfff << 10)) | ((lo12 >> shift) << 10))
    };
    match rtype {
        elf::R_AARCH64_ADR_PREL_PG_HI21 => {
            // X = Page(S+A) - Page(P); check -2^32 <= X < 2^32; imm = X[32:12].
            let x = page(sa).wrapping_sub(page(p)) as i64;
            if !(-(1i64 << 32)..(1i64 << 32)).contains(&x) {
                return Err(InsnError::Range(x));
            }
            let imm = ((x >> 12) as u32) & 0x1f_ffff;
            let immlo = imm & 3;
            let immhi = imm >> 2;
            Ok((insn & !((3 << 29) | (0x7_ffff << 5))) | (immlo << 29) | (immhi << 5))
        }
        elf::R_AARCH64_ADD_ABS_LO12_NC => ldst(0),
        elf::R_AARCH64_LDST8_ABS_LO12_NC => ldst(0),
        elf::R_AARCH64_LDST16_ABS_LO12_NC => ldst(1),
        elf::R_AARCH64_LDST32_ABS_LO12_NC => ldst(2),
        elf::R_AARCH64_LDST64_ABS_LO12_NC => ldst(3),
        elf::R_AARCH64_LDST128_ABS_LO12_NC => ldst(4),
        elf::R_AARCH64_CALL26 | elf::R_AARCH64_JUMP26 => {
            // X = S + A - P; check -2^27 <= X < 2^27; imm26 = X[27:2].
            let x = sa.wrapping_sub(p) as i64;
            if x & 3 != 0 {
                return Err(InsnError::Align(x));
            }
            if !(-(1i64 << 27)..(1i64 << 27)).contains(&x) {
                return Err(InsnError::Range(x));
            }
            Ok((insn & !0x3ff_ffff) | (((x >> 2) as u32) & 0x3ff_ffff))
        }
        _ => Err(InsnError::Unknown),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reloc(rtype: u32, s: u64, a: i64, p: u64) -> Reloc {
        Reloc {
            rtype,
            offset: 0,
            s,
            a,
            p,
        }
    }

    #[test]
    fn x86_pc32_is_s_plus_a_minus_p() {
        let mut img = [0u8; 4];
        apply(
            CpuArch::X86_64,
            &mut img,
            &reloc(elf::R_X86_64_PC32, 0x1000, -4, 0x2000),
        )
        .unwrap();
        assert_eq!(i32::from_le_bytes(img), 0x1000 - 4 - 0x2000);
    }

    #[test]
    fn x86_pc32_overflow_is_typed() {
        let mut img = [0u8; 4];
        let err = apply(
            CpuArch::X86_64,
            &mut img,
            &reloc(elf::R_X86_64_PC32, 0x1_0000_0000, 0, 0),
        )
        .unwrap_err();
        assert!(matches!(
            err,
            CpuError::RelocationOutOfRange { rtype: 2, .. }
        ));
        assert_eq!(img, [0; 4], "field untouched on error");
    }

    #[test]
    fn x86_abs64_and_32s() {
        let mut img = [0u8; 8];
        apply(
            CpuArch::X86_64,
            &mut img,
            &reloc(elf::R_X86_64_64, 0x7f00_1234_5678, 8, 0),
        )
        .unwrap();
        assert_eq!(u64::from_le_bytes(img), 0x7f00_1234_5680);
        let mut img = [0u8; 4];
        apply(
            CpuArch::X86_64,
            &mut img,
            &reloc(elf::R_X86_64_32S, 0xffff_ffff_ffff_fff0, 0, 0),
        )
        .unwrap();
        assert_eq!(i32::from_le_bytes(img), -16);
        assert!(apply(
            CpuArch::X86_64,
            &mut img,
            &reloc(elf::R_X86_64_32, 0x1_0000_0000, 0, 0)
        )
        .is_err());
    }

    #[test]
    fn field_outside_image_and_unknown_type() {
        let mut img = [0u8; 6];
        let r = Reloc {
            rtype: elf::R_X86_64_PC32,
            offset: 3,
            s: 0,
            a: 0,
            p: 0,
        };
        assert_eq!(
            apply(CpuArch::X86_64, &mut img, &r),
            Err(CpuError::RelocationOutsideSection { offset: 3 })
        );
        let r = Reloc {
            rtype: elf::R_X86_64_GOTPCREL,
            offset: 0,
            s: 0,
            a: 0,
            p: 0,
        };
        assert!(matches!(
            apply(CpuArch::X86_64, &mut img, &r),
            Err(CpuError::UnknownRelocation { rtype: 9, .. })
        ));
        let r = Reloc {
            rtype: elf::R_AARCH64_ADR_GOT_PAGE,
            offset: 0,
            s: 0,
            a: 0,
            p: 0,
        };
        assert!(matches!(
            apply(CpuArch::Aarch64, &mut img, &r),
            Err(CpuError::UnknownRelocation { rtype: 311, .. })
        ));
    }

    // aarch64 encodings, checked against hand-assembled instructions (ARM ARM C6.2):
    // `adrp x0, #0x3000` at 0x10000 targeting 0x13000 → imm = 3 → immlo = 3, immhi = 0.
    #[test]
    fn adrp_fields() {
        let adrp_x0 = 0x9000_0000u32;
        let got = patch_aarch64_insn(
            elf::R_AARCH64_ADR_PREL_PG_HI21,
            adrp_x0,
            0x13_0abc,
            0x10_0ffc,
        )
        .unwrap();
        // Page(0x130abc) - Page(0x100ffc) = 0x30000 → imm = 0x30 → immlo = 0, immhi = 0xc.
        assert_eq!(got, 0x9000_0000 | (0xc << 5));
        let back = patch_aarch64_insn(
            elf::R_AARCH64_ADR_PREL_PG_HI21,
            adrp_x0,
            0x0f_f000,
            0x10_0000,
        )
        .unwrap();
        // -0x1000 → imm = -1 = 0x1fffff (21 bits) → immlo = 3, immhi = 0x7ffff.
        assert_eq!(back, 0x9000_0000 | (3 << 29) | (0x7ffff << 5));
        assert_eq!(
            patch_aarch64_insn(elf::R_AARCH64_ADR_PREL_PG_HI21, adrp_x0, 1 << 33, 0),
            Err(InsnError::Range(1 << 33))
        );
    }

    #[test]
    fn lo12_fields_scale_by_access_size() {
        // ldr q0, [x8] = 0x3dc00100; LDST128 scales by 16: lo12 0x230 → imm12 0x23.
        let ldr_q0 = 0x3dc0_0100u32;
        assert_eq!(
            patch_aarch64_insn(elf::R_AARCH64_LDST128_ABS_LO12_NC, ldr_q0, 0x5_1230, 0).unwrap(),
            ldr_q0 | (0x23 << 10)
        );
        assert_eq!(
            patch_aarch64_insn(elf::R_AARCH64_LDST128_ABS_LO12_NC, ldr_q0, 0x5_1238, 0),
            Err(InsnError::Align(0x5_1238))
        );
        // add x0, x0, #0 = 0x91000000; ADD takes the raw low 12 bits.
        assert_eq!(
            patch_aarch64_insn(elf::R_AARCH64_ADD_ABS_LO12_NC, 0x9100_0000, 0xfff_fabc, 0).unwrap(),
            0x9100_0000 | (0xabc << 10)
        );
        // ldr s0, [x8] = 0xbd400100; LDST32 scales by 4.
        assert_eq!(
            patch_aarch64_insn(elf::R_AARCH64_LDST32_ABS_LO12_NC, 0xbd40_0100, 0x7f8, 0).unwrap(),
            0xbd40_0100 | (0x1fe << 10)
        );
    }

    #[test]
    fn branch_fields() {
        // bl #-8 from 0x1008 to 0x1000: imm26 = -2 → 0x3fffffe.
        assert_eq!(
            patch_aarch64_insn(elf::R_AARCH64_CALL26, 0x9400_0000, 0x1000, 0x1008).unwrap(),
            0x97ff_fffe
        );
        assert_eq!(
            patch_aarch64_insn(elf::R_AARCH64_JUMP26, 0x1400_0000, 0x2000, 0x1000).unwrap(),
            0x1400_0400
        );
        assert_eq!(
            patch_aarch64_insn(elf::R_AARCH64_CALL26, 0x9400_0000, 1 << 27, 0),
            Err(InsnError::Range(1 << 27))
        );
        assert_eq!(
            patch_aarch64_insn(elf::R_AARCH64_CALL26, 0x9400_0000, 2, 0),
            Err(InsnError::Align(2))
        );
    }
}
