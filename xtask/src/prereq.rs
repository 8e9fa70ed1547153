//! Prerequisites of one compile, checked before the exporter starts so a missing tool is one `error:` line with the
//! command that installs it, never a Python traceback from deep inside tinygrad.
//!
//! What each target needs (tinygrad 0.14.0; docs/hw/tinygrad-export.md §6.1, §8):
//! - every CPU target: a C compiler, `$CC` or `clang` (tinygrad's CLANG renderer runs it for every kernel; Debian's
//!   clang cross-compiles to aarch64 too);
//! - AMD targets: libLLVM 18 or newer as a shared library (tinygrad's AMDLLVM compiler loads it with ctypes;
//!   Debian 12's default LLVM 14/15 cannot parse its IR);
//! - Adreno: nothing outside the venv (Mesa's IR3 compiler comes with the pinned `tinymesa` wheel);
//! - Hexagon: `clang-19`, `ld.lld-19` and `llvm-objcopy-19` (kernels, helper library; one object per kernel serves its
//!   own library and the model library) and `qemu-hexagon-static` ≥ 8 (tinygrad's mock runs
//!   every kernel under it during capture; qemu 7.2 mis-executes LLVM-19 Hexagon code, docs/hw/hexagon-dsp.md §6).
use std::path::Path;
use std::process::Command;

use modelrt_hal::target::TargetName;

/// One missing prerequisite: what, why, and the command that installs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Missing {
    pub what: String,
    pub why: String,
    pub install: String,
}

impl std::fmt::Display for Missing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} is missing ({}); install it with: {}",
            self.what, self.why, self.install
        )
    }
}

/// What the machine offers, so the decision is testable without changing the machine.
pub trait Probe {
    /// Is `program` (a name or a path) runnable?
    fn has_program(&self, program: &str) -> bool;
    /// Shared-library names the dynamic loader knows (`libLLVM.so.19.1`, ...).
    fn shared_libraries(&self) -> Vec<String>;
    /// `$CC`, if set.
    fn cc(&self) -> Option<String>;
    /// Major version of `qemu-hexagon-static`, if it runs.
    fn qemu_hexagon_major(&self) -> Option<u32>;
}

/// The real machine: `$PATH` lookup and `ldconfig -p`.
pub struct System;

impl Probe for System {
    fn has_program(&self, program: &str) -> bool {
        let p = Path::new(program);
        if p.components().count() > 1 {
            return p.is_file();
        }
        std::env::var_os("PATH")
            .map(|paths| std::env::split_paths(&paths).any(|d| d.join(program).is_file()))
            .unwrap_or(false)
    }

    fn shared_libraries(&self) -> Vec<String> {
        let out = Command::new("ldconfig")
            .arg("-p")
            .output()
            .or_else(|_| Command::new("/sbin/ldconfig").arg("-p").output());
        out.map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .filter_map(|l| l.split_whitespace().next().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
    }

    fn cc(&self) -> Option<String> {
        std::env::var("CC").ok().filter(|s| !s.is_empty())
    }

    fn qemu_hexagon_major(&self) -> Option<u32> {
        crate::backports::installed_qemu_major(crate::backports::QEMU)
    }
}

/// The LLVM major version of a shared-library name (`libLLVM.so.19.1`, `libLLVM-19.so.1`, `libLLVM-19.so`).
pub fn llvm_major(lib: &str) -> Option<u32> {
    let rest = lib
        .strip_prefix("libLLVM-")
        .or_else(|| lib.strip_prefix("libLLVM.so."))?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// Everything a compile for `target` needs that `probe` does not have.
pub fn missing_for(target: TargetName, probe: &dyn Probe) -> Vec<Missing> {
    let mut out = Vec::new();
    let family = target.family();
    if family == "cpu" {
        let cc = probe.cc().unwrap_or_else(|| "clang".into());
        if !probe.has_program(&cc) {
            out.push(Missing {
                what: format!("the C compiler `{cc}`"),
                why: "tinygrad compiles every CPU kernel with it".into(),
                install: "apt-get install -y clang (or `cargo xtask setup`)".into(),
            });
        }
    }
    if family == "amd"
        && !probe
            .shared_libraries()
            .iter()
            .any(|l| llvm_major(l).is_some_and(|v| v >= 18))
    {
        out.push(Missing {
            what: "libLLVM 18 or newer".into(),
            why: "tinygrad's AMD compiler loads it; older LLVM cannot parse its IR".into(),
            install: "apt-get install -y libllvm19 (or `cargo xtask setup`)".into(),
        });
    }
    if family == "hexagon" {
        out.extend(missing_for_hexagon(probe));
    }
    out
}

/// The Hexagon DSP target's tools: clang-19, ld.lld-19, llvm-objcopy-19 and qemu-hexagon-static >= 8.
fn missing_for_hexagon(probe: &dyn Probe) -> Vec<Missing> {
    let mut out = Vec::new();
    for (tool, why, pkg) in [
        ("clang-19", "compiles every DSP kernel", "clang-19"),
        ("ld.lld-19", "links DSP kernel libraries", "lld-19"),
        (
            "llvm-objcopy-19",
            "renames a DSP kernel object's symbols for its own and the model library",
            "llvm-19",
        ),
    ] {
        if !probe.has_program(tool) {
            out.push(Missing {
                what: format!("`{tool}`"),
                why: why.into(),
                install: format!("apt-get install -y {pkg} (or `cargo xtask setup`)"),
            });
        }
    }
    let min = crate::backports::MIN_QEMU_MAJOR;
    match probe.qemu_hexagon_major() {
        Some(v) if v >= min => {}
        v => out.push(Missing {
            what: match v {
                Some(v) => format!("qemu-hexagon-static >= {min} (found {v})"),
                None => format!("qemu-hexagon-static >= {min}"),
            },
            why: "tinygrad runs every DSP kernel under it during capture; qemu 7.2 mis-executes LLVM-19 code"
                .into(),
            install: "`cargo xtask setup` as root (qemu-user from bookworm-backports)".into(),
        }),
    }
    out
}

/// Fail with one line naming every missing prerequisite of `target` on this machine.
pub fn check(target: TargetName) -> anyhow::Result<()> {
    let missing = missing_for(target, &System);
    if missing.is_empty() {
        return Ok(());
    }
    let all: Vec<String> = missing.iter().map(ToString::to_string).collect();
    anyhow::bail!("cannot compile for {target}: {}", all.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fake {
        programs: Vec<&'static str>,
        libs: Vec<&'static str>,
        cc: Option<&'static str>,
        qemu: Option<u32>,
    }

    impl Probe for Fake {
        fn has_program(&self, p: &str) -> bool {
            self.programs.contains(&p)
        }
        fn shared_libraries(&self) -> Vec<String> {
            self.libs.iter().map(|s| s.to_string()).collect()
        }
        fn cc(&self) -> Option<String> {
            self.cc.map(str::to_string)
        }
        fn qemu_hexagon_major(&self) -> Option<u32> {
            self.qemu
        }
    }

    #[test]
    fn llvm_versions_from_debian_library_names() {
        assert_eq!(llvm_major("libLLVM.so.19.1"), Some(19));
        assert_eq!(llvm_major("libLLVM-15.so.1"), Some(15));
        assert_eq!(llvm_major("libLLVM-14.so"), Some(14));
        assert_eq!(llvm_major("libLLVMSupport.so"), None);
        assert_eq!(llvm_major("libc.so.6"), None);
    }

    #[test]
    fn cpu_targets_need_a_c_compiler() {
        let none = Fake {
            programs: vec![],
            libs: vec![],
            cc: None,
            qemu: None,
        };
        let m = missing_for(TargetName::CpuX86_64, &none);
        assert_eq!(m.len(), 1);
        assert!(m[0].to_string().contains("`clang`"), "{}", m[0]);
        assert!(m[0].install.contains("apt-get install -y clang"));
        let with_cc = Fake {
            programs: vec!["gcc-12"],
            libs: vec![],
            cc: Some("gcc-12"),
            qemu: None,
        };
        assert!(missing_for(TargetName::CpuAarch64, &with_cc).is_empty());
        assert!(missing_for(TargetName::AdrenoA630, &none).is_empty());
    }

    #[test]
    fn hexagon_needs_clang19_lld19_objcopy19_and_qemu_8() {
        let tools = |qemu| Fake {
            programs: vec!["clang-19", "ld.lld-19", "llvm-objcopy-19"],
            libs: vec![],
            cc: None,
            qemu,
        };
        assert!(missing_for(TargetName::HexagonV65, &tools(Some(10))).is_empty());
        let m = missing_for(TargetName::HexagonV65, &tools(Some(7)));
        assert_eq!(m.len(), 1);
        assert!(m[0].what.contains("found 7"), "{}", m[0]);
        assert!(m[0].install.contains("cargo xtask setup"), "{}", m[0]);
        let bare = Fake {
            programs: vec![],
            libs: vec![],
            cc: None,
            qemu: None,
        };
        let all: Vec<String> = missing_for(TargetName::HexagonV65, &bare)
            .iter()
            .map(|m| m.what.clone())
            .collect();
        assert_eq!(all.len(), 4, "{all:?}");
        assert!(
            all[0].contains("clang-19")
                && all[1].contains("ld.lld-19")
                && all[2].contains("llvm-objcopy-19"),
            "{all:?}"
        );
        assert!(missing_for(TargetName::CpuX86_64, &tools(Some(7))).len() == 1);
    }

    #[test]
    fn amd_needs_llvm_18_or_newer() {
        let old = Fake {
            programs: vec!["clang"],
            libs: vec!["libLLVM-15.so.1", "libLLVM-14.so"],
            cc: None,
            qemu: None,
        };
        let m = missing_for(TargetName::AmdGfx1100, &old);
        assert_eq!(m.len(), 1);
        assert!(m[0].install.contains("libllvm19"));
        let new = Fake {
            libs: vec!["libLLVM-15.so.1", "libLLVM.so.19.1"],
            ..old
        };
        assert!(missing_for(TargetName::AmdGfx1201, &new).is_empty());
    }
}
