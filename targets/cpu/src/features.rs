//! CPU feature sets: what a `-march`/`-mcpu` baseline implies, what this host has, and the
//! `check_target` test that refuses bundles which would SIGILL here.
use modelrt_hal::target::cpu_features as f;
use modelrt_hal::target::{CpuArch, Target};

use super::error::CpuError;

const X86_V2: u64 = f::SSE4_2;
const X86_V3: u64 =
    X86_V2 | f::AVX | f::AVX2 | f::FMA | f::F16C | f::BMI1 | f::BMI2 | f::MOVBE | f::LZCNT;
const X86_V4: u64 = X86_V3 | f::AVX512F;
const A64_V82_DOT: u64 = f::NEON | f::FP16 | f::DOTPROD;

/// Feature bits ([`modelrt_hal::target::cpu_features`]) implied by a clang `-march` (x86_64) or
/// `-mcpu` (aarch64) baseline name, or `None` for a name this table does not know.
///
/// Only the bits tracked by `cpu_features` are reported; e.g. `x86-64-v2` also implies SSSE3 and
/// POPCNT, which every CPU with SSE4.2 has anyway.
pub fn features_for_baseline(arch: CpuArch, baseline: &str) -> Option<u64> {
    let name = baseline.to_ascii_lowercase();
    match arch {
        CpuArch::X86_64 => match name.as_str() {
            "x86-64" | "generic" => Some(0),
            "x86-64-v2" | "nehalem" | "westmere" => Some(X86_V2),
            "sandybridge" => Some(X86_V2 | f::AVX),
            "ivybridge" => Some(X86_V2 | f::AVX | f::F16C),
            "x86-64-v3" | "haswell" | "broadwell" | "skylake" | "alderlake" | "znver1"
            | "znver2" | "znver3" => Some(X86_V3),
            "x86-64-v4" | "skylake-avx512" | "icelake-server" | "sapphirerapids" | "znver4" => {
                Some(X86_V4)
            }
            _ => None,
        },
        CpuArch::Aarch64 => match name.as_str() {
            // armv8.2-a makes FP16 arithmetic and dot product optional: only NEON is implied
            "generic" | "armv8-a" | "armv8.2-a" | "cortex-a53" | "cortex-a57" | "cortex-a72"
            | "cortex-a73" => Some(f::NEON),
            "cortex-a55" | "cortex-a75" | "cortex-a76" | "cortex-a77" | "cortex-a78"
            | "neoverse-n1" | "apple-m1" | "apple-m2" => Some(A64_V82_DOT),
            _ => None,
        },
    }
}

/// The [`cpu_features`](modelrt_hal::target::cpu_features) bits this host CPU has.
pub fn host_features() -> u64 {
    let mut bits = 0;
    #[cfg(target_arch = "x86_64")]
    {
        let detected = [
            (f::SSE4_2, std::arch::is_x86_feature_detected!("sse4.2")),
            (f::AVX, std::arch::is_x86_feature_detected!("avx")),
            (f::AVX2, std::arch::is_x86_feature_detected!("avx2")),
            (f::FMA, std::arch::is_x86_feature_detected!("fma")),
            (f::F16C, std::arch::is_x86_feature_detected!("f16c")),
            (f::BMI1, std::arch::is_x86_feature_detected!("bmi1")),
            (f::BMI2, std::arch::is_x86_feature_detected!("bmi2")),
            (f::MOVBE, std::arch::is_x86_feature_detected!("movbe")),
            (f::LZCNT, std::arch::is_x86_feature_detected!("lzcnt")),
            (f::AVX512F, std::arch::is_x86_feature_detected!("avx512f")),
        ];
        for (bit, on) in detected {
            if on {
                bits |= bit;
            }
        }
    }
    #[cfg(target_arch = "aarch64")]
    {
        let detected = [
            (f::NEON, std::arch::is_aarch64_feature_detected!("neon")),
            (f::FP16, std::arch::is_aarch64_feature_detected!("fp16")),
            (
                f::DOTPROD,
                std::arch::is_aarch64_feature_detected!("dotprod"),
            ),
        ];
        for (bit, on) in detected {
            if on {
                bits |= bit;
            }
        }
    }
    bits
}

/// Names of the bits in `bits`, comma separated (`avx2, fma`).
pub fn feature_names(bits: u64) -> String {
    let mut out = String::new();
    for (bit, name) in f::NAMES {
        if bits & bit != 0 {
            if !out.is_empty() {
                out.push_str(", ");
            }
            out.push_str(name);
        }
    }
    let unknown = bits & !f::NAMES.iter().fold(0, |acc, (bit, _)| acc | bit);
    if unknown != 0 {
        if !out.is_empty() {
            out.push_str(", ");
        }
        out.push_str(&format!("unknown feature bits {unknown:#x}"));
    }
    out
}

/// Refuse `target` unless it is a CPU bundle for `host_arch` whose features are a subset of
/// `host_bits`. Split from [`check_host_target`] so the decision is testable for any host.
pub fn check_target_against(
    target: &Target<'_>,
    host_arch: Option<CpuArch>,
    host_bits: u64,
) -> Result<(), CpuError> {
    let Target::Cpu {
        arch,
        baseline,
        features,
    } = *target
    else {
        return Err(CpuError::WrongFamily(target.family()));
    };
    if host_arch != Some(arch) {
        return Err(CpuError::WrongArch {
            bundle: arch,
            host: host_arch.map_or(std::env::consts::ARCH, CpuArch::name),
        });
    }
    let missing = features & !host_bits;
    if missing != 0 {
        return Err(CpuError::MissingFeatures {
            missing: feature_names(missing),
            baseline: baseline.to_string(),
        });
    }
    Ok(())
}

/// [`check_target_against`] this host.
pub fn check_host_target(target: &Target<'_>) -> Result<(), CpuError> {
    check_target_against(target, CpuArch::host(), host_features())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn x86_levels_are_nested_and_match_psabi() {
        // x86-64 psABI micro-architecture levels: v3 adds AVX, AVX2, BMI1, BMI2, F16C, FMA,
        // LZCNT, MOVBE to v2; v4 adds AVX512F (and BW/CD/DQ/VL, not tracked).
        let v2 = features_for_baseline(CpuArch::X86_64, "x86-64-v2").unwrap();
        let v3 = features_for_baseline(CpuArch::X86_64, "x86-64-v3").unwrap();
        let v4 = features_for_baseline(CpuArch::X86_64, "x86-64-v4").unwrap();
        assert_eq!(features_for_baseline(CpuArch::X86_64, "x86-64"), Some(0));
        assert_eq!(v2, f::SSE4_2);
        assert_eq!(
            v3,
            f::SSE4_2
                | f::AVX
                | f::AVX2
                | f::BMI1
                | f::BMI2
                | f::F16C
                | f::FMA
                | f::LZCNT
                | f::MOVBE
        );
        assert_eq!(v4, v3 | f::AVX512F);
        assert_eq!(features_for_baseline(CpuArch::X86_64, "haswell"), Some(v3));
    }

    #[test]
    fn aarch64_baselines() {
        assert_eq!(
            features_for_baseline(CpuArch::Aarch64, "cortex-a76"),
            Some(f::NEON | f::FP16 | f::DOTPROD)
        );
        assert_eq!(
            features_for_baseline(CpuArch::Aarch64, "generic"),
            Some(f::NEON)
        );
        assert_eq!(
            features_for_baseline(CpuArch::Aarch64, "armv8.2-a"),
            Some(f::NEON)
        );
        assert_eq!(features_for_baseline(CpuArch::Aarch64, "x86-64-v3"), None);
        assert_eq!(features_for_baseline(CpuArch::X86_64, "cortex-a76"), None);
    }

    #[test]
    fn missing_features_are_named_with_baseline() {
        let target = Target::Cpu {
            arch: CpuArch::X86_64,
            baseline: "x86-64-v4",
            features: f::AVX2 | f::AVX512F,
        };
        let err =
            check_target_against(&target, Some(CpuArch::X86_64), f::AVX2 | f::FMA).unwrap_err();
        assert_eq!(
            err,
            CpuError::MissingFeatures {
                missing: "avx512f".into(),
                baseline: "x86-64-v4".into()
            }
        );
        let msg = err.to_string();
        assert!(
            msg.contains("avx512f") && msg.contains("x86-64-v4"),
            "{msg}"
        );
        assert!(check_target_against(&target, Some(CpuArch::X86_64), f::AVX2 | f::AVX512F).is_ok());
    }

    #[test]
    fn wrong_arch_and_family_are_refused() {
        let target = Target::Cpu {
            arch: CpuArch::Aarch64,
            baseline: "cortex-a76",
            features: f::NEON,
        };
        assert!(matches!(
            check_target_against(&target, Some(CpuArch::X86_64), u64::MAX),
            Err(CpuError::WrongArch {
                bundle: CpuArch::Aarch64,
                host: "x86_64"
            })
        ));
        let amd = Target::Amd { gfx: 0x1100 };
        assert_eq!(
            check_target_against(&amd, Some(CpuArch::X86_64), 0),
            Err(CpuError::WrongFamily("amd"))
        );
    }

    #[test]
    fn unknown_bits_are_reported() {
        assert_eq!(
            feature_names(f::AVX | (1 << 20)),
            "avx, unknown feature bits 0x100000"
        );
    }
}
