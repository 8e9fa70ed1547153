//! Source operands: the 8/9-bit operand field of the RDNA3 encodings (docs/hw/rdna3-isa.md §3), resolved once at decode time.
//!
//! Scalar registers, VCC, TTMPs, NULL, M0 and EXEC all live in one 128-entry scalar file indexed
//! by the field value itself (s0–s105 = 0–105, VCC_LO/HI = 106/107, TTMP0–15 = 108–123,
//! NULL = 124, M0 = 125, EXEC_LO/HI = 126/127), so reading one is a single array index.
//! Inline constants and literals become a [`Src::Const`] holding the value already in the
//! operand's type (an inline `1.0` is `0x3f800000` for an f32 operand, `0x3c00` for f16).
use super::ops::Ty;

/// Scalar-file index of VCC_LO.
pub const VCC: u8 = 106;
/// Scalar-file index of NULL (reads 0, writes are dropped).
pub const NULL: u8 = 124;
/// Scalar-file index of M0.
pub const M0: u8 = 125;
/// Scalar-file index of EXEC_LO.
pub const EXEC: u8 = 126;
/// Operand field value meaning "a 32-bit literal dword follows the instruction".
pub const LITERAL: u16 = 255;

/// One resolved source operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Src {
    /// Scalar-file entry (see the module doc for the index map).
    S(u8),
    /// Vector register.
    V(u8),
    /// Inline constant (`code` 128–248) or literal (`code` 255), `val` already typed.
    Const { val: u64, code: u16 },
    /// SCC as a 0/1 value (field 253).
    Scc,
    /// VCCZ (field 251).
    VccZ,
    /// EXECZ (field 252).
    ExecZ,
}

/// f32/f16/f64 bit patterns of the inline float constants 240–248 (docs/hw/rdna3-isa.md §3): ±0.5, ±1, ±2,
/// ±4 and 1/(2π).
const INLINE_F32: [u32; 9] = [
    0x3f00_0000,
    0xbf00_0000,
    0x3f80_0000,
    0xbf80_0000,
    0x4000_0000,
    0xc000_0000,
    0x4080_0000,
    0xc080_0000,
    0x3e22_f983,
];
const INLINE_F16: [u16; 9] = [
    0x3800, 0xb800, 0x3c00, 0xbc00, 0x4000, 0xc000, 0x4400, 0xc400, 0x3118,
];
const INLINE_F64: [u64; 9] = [
    0x3fe0_0000_0000_0000,
    0xbfe0_0000_0000_0000,
    0x3ff0_0000_0000_0000,
    0xbff0_0000_0000_0000,
    0x4000_0000_0000_0000,
    0xc000_0000_0000_0000,
    0x4010_0000_0000_0000,
    0xc010_0000_0000_0000,
    0x3fc4_5f30_6dc9_c882,
];

/// Why an operand field cannot be used.
pub type BadOperand = &'static str;

/// Decode operand field `code` (0–511) for an operand of type `ty`; `literal` is the dword after
/// the instruction when one is present.
pub fn source(code: u16, ty: Ty, literal: Option<u32>) -> Result<Src, BadOperand> {
    Ok(match code {
        0..=127 => Src::S(code as u8),
        128..=208 => {
            let v: i64 = if code <= 192 {
                i64::from(code) - 128
            } else {
                192 - i64::from(code)
            };
            let val = match ty {
                Ty::B64 => v as u64,
                Ty::F16 => u64::from(v as u16),
                _ => u64::from(v as u32),
            };
            Src::Const { val, code }
        }
        240..=248 => {
            let i = usize::from(code - 240);
            let val = match ty {
                Ty::F16 => u64::from(INLINE_F16[i]),
                Ty::B64 => INLINE_F64[i],
                _ => u64::from(INLINE_F32[i]),
            };
            Src::Const { val, code }
        }
        251 => Src::VccZ,
        252 => Src::ExecZ,
        253 => Src::Scc,
        LITERAL => Src::Const {
            val: u64::from(literal.ok_or("literal operand without its dword")?),
            code,
        },
        256..=511 => Src::V((code - 256) as u8),
        209..=239 | 249 | 250 | 254 => return Err("operand field (DPP/SDWA/LDS_DIRECT/reserved)"),
        _ => return Err("operand field out of range"),
    })
}

/// LLVM's name for scalar-file entry `i` as a `dwords`-wide operand (`s4`, `s[4:5]`, `vcc_lo`,
/// `vcc`, `exec_lo`, `null`, …).
pub fn sreg_name(i: u8, dwords: u8) -> String {
    let wide = dwords > 1;
    match i {
        0..=105 if wide => format!("s[{}:{}]", i, u16::from(i) + u16::from(dwords) - 1),
        0..=105 => format!("s{i}"),
        VCC if wide => "vcc".into(),
        VCC => "vcc_lo".into(),
        107 => "vcc_hi".into(),
        108..=123 if wide => format!("ttmp[{}:{}]", i - 108, i - 108 + dwords - 1),
        108..=123 => format!("ttmp{}", i - 108),
        NULL => "null".into(),
        M0 => "m0".into(),
        EXEC if wide => "exec".into(),
        EXEC => "exec_lo".into(),
        _ => "exec_hi".into(),
    }
}

/// LLVM's name for VGPR `i` as a `dwords`-wide operand (`v3`, `v[4:7]`).
pub fn vreg_name(i: u8, dwords: u8) -> String {
    if dwords > 1 {
        format!("v[{}:{}]", i, u16::from(i) + u16::from(dwords) - 1)
    } else {
        format!("v{i}")
    }
}

impl Src {
    /// LLVM's text for this operand as a `dwords`-wide operand.
    pub fn text(&self, dwords: u8) -> String {
        match *self {
            Src::S(i) => sreg_name(i, dwords),
            Src::V(i) => vreg_name(i, dwords),
            Src::Const { code, .. } if code <= 192 => format!("{}", i32::from(code) - 128),
            Src::Const { code, .. } if code <= 208 => format!("{}", 192 - i32::from(code)),
            Src::Const { code, .. } if code < 255 => {
                const F: [&str; 9] = [
                    "0.5",
                    "-0.5",
                    "1.0",
                    "-1.0",
                    "2.0",
                    "-2.0",
                    "4.0",
                    "-4.0",
                    "0.15915494",
                ];
                if code == 248 && dwords == 2 {
                    "0.15915494309189532".into()
                } else {
                    F[usize::from(code - 240)].into()
                }
            }
            Src::Const { val, .. } => format!("{val:#x}"),
            Src::Scc => "scc".into(),
            Src::VccZ => "vccz".into(),
            Src::ExecZ => "execz".into(),
        }
    }
}
