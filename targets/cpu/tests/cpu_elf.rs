//! Malformed and unsupported kernel objects give typed errors, never panics.

mod cpu_common;

use cpu_common::{fixture, load};
use modelrt_cpu::elf::KernelObject;
use modelrt_cpu::{CpuDevice, CpuError};
use modelrt_hal::target::{CpuArch, DType, ParamDesc, ParamKind};
use object::elf::{self, FileHeader64};
use object::read::elf::{FileHeader, SectionHeader};
use object::LittleEndian;
use proptest::prelude::*;

const F32_BUF: ParamDesc = ParamDesc {
    kind: ParamKind::Buffer,
    dtype: DType::F32,
};

/// Parse and link (never execute) `data`: the whole loader pipeline short of mapping code.
fn parse_and_link(data: &[u8], arch: CpuArch, entry: &str) -> Result<(), CpuError> {
    let object = KernelObject::parse(data, Some(arch), entry)?;
    let mut image = vec![0u8; object.image_size() as usize];
    object.link(&mut image, 0x7f12_3456_0000)
}

/// File offset of the first RELA entry of `.rela.text`.
fn first_rela(data: &[u8]) -> usize {
    let header = FileHeader64::<LittleEndian>::parse(data).unwrap();
    let sections = header.sections(LittleEndian, data).unwrap();
    let (_, rela) = sections
        .section_by_name(LittleEndian, b".rela.text")
        .unwrap();
    rela.sh_offset(LittleEndian) as usize
}

#[test]
fn every_truncation_is_an_error() {
    for name in ["x86_64/e4.o", "x86_64/tables.o", "aarch64/a64relocs.o"] {
        let data = fixture(name);
        let arch = if name.starts_with("x86") {
            CpuArch::X86_64
        } else {
            CpuArch::Aarch64
        };
        let entry = if name.contains("e4") {
            "E_4"
        } else if name.contains("tables") {
            "tables"
        } else {
            "a64relocs"
        };
        parse_and_link(&data, arch, entry).unwrap();
        // Section headers sit at the end of clang's objects, so every strict prefix loses them.
        for len in 0..data.len() {
            assert!(
                parse_and_link(&data[..len], arch, entry).is_err(),
                "{name} truncated to {len} bytes"
            );
        }
    }
}

#[test]
fn wrong_machine_is_refused() {
    let err = parse_and_link(&fixture("aarch64/e4.o"), CpuArch::X86_64, "E_4").unwrap_err();
    assert_eq!(
        err,
        CpuError::WrongMachine {
            found: elf::EM_AARCH64,
            expected: elf::EM_X86_64,
            expected_arch: CpuArch::X86_64
        }
    );
    let mut riscv = fixture("x86_64/e4.o");
    riscv[18..20].copy_from_slice(&elf::EM_RISCV.to_le_bytes());
    assert_eq!(
        parse_and_link(&riscv, CpuArch::X86_64, "E_4"),
        Err(CpuError::UnsupportedMachine(elf::EM_RISCV))
    );
    let mut exec = fixture("x86_64/e4.o");
    exec[16..18].copy_from_slice(&elf::ET_EXEC.to_le_bytes());
    assert_eq!(
        parse_and_link(&exec, CpuArch::X86_64, "E_4"),
        Err(CpuError::NotRelocatable)
    );
    assert_eq!(
        parse_and_link(b"not an elf at all", CpuArch::X86_64, "E_4"),
        Err(CpuError::NotRelocatable)
    );
}

#[test]
fn undefined_symbols_are_refused_on_both_arches() {
    for (dir, arch) in [("x86_64", CpuArch::X86_64), ("aarch64", CpuArch::Aarch64)] {
        let err = parse_and_link(
            &fixture(&format!("{dir}/undefined.o")),
            arch,
            "calls_helper",
        )
        .unwrap_err();
        assert_eq!(err, CpuError::UndefinedSymbol("helper".into()), "{dir}");
    }
    // Through the device as well, with the host architecture's object.
    let mut dev = CpuDevice::new(1).unwrap();
    let err = load(
        &mut dev,
        &fixture(&format!("{}/undefined.o", std::env::consts::ARCH)),
        "calls_helper",
        &[F32_BUF],
        1,
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("undefined symbol `helper`"),
        "{err}"
    );
}

#[test]
fn got_relocations_are_unknown() {
    let err = parse_and_link(
        &fixture("x86_64/gotpcrel.o"),
        CpuArch::X86_64,
        "reads_global",
    )
    .unwrap_err();
    assert!(matches!(
        err,
        CpuError::UnknownRelocation {
            arch: CpuArch::X86_64,
            rtype: elf::R_X86_64_REX_GOTPCRELX,
            ..
        }
    ));
    let err = parse_and_link(
        &fixture("aarch64/gotpcrel.o"),
        CpuArch::Aarch64,
        "reads_global",
    )
    .unwrap_err();
    assert!(matches!(
        err,
        CpuError::UnknownRelocation {
            arch: CpuArch::Aarch64,
            rtype: elf::R_AARCH64_ADR_GOT_PAGE,
            ..
        }
    ));
}

#[test]
fn entry_must_be_a_defined_function() {
    let e4 = fixture("x86_64/e4.o");
    assert_eq!(
        parse_and_link(&e4, CpuArch::X86_64, "E_5"),
        Err(CpuError::EntryNotFound("E_5".into()))
    );
    // `.LCPI0_0` is a defined symbol, but in `.rodata.cst4`, not in executable code.
    assert!(matches!(
        parse_and_link(&fixture("x86_64/tables.o"), CpuArch::X86_64, ".LCPI0_0"),
        Err(CpuError::EntryNotFound(_))
    ));
}

/// `data` with `SHF_WRITE` added to the flags of section `name`.
fn make_writable(mut data: Vec<u8>, name: &[u8]) -> Vec<u8> {
    let header = FileHeader64::<LittleEndian>::parse(&data[..]).unwrap();
    let sections = header.sections(LittleEndian, &data[..]).unwrap();
    let (index, _) = sections.section_by_name(LittleEndian, name).unwrap();
    // Elf64_Shdr is 64 bytes: sh_name u32, sh_type u32, sh_flags u64, ...
    let at = header.e_shoff(LittleEndian) as usize + index.0 * 64 + 8;
    let flags =
        u64::from_le_bytes(data[at..at + 8].try_into().unwrap()) | u64::from(elf::SHF_WRITE);
    data[at..at + 8].copy_from_slice(&flags.to_le_bytes());
    data
}

#[test]
fn entry_in_a_writable_section_is_refused() {
    // A writable code section is laid out in the read-write part of the image (W^X: never
    // executable); calling an entry there would crash with SIGSEGV.
    for (dir, arch) in [("x86_64", CpuArch::X86_64), ("aarch64", CpuArch::Aarch64)] {
        let rwx = make_writable(fixture(&format!("{dir}/e4.o")), b".text");
        let object = KernelObject::parse(&rwx, Some(arch), "E_4");
        assert_eq!(
            object.err(),
            Some(CpuError::EntryNotExecutable("E_4".into())),
            "{dir}"
        );
    }
    // Through the device: refused at load, before anything is mapped or called.
    let host = std::env::consts::ARCH;
    let rwx = make_writable(fixture(&format!("{host}/e4.o")), b".text");
    let mut dev = CpuDevice::new(1).unwrap();
    let err = load(&mut dev, &rwx, "E_4", &[F32_BUF; 3], 1).unwrap_err();
    assert_eq!(
        err.to_string(),
        "entry symbol `E_4` lies in a writable section of the kernel object, which is never mapped executable"
    );
    // The unmodified object loads.
    load(
        &mut dev,
        &fixture(&format!("{host}/e4.o")),
        "E_4",
        &[F32_BUF; 3],
        1,
    )
    .unwrap();
}

#[test]
fn relocation_edits_give_typed_errors() {
    let base = fixture("x86_64/tables.o");
    let rela = first_rela(&base);
    // Elf64_Rela = { r_offset: u64, r_info: u64 (sym << 32 | type), r_addend: i64 }.
    let mut unknown = base.clone();
    unknown[rela + 8..rela + 12].copy_from_slice(&200u32.to_le_bytes());
    assert!(matches!(
        parse_and_link(&unknown, CpuArch::X86_64, "tables"),
        Err(CpuError::UnknownRelocation { rtype: 200, .. })
    ));
    let mut far = base.clone();
    far[rela + 16..rela + 24].copy_from_slice(&(1i64 << 40).to_le_bytes());
    assert!(matches!(
        parse_and_link(&far, CpuArch::X86_64, "tables"),
        Err(CpuError::RelocationOutOfRange { rtype: 2, .. })
    ));
    let mut outside = base.clone();
    outside[rela..rela + 8].copy_from_slice(&0xffff_fff0u64.to_le_bytes());
    assert!(matches!(
        parse_and_link(&outside, CpuArch::X86_64, "tables"),
        Err(CpuError::RelocationOutsideSection { .. })
    ));
    let mut bad_sym = base.clone();
    bad_sym[rela + 12..rela + 16].copy_from_slice(&9999u32.to_le_bytes());
    assert!(matches!(
        parse_and_link(&bad_sym, CpuArch::X86_64, "tables"),
        Err(CpuError::Malformed(_))
    ));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Random byte edits of valid objects (both arches) never panic the parser or linker.
    #[test]
    fn mutated_objects_never_panic(
        which in 0usize..4,
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
    ) {
        let (name, arch, entry) = [
            ("x86_64/e4.o", CpuArch::X86_64, "E_4"),
            ("x86_64/tables.o", CpuArch::X86_64, "tables"),
            ("x86_64/bss.o", CpuArch::X86_64, "count_calls"),
            ("aarch64/a64relocs.o", CpuArch::Aarch64, "a64relocs"),
        ][which];
        let mut data = fixture(name);
        for (index, byte) in edits {
            let i = index.index(data.len());
            data[i] = byte;
        }
        let _ = parse_and_link(&data, arch, entry);
    }
}
