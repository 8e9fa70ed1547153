//! `modelrt_targets::inspect::AMDGPU_MACH` against LLVM itself: for every listed gfx target, `llc-19`
//! compiles a trivial kernel and `llvm-readelf-19 -h` names the object's `e_flags`. Our table must map
//! that machine value to the same gfx name, and the target to the same value. The tools come from the
//! `llvm-19` Debian package (`cargo xtask setup` installs it); without them the test is a recorded
//! skip, which is a failure under CI.
use std::path::Path;
use std::process::Command;

use modelrt_targets::inspect::{amdgpu_gfx_of, amdgpu_mach_of, AMDGPU_MACH, EF_AMDGPU_MACH_MASK};
use modelrt_tests::skip::skip;

const KERNEL: &str = "define amdgpu_kernel void @k() {\n  ret void\n}\n";

fn tool_runs(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// `(value, name)` of the `Flags:` line of `llvm-readelf -h`, e.g. `Flags: 0x46, gfx1101`.
fn readelf_flags(obj: &Path) -> (u32, String) {
    let out = Command::new("llvm-readelf-19")
        .arg("-h")
        .arg(obj)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "llvm-readelf-19 -h {} failed",
        obj.display()
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let line = text
        .lines()
        .map(str::trim)
        .find_map(|l| l.strip_prefix("Flags:"))
        .unwrap_or_else(|| panic!("no Flags line in:\n{text}"));
    let mut parts = line.split(',').map(str::trim);
    let value = parts.next().unwrap().trim_start_matches("0x");
    let value = u32::from_str_radix(value, 16).unwrap();
    let name = parts.next().unwrap_or_default().to_string();
    (value, name)
}

/// `e_flags` read straight from the ELF64 header bytes (offset 48, little-endian).
fn header_e_flags(obj: &Path) -> u32 {
    let bytes = std::fs::read(obj).unwrap();
    u32::from_le_bytes(bytes[48..52].try_into().unwrap())
}

#[test]
fn table_agrees_with_llvm_readelf() {
    if !(tool_runs("llc-19") && tool_runs("llvm-readelf-19")) {
        skip("llc-19 / llvm-readelf-19 not installed (Debian package llvm-19)");
        return;
    }
    let dir = std::env::temp_dir().join(format!("modelrt-amdgpu-mach-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ll = dir.join("k.ll");
    std::fs::write(&ll, KERNEL).unwrap();
    for row in AMDGPU_MACH {
        let cpu = format!("gfx{:x}", row.gfx);
        let obj = dir.join(format!("k-{cpu}.o"));
        let st = Command::new("llc-19")
            .args([
                "-mtriple=amdgcn-amd-amdhsa",
                &format!("-mcpu={cpu}"),
                "-filetype=obj",
            ])
            .arg(&ll)
            .arg("-o")
            .arg(&obj)
            .status()
            .unwrap();
        assert!(st.success(), "llc-19 cannot compile for {cpu}");
        let (flags, llvm_name) = readelf_flags(&obj);
        assert_eq!(
            flags,
            header_e_flags(&obj),
            "{cpu}: readelf and the header disagree"
        );
        assert_eq!(
            llvm_name, cpu,
            "llvm-readelf names the {cpu} object differently"
        );
        assert_eq!(
            amdgpu_mach_of(row.gfx),
            Some(flags & EF_AMDGPU_MACH_MASK),
            "{cpu}: our machine value differs from LLVM's"
        );
        let ours = amdgpu_gfx_of(flags).map(|g| format!("gfx{g:x}"));
        assert_eq!(
            ours.as_deref(),
            Some(llvm_name.as_str()),
            "e_flags {flags:#x}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn machine_values_are_unique() {
    for (i, a) in AMDGPU_MACH.iter().enumerate() {
        for b in &AMDGPU_MACH[i + 1..] {
            assert_ne!(a.gfx, b.gfx);
            assert_ne!(a.mach, b.mach, "gfx{:x} and gfx{:x}", a.gfx, b.gfx);
        }
    }
}
