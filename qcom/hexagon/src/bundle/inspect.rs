//! Offline check of a Hexagon DSP kernel library (docs/hw/hexagon-dsp.md §3): an ELF32 little-endian `ET_DYN` for
//! `EM_HEXAGON` that defines the FastRPC `entry` symbol and imports nothing but the `HAP_*` calls the DSP provides.
use object::elf::{FileHeader32, ET_DYN, SHN_UNDEF, SHT_DYNSYM};
use object::read::elf::{FileHeader, Sym};
use object::LittleEndian;

/// `e_machine` of Hexagon code.
pub const EM_HEXAGON: u16 = 164;
/// The only dynamic imports a kernel library may have.
pub const HAP_IMPORTS: &[&str] = &[
    "HAP_power_set",
    "HAP_mmap",
    "HAP_munmap",
    "HAP_perf_get_time_us",
];

/// Check one kernel library; the error says what is wrong.
pub fn check_hexagon(data: &[u8], entry: &str) -> Result<(), String> {
    let e = LittleEndian;
    let h = FileHeader32::<LittleEndian>::parse(data)
        .map_err(|_| "not an ELF32 little-endian file".to_string())?;
    if h.e_type(e) != ET_DYN || h.e_machine(e) != EM_HEXAGON {
        return Err(format!(
            "ELF type {} machine {} is not a Hexagon shared object",
            h.e_type(e),
            h.e_machine(e)
        ));
    }
    let sections = h.sections(e, data).map_err(|err| err.to_string())?;
    let syms = sections
        .symbols(e, data, SHT_DYNSYM)
        .map_err(|err| err.to_string())?;
    let mut has_entry = false;
    for s in syms.iter().skip(1) {
        let name = syms.symbol_name(e, s).map_err(|err| err.to_string())?;
        let name = String::from_utf8_lossy(name);
        if s.st_shndx(e) == SHN_UNDEF {
            if !HAP_IMPORTS.contains(&name.as_ref()) {
                return Err(format!("imports `{name}`, which the DSP does not provide"));
            }
        } else if name == "entry" {
            has_entry = true;
        }
    }
    if !has_entry {
        return Err(format!(
            "no `entry` symbol (the FastRPC entry point; kernel function `{entry}`)"
        ));
    }
    Ok(())
}
