//! `cargo xtask footprint`: build the no_std probe in `tests/footprint` (modelrt-core's parser and
//! executor with a dummy device) for `aarch64-unknown-none` in release, measure its allocated
//! read-only bytes (code + constants, from the ELF section headers via `object`) and compare them with
//! `tests/footprint/budget.toml`; more than 10% over budget is an error. It is built twice: as is, and
//! with the `sign` feature (Ed25519 verification of signed bundles before the parse), each with its
//! own budget.
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

/// The Rust target the footprint is measured for.
pub const TARGET: &str = "aarch64-unknown-none";
/// Allowed growth over the budget, in percent.
pub const TOLERANCE_PERCENT: u64 = 10;

/// Allocated section sizes of an ELF image, in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sizes {
    /// Executable code.
    pub text: u64,
    /// Read-only data (constants, unwind tables).
    pub rodata: u64,
    /// Initialised writable data.
    pub data: u64,
    /// Zero-initialised data (no file bytes).
    pub bss: u64,
}

impl Sizes {
    /// The budgeted figure: everything that has to live in flash/ROM.
    pub fn text_rodata(&self) -> u64 {
        self.text + self.rodata
    }
}

/// Sum the allocated sections of an ELF64 file by kind (from the section headers, read
/// with the `object` crate).
pub fn elf_sizes(elf: &[u8]) -> Result<Sizes> {
    use object::elf::{SHF_ALLOC, SHF_EXECINSTR, SHF_WRITE, SHT_NOBITS};
    use object::read::elf::{FileHeader, SectionHeader};
    use object::{elf::FileHeader64, Endianness, FileKind};
    if elf.get(..4) != Some(b"\x7fELF") {
        bail!("not an ELF file");
    }
    if !matches!(FileKind::parse(elf), Ok(FileKind::Elf64)) {
        bail!("only ELF64 is supported");
    }
    let header =
        FileHeader64::<Endianness>::parse(elf).map_err(|e| anyhow::anyhow!("bad ELF file: {e}"))?;
    let endian = header
        .endian()
        .map_err(|e| anyhow::anyhow!("bad ELF file: {e}"))?;
    let sections = header
        .section_headers(endian, elf)
        .map_err(|e| anyhow::anyhow!("bad ELF section table: {e}"))?;
    let mut s = Sizes::default();
    for h in sections {
        let flags = h.sh_flags(endian);
        let size = h.sh_size(endian);
        if flags & u64::from(SHF_ALLOC) == 0 {
            continue;
        }
        if flags & u64::from(SHF_EXECINSTR) != 0 {
            s.text += size;
        } else if flags & u64::from(SHF_WRITE) == 0 {
            s.rodata += size;
        } else if h.sh_type(endian) == SHT_NOBITS {
            s.bss += size;
        } else {
            s.data += size;
        }
    }
    Ok(s)
}

/// The budget keys of the two probe builds: without and with the `sign` feature.
pub const BUDGET_KEYS: [(&str, Option<&str>); 2] = [
    ("text_rodata_bytes", None),
    ("text_rodata_bytes_sign", Some("sign")),
];

/// The `text_rodata_bytes = N` value of a budget file.
pub fn parse_budget(text: &str) -> Result<u64> {
    parse_budget_key(text, "text_rodata_bytes")
}

/// The `KEY = N` value of a budget file.
pub fn parse_budget_key(text: &str, key: &str) -> Result<u64> {
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        if let Some((k, v)) = line.split_once('=') {
            if k.trim() == key {
                return v
                    .trim()
                    .replace('_', "")
                    .parse()
                    .with_context(|| format!("bad {key} value '{}'", v.trim()));
            }
        }
    }
    bail!("budget file has no {key} = N line")
}

/// Whether `measured` is within `budget` plus [`TOLERANCE_PERCENT`].
pub fn within_budget(measured: u64, budget: u64) -> bool {
    measured.saturating_mul(100) <= budget.saturating_mul(100 + TOLERANCE_PERCENT)
}

fn probe_dir(root: &Path) -> PathBuf {
    root.join("tests").join("footprint")
}

/// Build the probe for [`TARGET`] in release and return the path of the ELF.
pub fn build_probe(root: &Path) -> Result<PathBuf> {
    build_probe_with(root, None)
}

/// [`build_probe`] with the probe's cargo feature `feature` (in its own target directory, so the
/// two builds do not rebuild each other).
pub fn build_probe_with(root: &Path, feature: Option<&str>) -> Result<PathBuf> {
    let target_dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"))
        .join(match feature {
            None => "footprint".to_string(),
            Some(f) => format!("footprint-{f}"),
        });
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let ok = Command::new(cargo)
        .args([
            "build",
            "--release",
            "--quiet",
            "--target",
            TARGET,
            "--manifest-path",
        ])
        .arg(probe_dir(root).join("Cargo.toml"))
        .args(feature.map(|f| format!("--features={f}")))
        .env("CARGO_TARGET_DIR", &target_dir)
        .status()
        .context("cannot run cargo")?
        .success();
    if !ok {
        bail!("building the footprint probe failed (is the {TARGET} target installed? `rustup target add {TARGET}`)");
    }
    Ok(target_dir
        .join(TARGET)
        .join("release")
        .join("modelrt-footprint"))
}

/// Build, measure and check against the budget, both builds ([`BUDGET_KEYS`]). Returns the measured
/// sizes and the budget of each.
pub fn run() -> Result<Vec<(Sizes, u64)>> {
    let root = crate::setup::workspace_root();
    let budget_file = probe_dir(&root).join("budget.toml");
    let text = std::fs::read_to_string(&budget_file)
        .with_context(|| format!("cannot read {}", budget_file.display()))?;
    let mut out = Vec::new();
    for (key, feature) in BUDGET_KEYS {
        let elf = build_probe_with(&root, feature)?;
        let bytes =
            std::fs::read(&elf).with_context(|| format!("cannot read {}", elf.display()))?;
        let sizes = elf_sizes(&bytes)?;
        let budget = parse_budget_key(&text, key)?;
        let used = sizes.text_rodata();
        let what = feature.map_or(String::new(), |f| format!(" +{f}"));
        println!(
            "footprint   {TARGET} release{what}: text {} B + rodata {} B = {used} B (data {} B, bss {} B); budget {budget} B (+{TOLERANCE_PERCENT}%)",
            sizes.text, sizes.rodata, sizes.data, sizes.bss
        );
        if !within_budget(used, budget) {
            bail!(
                "footprint regressed: {used} B of code+rodata{what} is more than {TOLERANCE_PERCENT}% over the budget of {budget} B ({key}) in {}",
                budget_file.display()
            );
        }
        if used.saturating_mul(100) < budget.saturating_mul(90) {
            println!(
                "footprint   {used} B{what} is well under the budget; consider lowering {key} in {}",
                budget_file.display()
            );
        }
        out.push((sizes, budget));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use object::elf::{SHF_ALLOC, SHF_EXECINSTR, SHF_WRITE};

    use super::*;

    /// A minimal ELF64 with the given (type, flags, size) sections.
    fn elf(sections: &[(u32, u32, u64)]) -> Vec<u8> {
        let shoff = 64usize;
        let mut b = vec![0u8; shoff + sections.len() * 64];
        b[..4].copy_from_slice(b"\x7fELF");
        b[4] = 2; // ELFCLASS64
        b[5] = 1; // little-endian
        b[6] = 1; // EV_CURRENT
        b[0x28..0x30].copy_from_slice(&(shoff as u64).to_le_bytes());
        b[0x3a..0x3c].copy_from_slice(&64u16.to_le_bytes());
        b[0x3c..0x3e].copy_from_slice(&(sections.len() as u16).to_le_bytes());
        for (i, (ty, flags, size)) in sections.iter().enumerate() {
            let h = shoff + i * 64;
            b[h + 4..h + 8].copy_from_slice(&ty.to_le_bytes());
            b[h + 8..h + 16].copy_from_slice(&u64::from(*flags).to_le_bytes());
            b[h + 0x20..h + 0x28].copy_from_slice(&size.to_le_bytes());
        }
        b
    }

    #[test]
    fn sections_are_classified_by_flags() {
        let progbits = 1;
        let image = elf(&[
            (0, 0, 0),                                              // null section
            (progbits, SHF_ALLOC | SHF_EXECINSTR, 1000),            // .text
            (progbits, SHF_ALLOC, 300),                             // .rodata
            (progbits, SHF_ALLOC, 20),                              // .eh_frame
            (progbits, SHF_ALLOC | SHF_WRITE, 40),                  // .data
            (object::elf::SHT_NOBITS, SHF_ALLOC | SHF_WRITE, 4096), // .bss
            (progbits, 0, 77),                                      // .comment (not loaded)
        ]);
        let s = elf_sizes(&image).unwrap();
        assert_eq!(
            s,
            Sizes {
                text: 1000,
                rodata: 320,
                data: 40,
                bss: 4096
            }
        );
        assert_eq!(s.text_rodata(), 1320);
    }

    #[test]
    fn bad_elf_files_are_errors() {
        assert!(elf_sizes(b"nope").is_err());
        let mut image = elf(&[(1, SHF_ALLOC, 10)]);
        image.truncate(80);
        assert!(elf_sizes(&image).is_err());
    }

    #[test]
    fn budget_parsing_and_tolerance() {
        assert_eq!(
            parse_budget("# c\ntext_rodata_bytes = 48_000 # now\n").unwrap(),
            48000
        );
        assert!(parse_budget("other = 1").is_err());
        let both = "text_rodata_bytes = 1_000\ntext_rodata_bytes_sign = 2_000\n";
        assert_eq!(parse_budget(both).unwrap(), 1000);
        assert_eq!(
            parse_budget_key(both, "text_rodata_bytes_sign").unwrap(),
            2000
        );
        assert!(parse_budget("text_rodata_bytes = lots").is_err());
        assert!(within_budget(1100, 1000));
        assert!(!within_budget(1101, 1000));
        assert!(within_budget(10, 1000));
    }
}
