//! Offline checks that every kernel binary in a bundle decodes for its target — for bundles that
//! cannot run on this machine (Adreno, AMD, another CPU). Used by `modelrt info` and the tests.
//!
//! - CPU: the ELF object parses, is for the bundle's architecture, lays out and links at a page
//!   base (all relocations known and in range), and exports the entry symbol.
//! - IR3 (Adreno): the ISA length equals the metadata's `image_size`, is a whole number of 64-bit
//!   a6xx instructions, and the const/texture metadata is self-consistent.
//! - Qualcomm CL (Adreno, `DEV=QCOM`): the kernel container parses field by field
//!   (`modelrt_qcom::a6xx::cl_container`).
//! - AMD: an ELF64 `ET_REL` for `EM_AMDGPU` whose `e_flags` machine matches the bundle's gfx target,
//!   with the entry symbol in `.text`, a 64-byte `<entry>.kd` kernel descriptor in `.rodata`, and a
//!   kernarg segment large enough for the parameters.
//! - Hexagon: see [`modelrt_hexagon::bundle::inspect`].
use modelrt_core::bundle::Bundle;
use modelrt_hal::target::{AmdKernelMeta, KernelMeta, ParamDesc, ParamKind, Target};
use object::elf::{FileHeader64, ET_REL};
use object::read::elf::{FileHeader, SectionHeader, Sym};
use object::LittleEndian;

use modelrt_cpu::elf::{KernelObject, PAGE};

/// `e_machine` of AMD GPU code objects.
pub const EM_AMDGPU: u16 = 224;

/// One row of LLVM's EF_AMDGPU_MACH table: the gfx target and its `e_flags & EF_AMDGPU_MACH_MASK` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AmdgpuMach {
    /// The gfx target as hex digits (`0x1101` is gfx1101), as in `Target::Amd { gfx }`.
    pub gfx: u32,
    /// `EF_AMDGPU_MACH_AMDGCN_GFX*` value.
    pub mach: u32,
}

/// Mask of the machine field in AMDGPU `e_flags`.
pub const EF_AMDGPU_MACH_MASK: u32 = 0xff;

/// The gfx targets we compile for and their `e_flags` machine values, from LLVM's AMDGPUUsage
/// "AMDGPU ELF Header Enumeration Values" table (`EF_AMDGPU_MACH_AMDGCN_GFX*` in
/// `llvm/include/llvm/BinaryFormat/ELF.h`). Checked against `llvm-readelf` on objects `llc` compiles
/// for each target (`tests/tests/amd/amdgpu_mach.rs`).
pub const AMDGPU_MACH: &[AmdgpuMach] = &[
    AmdgpuMach {
        gfx: 0x1100,
        mach: 0x41,
    },
    AmdgpuMach {
        gfx: 0x1101,
        mach: 0x46,
    },
    AmdgpuMach {
        gfx: 0x1102,
        mach: 0x47,
    },
    AmdgpuMach {
        gfx: 0x1200,
        mach: 0x48,
    },
    AmdgpuMach {
        gfx: 0x1201,
        mach: 0x4e,
    },
];

/// The `e_flags` machine value of `gfx`, if it is in [`AMDGPU_MACH`].
pub fn amdgpu_mach_of(gfx: u32) -> Option<u32> {
    AMDGPU_MACH.iter().find(|r| r.gfx == gfx).map(|r| r.mach)
}

/// The gfx target whose machine value `e_flags` carries, if it is in [`AMDGPU_MACH`].
pub fn amdgpu_gfx_of(e_flags: u32) -> Option<u32> {
    let mach = e_flags & EF_AMDGPU_MACH_MASK;
    AMDGPU_MACH.iter().find(|r| r.mach == mach).map(|r| r.gfx)
}

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
            (Target::Adreno { .. }, KernelMeta::QcomCl) => {
                modelrt_qcom::a6xx::cl_container::ClContainer::parse(k.binary)
                    .map_err(|e| what(e.to_string()))?;
            }
            (Target::Amd { gfx }, KernelMeta::Amd(m)) => {
                check_amd(k.binary, k.entry, *gfx, m, &k.params).map_err(what)?
            }
            (Target::Hexagon { .. }, KernelMeta::Cpu(_)) => {
                modelrt_hexagon::bundle::inspect::check_hexagon(k.binary, k.entry).map_err(what)?
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
    let want = amdgpu_mach_of(gfx).ok_or(format!("unknown gfx{gfx:x}"))?;
    let got = h.e_flags(e) & EF_AMDGPU_MACH_MASK;
    if got != want {
        let name =
            amdgpu_gfx_of(got).map_or("an unknown target".to_string(), |g| format!("gfx{g:x}"));
        return Err(format!(
            "e_flags machine {got:#x} ({name}) is not gfx{gfx:x} ({want:#x})"
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
