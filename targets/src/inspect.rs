//! Offline checks that every kernel binary in a bundle decodes for its target — for bundles that
//! cannot run on this machine (Adreno, AMD, another CPU). Used by `modelrt info` and the tests.
//!
//! - CPU: the ELF object parses, is for the bundle's architecture, lays out and links at a page
//!   base (all relocations known and in range), and exports the entry symbol.
//! - IR3 (Adreno): the ISA length equals the metadata's `image_size`, is a whole number of 64-bit
//!   a6xx instructions, and the const/texture metadata is self-consistent.
//! - AMD: an ELF64 `ET_REL` for `EM_AMDGPU` whose `e_flags` machine matches the bundle's gfx target,
//!   with the entry symbol in `.text`, a 64-byte `<entry>.kd` kernel descriptor in `.rodata`, and a
//!   kernarg segment large enough for the parameters.
use modelrt_core::bundle::Bundle;
use modelrt_hal::target::{AmdKernelMeta, KernelMeta, ParamDesc, ParamKind, Target};
use object::elf::{FileHeader64, ET_REL};
use object::read::elf::{FileHeader, SectionHeader, Sym};
use object::LittleEndian;

use crate::cpu::elf::{KernelObject, PAGE};

/// `e_machine` of AMD GPU code objects.
pub const EM_AMDGPU: u16 = 224;

/// `e_flags & 0xff` (EF_AMDGPU_MACH) for the gfx targets we compile for (LLVM's AMDGPUUsage table).
pub const AMDGPU_MACH: &[(u32, u32)] = &[
    (0x1100, 0x41),
    (0x1101, 0x42),
    (0x1102, 0x43),
    (0x1200, 0x48),
    (0x1201, 0x4e),
];

/// Summary of a successful check.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct KernelCheck {
    pub kernels: usize,
    pub code_bytes: usize,
}

/// Check every kernel of `bundle`; the error names the kernel and what is wrong.
pub fn check_kernels(bundle: &Bundle<'_>) -> Result<KernelCheck, String> {
    let target = bundle.body().target;
    let mut report = KernelCheck::default();
    for (i, k) in bundle.body().kernels.iter().enumerate() {
        let k = k.map_err(|e| e.to_string())?;
        let what = |msg: String| format!("kernel {i} ({}): {msg}", k.name);
        match (&target, &k.meta) {
            (Target::Cpu { arch, .. }, KernelMeta::Cpu(_)) => {
                let obj = KernelObject::parse(k.binary, Some(*arch), k.entry)
                    .map_err(|e| what(e.to_string()))?;
                let mut image = vec![0u8; obj.image_size() as usize];
                obj.link(&mut image, 16 * PAGE)
                    .map_err(|e| what(e.to_string()))?;
            }
            (Target::Adreno { .. }, KernelMeta::Ir3(m)) => {
                if k.binary.len() != m.image_size as usize {
                    return Err(what(format!(
                        "ISA is {} bytes, metadata says {}",
                        k.binary.len(),
                        m.image_size
                    )));
                }
                if k.binary.is_empty() || !k.binary.len().is_multiple_of(8) {
                    return Err(what(format!(
                        "ISA of {} bytes is not whole 64-bit instructions",
                        k.binary.len()
                    )));
                }
                if m.fregs == 0 || m.fregs > 64 || m.hregs > 64 {
                    return Err(what(format!(
                        "register footprint fregs {} hregs {} is out of range",
                        m.fregs, m.hregs
                    )));
                }
            }
            (Target::Amd { gfx }, KernelMeta::Amd(m)) => {
                check_amd(k.binary, k.entry, *gfx, m, &k.params).map_err(what)?
            }
            _ => return Err(what("metadata does not match the bundle target".into())),
        }
        report.kernels += 1;
        report.code_bytes += k.binary.len();
    }
    Ok(report)
}

fn check_amd(
    data: &[u8],
    entry: &str,
    gfx: u32,
    meta: &AmdKernelMeta,
    params: &[ParamDesc],
) -> Result<(), String> {
    let h = FileHeader64::<LittleEndian>::parse(data)
        .map_err(|_| "not an ELF64 little-endian object".to_string())?;
    let e = LittleEndian;
    if h.e_type(e) != ET_REL || h.e_machine(e) != EM_AMDGPU {
        return Err(format!(
            "ELF type {} machine {} is not an AMDGPU relocatable object",
            h.e_type(e),
            h.e_machine(e)
        ));
    }
    let want = AMDGPU_MACH
        .iter()
        .find(|(g, _)| *g == gfx)
        .map(|(_, m)| *m)
        .ok_or(format!("unknown gfx{gfx:x}"))?;
    if h.e_flags(e) & 0xff != want {
        return Err(format!(
            "e_flags machine {:#x} is not gfx{gfx:x} ({want:#x})",
            h.e_flags(e) & 0xff
        ));
    }
    let sections = h
        .sections(e, data)
        .map_err(|_| "bad section table".to_string())?;
    let symbols = sections
        .symbols(e, data, object::elf::SHT_SYMTAB)
        .map_err(|_| "bad symbol table".to_string())?;
    let name_of = |idx: usize| -> Option<&[u8]> {
        let s = sections.section(object::SectionIndex(idx)).ok()?;
        sections.section_name(e, s).ok()
    };
    let kd = format!("{entry}.kd");
    let (mut saw_entry, mut saw_kd) = (false, false);
    for sym in symbols.iter() {
        let name = symbols.symbol_name(e, sym).unwrap_or_default();
        let sec = sym.st_shndx(e) as usize;
        if name == entry.as_bytes() {
            saw_entry = name_of(sec) == Some(b".text");
        } else if name == kd.as_bytes() {
            saw_kd = name_of(sec) == Some(b".rodata") && sym.st_size(e) == 64;
        }
    }
    if !saw_entry {
        return Err(format!("no entry symbol {entry} in .text"));
    }
    if !saw_kd {
        return Err(format!("no 64-byte kernel descriptor {kd} in .rodata"));
    }
    let rodata = sections
        .iter()
        .find(|s| sections.section_name(e, s).ok() == Some(b".rodata"))
        .ok_or("no .rodata section")?;
    if rodata.sh_size(e) < 64 {
        return Err(".rodata is smaller than a kernel descriptor".into());
    }
    let need: u32 = params
        .iter()
        .map(|p| match p.kind {
            ParamKind::Buffer | ParamKind::Image { .. } => 8,
            ParamKind::CoreId | ParamKind::Var => 4,
        })
        .sum();
    if meta.kernarg_size < need {
        return Err(format!(
            "kernarg segment of {} bytes cannot hold {need} bytes of parameters",
            meta.kernarg_size
        ));
    }
    if meta.wavefront_size != 32 && meta.wavefront_size != 64 {
        return Err(format!("wavefront size {}", meta.wavefront_size));
    }
    Ok(())
}
