//! Listings of GPU kernel code for `modelrt disasm`: raw a6xx IR3 words (Mesa's text, through
//! `modelrt_ir3::disasm_word`) and gfx1100 RDNA3 dwords (LLVM's text, through `modelrt_rdna3::disasm`),
//! and every kernel of an adreno-a630 or amd-gfx1100 bundle, one [`Line`] per instruction. The text is
//! exactly what the decoders' tests compare with Mesa's and llvm-objdump-19's; a word the decoder does
//! not know is a line whose text is `unknown <hex>`.
use modelrt_core::bundle::Bundle;
use modelrt_hal::target::{KernelMeta, Target};
use modelrt_rdna3::decode::{decode, DecodeError};
use modelrt_rdna3::ops::Op;
use object::elf::FileHeader64;
use object::read::elf::{FileHeader, SectionHeader};
use object::LittleEndian;

/// The instruction sets `modelrt disasm` decodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isa {
    /// Adreno 6xx IR3 (adreno-a630 bundles): 64-bit instruction words.
    A6xx,
    /// AMD RDNA3 gfx1100 (amd-gfx1100 bundles): instructions of one to three 32-bit dwords.
    Gfx1100,
}

impl Isa {
    /// The name `--isa` takes.
    pub fn name(self) -> &'static str {
        match self {
            Isa::A6xx => "a6xx",
            Isa::Gfx1100 => "gfx1100",
        }
    }
}

/// One decoded instruction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line {
    /// Byte offset from the start of the code.
    pub offset: u32,
    /// Length in bytes.
    pub bytes: u32,
    /// The raw words: a6xx as `HI_LO`, gfx1100 as dwords separated by spaces (all lowercase hex).
    pub raw: String,
    /// Mesa's / LLVM's text, or `unknown <raw>`.
    pub text: String,
    /// Whether the decoder knows the encoding (`false`: `text` is `unknown …`).
    pub known: bool,
    /// Why the gfx1100 decoder refused the words (empty for a6xx and for known encodings).
    pub why: &'static str,
}

/// `hi_lo` of a 64-bit a6xx word.
pub fn a6xx_hex(w: u64) -> String {
    format!("{:08x}_{:08x}", w >> 32, w as u32)
}

/// Decode a6xx words, one line per word.
pub fn a6xx_lines(words: &[u64]) -> Vec<Line> {
    words
        .iter()
        .enumerate()
        .map(|(i, &w)| {
            let raw = a6xx_hex(w);
            let text = modelrt_ir3::disasm_word(w);
            // `disasm_word` names every encoding it knows and prints the rest as Mesa's
            // disassembler does, `raw 0x` and the word in 16 upper-case digits.
            let known = !text.starts_with("raw 0x");
            Line {
                offset: (i * 8) as u32,
                bytes: 8,
                text,
                raw,
                known,
                why: "",
            }
        })
        .collect()
}

/// Decode gfx1100 dwords in order. With `stop_at_code_end`, decoding ends at the first
/// `s_code_end` followed by nothing but more `s_code_end` (the padding of a kernel's `.text`).
pub fn gfx1100_lines(words: &[u32], stop_at_code_end: bool) -> Vec<Line> {
    let mut lines = Vec::new();
    let mut pc = 0usize;
    while pc < words.len() {
        let end = words.len().min(pc + 3);
        let (len, text, known, why, done) = match decode(&words[pc..end]) {
            Ok(i) if usize::from(i.len) <= end - pc => (
                usize::from(i.len),
                modelrt_rdna3::disasm::text(&i),
                true,
                "",
                i.op == Op::SCodeEnd,
            ),
            Ok(_) => (
                end - pc,
                String::new(),
                false,
                "truncated instruction",
                false,
            ),
            Err(DecodeError { what, dwords }) => {
                (dwords.clamp(1, end - pc), String::new(), false, what, false)
            }
        };
        let raw: Vec<String> = words[pc..pc + len]
            .iter()
            .map(|w| format!("{w:08x}"))
            .collect();
        let raw = raw.join(" ");
        lines.push(Line {
            offset: (pc * 4) as u32,
            bytes: (len * 4) as u32,
            text: if known {
                text
            } else {
                format!("unknown {raw}")
            },
            raw,
            known,
            why,
        });
        pc += len;
        // Stop at the padding: nothing but further copies of the `s_code_end` dword follows.
        if done && stop_at_code_end && words[pc..].iter().all(|&w| w == words[pc - len]) {
            break;
        }
    }
    lines
}

/// One kernel's listing.
#[derive(Clone, Debug)]
pub struct KernelListing {
    /// Index in the bundle's kernel table.
    pub index: usize,
    pub name: String,
    pub entry: String,
    /// Bytes of code listed (a6xx: the whole ISA; gfx1100: `.text`).
    pub code_bytes: usize,
    pub lines: Vec<Line>,
}

/// The ISA of a bundle's target, or an error naming the targets `modelrt disasm` supports.
pub fn bundle_isa(target: &Target<'_>) -> Result<Isa, String> {
    match target {
        Target::Adreno { chip: 630, .. } => Ok(Isa::A6xx),
        Target::Amd { gfx: 0x1100 } => Ok(Isa::Gfx1100),
        other => Err(format!(
            "disasm supports adreno-a630 (IR3) and amd-gfx1100 (RDNA3) bundles; this bundle is for {}",
            target_name(other)
        )),
    }
}

fn target_name(t: &Target<'_>) -> String {
    match t {
        Target::Cpu { arch, .. } => format!("cpu-{}", arch.name()),
        Target::Adreno { chip, .. } => format!("adreno-a{chip}"),
        Target::Amd { gfx } => format!("amd-gfx{gfx:x}"),
        Target::Hexagon { version } => format!("hexagon-v{version}"),
    }
}

/// List the kernels of `bundle` (all of them, or those named `only`); errors are one line.
pub fn bundle_listing(
    bundle: &Bundle<'_>,
    only: Option<&str>,
) -> Result<(Isa, Vec<KernelListing>), String> {
    let isa = bundle_isa(&bundle.body().target)?;
    let mut names = Vec::new();
    let mut out = Vec::new();
    for (index, k) in bundle.body().kernels.iter().enumerate() {
        let k = k.map_err(|e| format!("kernel {index}: {e}"))?;
        names.push(k.name);
        if only.is_some_and(|n| n != k.name) {
            continue;
        }
        let what = |m: String| format!("kernel {index} ({}): {m}", k.name);
        let (code, lines) = match (isa, &k.meta) {
            (Isa::A6xx, KernelMeta::Ir3(_)) => {
                if !k.binary.len().is_multiple_of(8) {
                    return Err(what(format!(
                        "ISA of {} bytes is not whole 64-bit instructions",
                        k.binary.len()
                    )));
                }
                let words: Vec<u64> = k
                    .binary
                    .chunks_exact(8)
                    .map(|c| u64::from_le_bytes(c.try_into().expect("8-byte chunk")))
                    .collect();
                (k.binary.len(), a6xx_lines(&words))
            }
            (Isa::A6xx, KernelMeta::QcomCl) => {
                // Qualcomm's container: list the instructions it holds (docs/hw/adreno-kgsl-pm4.md §9.1).
                let c = modelrt_qcom::a6xx::cl_container::ClContainer::parse(k.binary)
                    .map_err(|e| what(e.to_string()))?;
                let words: Vec<u64> = c
                    .image()
                    .chunks_exact(8)
                    .map(|c| u64::from_le_bytes(c.try_into().expect("8-byte chunk")))
                    .collect();
                (c.image().len(), a6xx_lines(&words))
            }
            (Isa::Gfx1100, KernelMeta::Amd(_)) => {
                let text = elf_text(k.binary).map_err(what)?;
                let words: Vec<u32> = text
                    .chunks_exact(4)
                    .map(|c| u32::from_le_bytes(c.try_into().expect("4-byte chunk")))
                    .collect();
                (text.len(), gfx1100_lines(&words, true))
            }
            _ => return Err(what("metadata does not match the bundle target".into())),
        };
        out.push(KernelListing {
            index,
            name: k.name.to_string(),
            entry: k.entry.to_string(),
            code_bytes: code,
            lines,
        });
    }
    if let Some(n) = only {
        if out.is_empty() {
            return Err(format!(
                "no kernel named `{n}`; this bundle's kernels: {}",
                names.join(", ")
            ));
        }
    }
    Ok((isa, out))
}

/// The `.text` bytes of an AMD kernel object (an ELF64 relocatable object, docs/hw/tinygrad-export.md §8).
fn elf_text(data: &[u8]) -> Result<&[u8], String> {
    let e = LittleEndian;
    let h = FileHeader64::<LittleEndian>::parse(data)
        .map_err(|_| "not an ELF64 little-endian object".to_string())?;
    let sections = h
        .sections(e, data)
        .map_err(|_| "bad section table".to_string())?;
    let text = sections
        .iter()
        .find(|s| sections.section_name(e, s).ok() == Some(b".text"))
        .ok_or("no .text section")?;
    let bytes = text
        .data(e, data)
        .map_err(|_| ".text lies outside the object".to_string())?;
    if !bytes.len().is_multiple_of(4) {
        return Err(format!(
            ".text of {} bytes is not whole dwords",
            bytes.len()
        ));
    }
    Ok(bytes)
}

/// Parse one `--hex` word for `isa`: a6xx `HI_LO` (two hex numbers of up to 8 digits) or one hex
/// number of up to 16 digits; gfx1100 one hex number of up to 8 digits. `0x` prefixes are accepted.
pub fn parse_word(isa: Isa, s: &str) -> Result<u64, String> {
    let hex = |t: &str, digits: usize| -> Option<u64> {
        let t = t
            .strip_prefix("0x")
            .or_else(|| t.strip_prefix("0X"))
            .unwrap_or(t);
        if t.is_empty() || t.len() > digits || !t.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        u64::from_str_radix(t, 16).ok()
    };
    let parsed = match isa {
        Isa::A6xx => match s.split_once('_') {
            Some((hi, lo)) => hex(hi, 8).zip(hex(lo, 8)).map(|(h, l)| h << 32 | l),
            None => hex(s, 16),
        },
        Isa::Gfx1100 => hex(s, 8),
    };
    parsed.ok_or_else(|| match isa {
        Isa::A6xx => format!(
            "`{s}` is not an a6xx instruction word: write HI_LO (e.g. 20244000_00000000) or 16 hex digits"
        ),
        Isa::Gfx1100 => {
            format!("`{s}` is not a gfx1100 dword: write up to 8 hex digits (e.g. bf810000)")
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_parse_in_every_accepted_spelling_and_bad_ones_are_refused() {
        let w = 0x2024_4000_0000_0001u64;
        for s in [
            "20244000_00000001",
            "0x20244000_0x00000001",
            "2024400000000001",
        ] {
            assert_eq!(parse_word(Isa::A6xx, s), Ok(w), "{s}");
        }
        assert_eq!(parse_word(Isa::Gfx1100, "bf810000"), Ok(0xbf81_0000));
        for s in ["", "_", "x", "123456789_0", "12345678901234567", "zz_00"] {
            assert!(parse_word(Isa::A6xx, s).is_err(), "{s}");
        }
        for s in ["", "123456789", "bf81_0000", "g"] {
            assert!(parse_word(Isa::Gfx1100, s).is_err(), "{s}");
        }
    }
}
