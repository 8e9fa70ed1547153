//! `modelrt disasm`: list the instructions of a bundle's GPU kernels (adreno-a630 IR3, amd-gfx1100
//! RDNA3), or decode raw instruction words given on the command line. The decoding is
//! `modelrt_targets::disasm`; this module parses the arguments and prints.
use modelrt_hal::target::TargetName;
use std::path::{Path, PathBuf};

use anyhow::bail;
use clap::{Args, ValueEnum};
use modelrt_targets::disasm::{bundle_listing, gfx1100_lines, parse_word, Isa, Line};

use crate::cli::model::{open_bundle_file, parse_bundle};
use crate::cli::units;

/// `--isa` values.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum IsaArg {
    /// Adreno 6xx IR3 (adreno-a630 bundles), printed as Mesa's disassembler prints it.
    #[value(alias = "ir3")]
    A6xx,
    /// AMD RDNA3 (amd-gfx1100 bundles), printed as `llvm-objdump-19 --mcpu=gfx1100` prints it.
    #[value(alias = "rdna3")]
    Gfx1100,
}

/// Arguments of `modelrt disasm`.
#[derive(Args, Debug)]
#[command(
    override_usage = "modelrt disasm BUNDLE [--kernel NAME]\n       modelrt disasm --isa a6xx|gfx1100 --hex WORD...",
    after_long_help = "Examples:
  modelrt disasm model-a630.mrt                   every kernel: offset, raw words, Mesa's text
  modelrt disasm model-gfx1100.mrt --kernel E_4   one kernel (names as `modelrt info --verbose` lists them)
  modelrt disasm --isa a6xx --hex 20244000_00000020 03000000_00000000
      mov.f32f32 r0.x, c8.x                       64-bit IR3 words as HI_LO (or 16 hex digits)
      end
  modelrt disasm --isa gfx1100 --hex 7e0002ff 12345678 bfb00000
      v_mov_b32_e32 v0, 0x12345678                RDNA3 dwords; a literal follows its instruction
      s_endpgm

The text is what the decoders' tests compare with Mesa 25.2.7's disassembler (IR3) and with
llvm-objdump-19 --mcpu=gfx1100 (RDNA3). A gfx1100 kernel's listing ends at the s_code_end that only
padding follows. A word the decoder does not know is printed as Mesa prints it, `raw 0x<16 hex
digits>` (a6xx), or as `unknown <hex>` (gfx1100), and the exit status is then 1."
)]
pub struct DisasmArgs {
    /// The bundle (.mrt) whose kernels to list.
    #[arg(required_unless_present = "isa", conflicts_with_all = ["isa", "hex"])]
    pub bundle: Option<PathBuf>,
    /// List only the kernel with this name.
    #[arg(long, value_name = "NAME", requires = "bundle")]
    pub kernel: Option<String>,
    /// Decode the --hex words for this instruction set instead of reading a bundle.
    #[arg(long, value_enum, requires = "hex")]
    pub isa: Option<IsaArg>,
    /// Instruction words in hex: a6xx HI_LO pairs or 16 digits; gfx1100 dwords.
    #[arg(long, num_args = 1.., value_name = "WORD", requires = "isa")]
    pub hex: Vec<String>,
}

/// Run `modelrt disasm`.
pub fn run(args: &DisasmArgs) -> anyhow::Result<()> {
    match (&args.bundle, args.isa) {
        (Some(path), _) => bundle(path, args.kernel.as_deref()),
        (None, Some(isa)) => words(isa, &args.hex),
        (None, None) => {
            bail!("give a bundle, or --isa and --hex words (see `modelrt disasm --help`)")
        }
    }
}

/// Decode `--hex` words: one line of text per instruction.
fn words(isa: IsaArg, hex: &[String]) -> anyhow::Result<()> {
    let isa = match isa {
        IsaArg::A6xx => Isa::A6xx,
        IsaArg::Gfx1100 => Isa::Gfx1100,
    };
    let words = hex
        .iter()
        .map(|s| parse_word(isa, s))
        .collect::<Result<Vec<u64>, String>>()
        .map_err(anyhow::Error::msg)?;
    let lines = match isa {
        Isa::A6xx => modelrt_targets::disasm::a6xx_lines(&words),
        Isa::Gfx1100 => {
            let dwords: Vec<u32> = words.iter().map(|&w| w as u32).collect();
            gfx1100_lines(&dwords, false)
        }
    };
    for l in &lines {
        outln!("{}", l.text);
    }
    unknown_is_an_error(isa, &lines)
}

/// List a bundle's kernels.
fn bundle(path: &Path, only: Option<&str>) -> anyhow::Result<()> {
    let file = open_bundle_file(path, true)?;
    let b = parse_bundle(file.bytes(), path)?;
    let (isa, kernels) =
        bundle_listing(&b, only).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    let (target, syntax) = match isa {
        Isa::A6xx => (TargetName::AdrenoA630.as_str(), "a6xx IR3 in Mesa's syntax"),
        Isa::Gfx1100 => (TargetName::AmdGfx1100.as_str(), "RDNA3 in LLVM's syntax"),
    };
    outln!(
        "{}: {target}, {} ({syntax})",
        path.display(),
        units::plural(kernels.len() as u64, "kernel")
    );
    let width = match isa {
        Isa::A6xx => 17,
        Isa::Gfx1100 => 26,
    };
    let mut all = Vec::new();
    for k in kernels {
        let listed: usize = k.lines.iter().map(|l| l.bytes as usize).sum();
        outln!("");
        outln!(
            "kernel {} {} (entry {}): {}, {}",
            k.index,
            k.name,
            k.entry,
            units::plural(k.lines.len() as u64, "instruction"),
            units::size(k.code_bytes as u64)
        );
        for l in &k.lines {
            outln!("  {:04x}:  {:<width$}  {}", l.offset, l.raw, l.text);
        }
        if isa == Isa::Gfx1100 && listed < k.code_bytes {
            outln!(
                "  ({} of s_code_end padding not listed)",
                units::size((k.code_bytes - listed) as u64)
            );
        }
        all.extend(k.lines);
    }
    unknown_is_an_error(isa, &all)
}

/// Exit status 1 (one `error:` line) when any line is an unknown encoding.
fn unknown_is_an_error(isa: Isa, lines: &[Line]) -> anyhow::Result<()> {
    let unknown: Vec<&Line> = lines.iter().filter(|l| !l.known).collect();
    let Some(first) = unknown.first() else {
        return Ok(());
    };
    let why = if first.why.is_empty() {
        String::new()
    } else {
        format!(" (first: {})", first.why)
    };
    bail!(
        "{} of {} {} not known to the {} decoder{why} (printed as `{}`)",
        unknown.len(),
        units::plural(lines.len() as u64, "instruction"),
        if unknown.len() == 1 { "is" } else { "are" },
        isa.name(),
        match isa {
            Isa::A6xx => "raw 0x<word>",
            Isa::Gfx1100 => "unknown <hex>",
        }
    )
}
