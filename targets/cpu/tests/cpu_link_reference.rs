//! Independent check of the loader's layout and relocation arithmetic: every fixture object is
//! linked by the loader at `BASE` and compared, section by section, with the same object linked by
//! lld 19 at the same addresses (`fixtures/cpu/gen.py` documents how the `.lld.elf` files were made).
//! This covers the aarch64 encodings (ADRP, ADD/LDST8..128 LO12, CALL26, JUMP26) that cannot run
//! on an x86 host, and x86_64 PC32 into `.rodata`, constant pools and `.bss`.

mod cpu_common;

use cpu_common::fixture;
use modelrt_cpu::elf::KernelObject;
use modelrt_hal::target::CpuArch;
use object::elf::{self, FileHeader64};
use object::read::elf::{FileHeader, SectionHeader};
use object::LittleEndian;

const BASE: u64 = 0x40000;

/// Link `name` for `arch` with the loader and compare with lld; returns the loader's image.
fn compare_with_lld(arch: CpuArch, dir: &str, name: &str, entry: &str) -> Vec<u8> {
    let obj = fixture(&format!("{dir}/{name}.o"));
    let reference = fixture(&format!("{dir}/{name}.lld.elf"));
    let object = KernelObject::parse(&obj, Some(arch), entry).expect("parse");
    let mut image = vec![0u8; object.image_size() as usize];
    object.link(&mut image, BASE).expect("link");

    let header = FileHeader64::<LittleEndian>::parse(&*reference).unwrap();
    let sections = header.sections(LittleEndian, &*reference).unwrap();
    let mut compared = 0;
    for section in sections.iter() {
        if section.sh_flags(LittleEndian) & u64::from(elf::SHF_ALLOC) == 0 {
            continue;
        }
        let name_bytes = sections.section_name(LittleEndian, section).unwrap();
        let sec_name = std::str::from_utf8(name_bytes).unwrap();
        let offset = object
            .section_offset(sec_name)
            .unwrap_or_else(|| panic!("{name}: {sec_name} not loaded"));
        let addr = section.sh_addr(LittleEndian);
        assert_eq!(addr - BASE, offset, "{name}: layout of {sec_name}");
        let size = section.sh_size(LittleEndian) as usize;
        let ours = &image[offset as usize..offset as usize + size];
        if section.sh_type(LittleEndian) == elf::SHT_NOBITS {
            assert!(
                ours.iter().all(|&b| b == 0),
                "{name}: {sec_name} not zeroed"
            );
        } else {
            let theirs = section.data(LittleEndian, &*reference).unwrap();
            assert_eq!(ours, theirs, "{name}: bytes of {sec_name} differ from lld");
        }
        compared += 1;
    }
    assert!(compared >= 1, "{name}: no sections compared");
    image
}

/// The fixture objects built for both architectures, with their entry symbols.
const BOTH_ARCHES: [(&str, &str); 5] = [
    ("e4", "E_4"),
    ("threaded", "r_4_16_8"),
    ("tables", "tables"),
    ("manyargs", "many"),
    ("bss", "count_calls"),
];

#[test]
fn x86_64_objects_match_lld() {
    for (name, entry) in BOTH_ARCHES {
        compare_with_lld(CpuArch::X86_64, "x86_64", name, entry);
    }
}

#[test]
fn aarch64_objects_match_lld() {
    for (name, entry) in BOTH_ARCHES.into_iter().chain([("a64relocs", "a64relocs")]) {
        compare_with_lld(CpuArch::Aarch64, "aarch64", name, entry);
    }
}

fn insn(image: &[u8], at: u64) -> u32 {
    let at = at as usize;
    u32::from_le_bytes([image[at], image[at + 1], image[at + 2], image[at + 3]])
}

/// Sign-extend the low `bits` of `v`.
fn sext(v: u32, bits: u32) -> i64 {
    i64::from((v << (32 - bits)) as i32 >> (32 - bits))
}

/// Decode the patched fields of `a64relocs.o` by the ARM ARM instruction formats and check that
/// they point where the relocation entries (see `llvm-readelf -r`) say: `.rodata + addend`, or
/// `helper` for the branches.
#[test]
fn aarch64_fields_decode_to_their_targets() {
    let obj = fixture("aarch64/a64relocs.o");
    let object = KernelObject::parse(&obj, Some(CpuArch::Aarch64), "a64relocs").unwrap();
    let mut image = vec![0u8; object.image_size() as usize];
    object.link(&mut image, BASE).unwrap();
    let text = object.section_offset(".text").unwrap();
    let rodata = BASE + object.section_offset(".rodata").unwrap();
    // (ADRP offset, LO12 offset, addend, access-size shift; None = ADD) from the relocation table.
    let pairs: [(u64, u64, u64, Option<u32>); 6] = [
        (0x04, 0x08, 0x00, None),
        (0x30, 0x34, 0x43, Some(0)),
        (0x38, 0x3c, 0x52, Some(1)),
        (0x44, 0x48, 0x70, Some(2)),
        (0x50, 0x54, 0xb0, Some(3)),
        (0x60, 0x64, 0xd0, Some(4)),
    ];
    for (adrp_at, lo_at, addend, shift) in pairs {
        let target = rodata + addend;
        let adrp = insn(&image, text + adrp_at);
        assert_eq!(adrp & 0x9f00_0000, 0x9000_0000, "ADRP opcode kept");
        let imm = ((adrp >> 5) & 0x7ffff) << 2 | ((adrp >> 29) & 3);
        let page = ((BASE + text + adrp_at) & !0xfff).wrapping_add((sext(imm, 21) << 12) as u64);
        assert_eq!(page, target & !0xfff, "ADRP at {adrp_at:#x}");
        let imm12 = u64::from((insn(&image, text + lo_at) >> 10) & 0xfff);
        assert_eq!(
            imm12 << shift.unwrap_or(0),
            target & 0xfff,
            "LO12 at {lo_at:#x}"
        );
    }
    let helper = BASE + text; // `helper` is the first function in .text (symbol value 0)
    for (at, opcode) in [(0x78u64, 0x9400_0000u32), (0x98, 0x1400_0000)] {
        let b = insn(&image, text + at);
        assert_eq!(b & 0xfc00_0000, opcode, "branch opcode kept at {at:#x}");
        let dest = (BASE + text + at).wrapping_add((sext(b & 0x3ff_ffff, 26) * 4) as u64);
        assert_eq!(dest, helper, "branch at {at:#x}");
    }
}
