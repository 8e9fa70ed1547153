//! Parse a tinygrad CPU kernel object (ELF64 ET_REL), lay out its loadable sections and link it
//! into a byte image at a given absolute base address.
//!
//! Layout: every `SHF_ALLOC` section of type `SHT_PROGBITS` or `SHT_NOBITS` is placed in
//! section-header order at its `sh_addralign` (at most one page), read-only sections first and
//! writable ones from the next page boundary; NOBITS sections stay zero.
//! Linking copies the PROGBITS bytes and applies every RELA section whose target is a placed
//! section, with absolute `S + A − P` arithmetic ([`super::reloc`]). Undefined symbols are an error:
//! tinygrad kernels never need runtime-library calls when compiled for a baseline with the
//! required features (see `docs/hw/tinygrad-export.md` §6.1, F16C hazard).
use modelrt_hal::target::CpuArch;
use object::elf::{self, FileHeader64, SectionHeader64, Sym64};
use object::read::elf::{FileHeader, Rela, SectionHeader, SectionTable, Sym, SymbolTable};
use object::{LittleEndian, SectionIndex, SymbolIndex};

use super::error::CpuError;
use super::reloc::{self, Reloc};

/// Page size the image base is aligned to (and the largest section alignment accepted).
pub const PAGE: u64 = 4096;
/// Largest image accepted (kernels are a few KiB; this only bounds hostile inputs).
pub const MAX_IMAGE: u64 = 256 << 20;

type Elf = FileHeader64<LittleEndian>;

/// A parsed and laid-out kernel object, ready to be linked at any page-aligned base.
pub struct KernelObject<'a> {
    data: &'a [u8],
    arch: CpuArch,
    sections: SectionTable<'a, Elf>,
    symbols: SymbolTable<'a, Elf>,
    /// Image offset of each section, `None` when the section is not loaded.
    placement: Vec<Option<u64>>,
    image_size: u64,
    /// Bytes at the start of the image holding read-only sections; writable sections start here
    /// (a multiple of the page size when there are any).
    readonly_size: u64,
    entry_offset: u64,
}

/// ELF `e_machine` of an architecture.
pub fn machine_of(arch: CpuArch) -> u16 {
    match arch {
        CpuArch::X86_64 => elf::EM_X86_64,
        CpuArch::Aarch64 => elf::EM_AARCH64,
    }
}

impl<'a> KernelObject<'a> {
    /// Parse `data`, require it to be for `expect` (when given), and find `entry`.
    pub fn parse(data: &'a [u8], expect: Option<CpuArch>, entry: &str) -> Result<Self, CpuError> {
        let header = Elf::parse(data).map_err(|_| CpuError::NotRelocatable)?;
        let endian = header.endian().map_err(|_| CpuError::NotRelocatable)?;
        if header.e_type(endian) != elf::ET_REL {
            return Err(CpuError::NotRelocatable);
        }
        let machine = header.e_machine(endian);
        let arch = match machine {
            elf::EM_X86_64 => CpuArch::X86_64,
            elf::EM_AARCH64 => CpuArch::Aarch64,
            other => return Err(CpuError::UnsupportedMachine(other)),
        };
        if let Some(expected_arch) = expect {
            if expected_arch != arch {
                return Err(CpuError::WrongMachine {
                    found: machine,
                    expected: machine_of(expected_arch),
                    expected_arch,
                });
            }
        }
        let sections = header.sections(endian, data)?;
        let symbols = sections.symbols(endian, data, elf::SHT_SYMTAB)?;

        // Read-only sections (code, constants) first, then writable ones (.data/.bss, never seen in
        // tinygrad kernels but cheap to support) from the next page, so the two parts can be
        // protected RX and RW separately.
        let mut placement = vec![None; sections.len()];
        let mut cursor = 0u64;
        let mut readonly_end = 0u64;
        let mut any_writable = false;
        for writable in [false, true] {
            if writable {
                readonly_end = cursor;
                cursor = cursor.next_multiple_of(writable_boundary());
            }
            for (index, section) in sections.enumerate() {
                let is_writable = section.sh_flags(endian) & u64::from(elf::SHF_WRITE) != 0;
                if !is_loaded(section) || is_writable != writable {
                    continue;
                }
                let align = section.sh_addralign(endian).max(1);
                if !align.is_power_of_two() {
                    return Err(CpuError::Malformed(format!(
                        "section {} alignment {align} is not a power of two",
                        index.0
                    )));
                }
                if align > PAGE {
                    return Err(CpuError::AlignmentTooLarge(align));
                }
                let start = cursor.next_multiple_of(align);
                let end = start
                    .checked_add(section.sh_size(endian))
                    .filter(|&end| end <= MAX_IMAGE)
                    .ok_or(CpuError::ImageTooLarge(section.sh_size(endian)))?;
                if section.sh_type(endian) == elf::SHT_PROGBITS {
                    // Validate the file range now so linking cannot fail on it later.
                    section.data(endian, data).map_err(|_| {
                        CpuError::Malformed("section data out of file bounds".into())
                    })?;
                }
                placement[index.0] = Some(start);
                cursor = end;
                any_writable |= writable;
            }
        }
        let readonly_size = if any_writable {
            readonly_end.next_multiple_of(writable_boundary())
        } else {
            readonly_end
        };
        if !any_writable {
            cursor = readonly_end;
        }

        let mut object = KernelObject {
            data,
            arch,
            sections,
            symbols,
            placement,
            image_size: cursor,
            readonly_size,
            entry_offset: 0,
        };
        object.entry_offset = object.find_entry(entry)?;
        Ok(object)
    }

    /// Architecture of the object.
    pub fn arch(&self) -> CpuArch {
        self.arch
    }

    /// Bytes the linked image occupies (before page rounding).
    pub fn image_size(&self) -> u64 {
        self.image_size
    }

    /// Length of the read-only (to be RX) prefix of the image; the rest must stay RW.
    pub fn readonly_size(&self) -> u64 {
        self.readonly_size
    }

    /// Offset of the entry symbol inside the image.
    pub fn entry_offset(&self) -> u64 {
        self.entry_offset
    }

    /// Image offset of the section named `name`, if it is loaded (for tests and diagnostics).
    pub fn section_offset(&self, name: &str) -> Option<u64> {
        let (index, _) = self
            .sections
            .section_by_name(LittleEndian, name.as_bytes())?;
        self.placement.get(index.0).copied().flatten()
    }

    fn find_entry(&self, entry: &str) -> Result<u64, CpuError> {
        let endian = LittleEndian;
        let not_found = || CpuError::EntryNotFound(entry.to_string());
        for sym in self.symbols.iter() {
            if self.symbols.symbol_name(endian, sym).ok() != Some(entry.as_bytes()) {
                continue;
            }
            if !matches!(sym.st_type(), elf::STT_FUNC | elf::STT_NOTYPE) || sym.is_undefined(endian)
            {
                continue;
            }
            let index = SectionIndex(usize::from(sym.st_shndx(endian)));
            let section = self.sections.section(index).map_err(|_| not_found())?;
            if section.sh_flags(endian) & u64::from(elf::SHF_EXECINSTR) == 0
                || section.sh_type(endian) != elf::SHT_PROGBITS
            {
                continue;
            }
            let start = self.placement[index.0].ok_or_else(not_found)?;
            if sym.st_value(endian) >= section.sh_size(endian) {
                return Err(not_found());
            }
            let offset = start + sym.st_value(endian);
            // Only the read-only prefix is mapped executable (W^X): a code section that is also
            // writable is laid out in the read-write part.
            if section.sh_flags(endian) & u64::from(elf::SHF_WRITE) != 0
                || offset >= self.readonly_size
            {
                return Err(CpuError::EntryNotExecutable(entry.to_string()));
            }
            return Ok(offset);
        }
        Err(not_found())
    }

    /// Copy the loaded sections into `image` (which must be zeroed and at least
    /// [`Self::image_size`] long) and apply all relocations as if `image[0]` lived at `base`.
    pub fn link(&self, image: &mut [u8], base: u64) -> Result<(), CpuError> {
        let endian = LittleEndian;
        if (image.len() as u64) < self.image_size {
            return Err(CpuError::ImageTooLarge(self.image_size));
        }
        for (index, section) in self.sections.enumerate() {
            let (Some(start), elf::SHT_PROGBITS) =
                (self.placement[index.0], section.sh_type(endian))
            else {
                continue;
            };
            let bytes = section.data(endian, self.data)?;
            let start = start as usize;
            image[start..start + bytes.len()].copy_from_slice(bytes);
        }
        for section in self.sections.iter() {
            match section.sh_type(endian) {
                elf::SHT_RELA => self.apply_rela_section(section, image, base)?,
                elf::SHT_REL if self.target_of(section).is_some() => {
                    return Err(CpuError::RelNotSupported)
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Index and image offset of the section a relocation section patches, if it is loaded.
    fn target_of(
        &self,
        rel_section: &SectionHeader64<LittleEndian>,
    ) -> Option<(SectionIndex, u64)> {
        let target = SectionIndex(rel_section.sh_info(LittleEndian) as usize);
        let start = self.placement.get(target.0).copied().flatten()?;
        Some((target, start))
    }

    fn apply_rela_section(
        &self,
        rel_section: &SectionHeader64<LittleEndian>,
        image: &mut [u8],
        base: u64,
    ) -> Result<(), CpuError> {
        let endian = LittleEndian;
        let Some((target, target_start)) = self.target_of(rel_section) else {
            return Ok(());
        };
        let target_header = self.sections.section(target)?;
        if target_header.sh_type(endian) != elf::SHT_PROGBITS {
            return Err(CpuError::Malformed(
                "relocations against a section without file data".into(),
            ));
        }
        let target_size = target_header.sh_size(endian);
        let Some((relas, link)) = rel_section.rela(endian, self.data)? else {
            return Ok(());
        };
        if link != self.symbols.section() {
            return Err(CpuError::Malformed(
                "relocation section is not linked to the symbol table".into(),
            ));
        }
        for rela in relas {
            let rtype = rela.r_type(endian, false);
            let offset = rela.r_offset(endian);
            let width = reloc::field_width(self.arch, rtype).ok_or(CpuError::UnknownRelocation {
                arch: self.arch,
                rtype,
                offset,
            })? as u64;
            if offset
                .checked_add(width)
                .is_none_or(|end| end > target_size)
            {
                return Err(CpuError::RelocationOutsideSection { offset });
            }
            let s = match rela.symbol(endian, false) {
                None => 0,
                Some(index) => self.symbol_address(index, base)?,
            };
            let field = target_start + offset;
            let r = Reloc {
                rtype,
                offset: field as usize,
                s,
                a: rela.r_addend(endian),
                p: base.wrapping_add(field),
            };
            reloc::apply(self.arch, image, &r)?;
        }
        Ok(())
    }

    fn symbol_address(&self, index: SymbolIndex, base: u64) -> Result<u64, CpuError> {
        let endian = LittleEndian;
        let sym: &Sym64<LittleEndian> = self.symbols.symbol(index)?;
        let name = || {
            String::from_utf8_lossy(self.symbols.symbol_name(endian, sym).unwrap_or(b"?"))
                .into_owned()
        };
        match sym.st_shndx(endian) {
            elf::SHN_UNDEF => Err(CpuError::UndefinedSymbol(name())),
            elf::SHN_ABS => Ok(sym.st_value(endian)),
            shndx if shndx >= elf::SHN_LORESERVE => Err(CpuError::UnsupportedSymbol(name())),
            shndx => {
                let start = self
                    .placement
                    .get(usize::from(shndx))
                    .copied()
                    .flatten()
                    .ok_or_else(|| CpuError::SymbolNotLoaded(name()))?;
                Ok(base.wrapping_add(start).wrapping_add(sym.st_value(endian)))
            }
        }
    }
}

/// Alignment of the first writable section: a page, or the host page if that is larger, so
/// read-only and writable parts never share a page.
fn writable_boundary() -> u64 {
    (super::exec_mem::page_size() as u64).max(PAGE)
}

fn is_loaded(section: &SectionHeader64<LittleEndian>) -> bool {
    let endian = LittleEndian;
    section.sh_flags(endian) & u64::from(elf::SHF_ALLOC) != 0
        && matches!(section.sh_type(endian), elf::SHT_PROGBITS | elf::SHT_NOBITS)
}
