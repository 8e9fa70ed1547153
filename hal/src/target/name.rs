//! The compile-target names (`cpu-x86_64`, `adreno-a630`, …): the one place they are spelt, parsed and
//! printed, and how each maps to the bundle's [`Target`] it compiles to.
use core::fmt;
use core::str::FromStr;

use super::{CpuArch, Target};

/// A target `cargo xtask compile --target` (and the exporter) accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TargetName {
    CpuX86_64,
    CpuAarch64,
    AdrenoA630,
    AmdGfx1100,
    AmdGfx1201,
    HexagonV65,
}

impl TargetName {
    /// Every target, in the order the CLI documents them.
    pub const ALL: [TargetName; 6] = [
        TargetName::CpuX86_64,
        TargetName::CpuAarch64,
        TargetName::AdrenoA630,
        TargetName::AmdGfx1100,
        TargetName::AmdGfx1201,
        TargetName::HexagonV65,
    ];

    /// The name on the command line and in the exporter's argv.
    pub const fn as_str(self) -> &'static str {
        match self {
            TargetName::CpuX86_64 => "cpu-x86_64",
            TargetName::CpuAarch64 => "cpu-aarch64",
            TargetName::AdrenoA630 => "adreno-a630",
            TargetName::AmdGfx1100 => "amd-gfx1100",
            TargetName::AmdGfx1201 => "amd-gfx1201",
            TargetName::HexagonV65 => "hexagon-v65",
        }
    }

    /// The device family, as [`Target::family`] names it (`cpu`, `adreno`, `amd`, `hexagon`).
    pub const fn family(self) -> &'static str {
        match self {
            TargetName::CpuX86_64 | TargetName::CpuAarch64 => "cpu",
            TargetName::AdrenoA630 => "adreno",
            TargetName::AmdGfx1100 | TargetName::AmdGfx1201 => "amd",
            TargetName::HexagonV65 => "hexagon",
        }
    }

    /// The CPU target for the architecture this binary was built for (aarch64, else x86_64).
    pub const fn host_cpu() -> TargetName {
        if cfg!(target_arch = "aarch64") {
            TargetName::CpuAarch64
        } else {
            TargetName::CpuX86_64
        }
    }

    /// The CPU architecture of a `cpu-*` target.
    pub const fn cpu_arch(self) -> Option<CpuArch> {
        match self {
            TargetName::CpuX86_64 => Some(CpuArch::X86_64),
            TargetName::CpuAarch64 => Some(CpuArch::Aarch64),
            _ => None,
        }
    }

    /// The name of the target a bundle was compiled for (`None` for a chip, GPU or DSP version no name
    /// stands for). Only the fields a name fixes are read: a CPU's baseline and features, an Adreno's
    /// image/half flags are options of the same target.
    pub fn of(target: &Target<'_>) -> Option<TargetName> {
        Some(match *target {
            Target::Cpu { arch, .. } => match arch {
                CpuArch::X86_64 => TargetName::CpuX86_64,
                CpuArch::Aarch64 => TargetName::CpuAarch64,
            },
            Target::Adreno { chip: 630, .. } => TargetName::AdrenoA630,
            Target::Amd { gfx: 0x1100 } => TargetName::AmdGfx1100,
            Target::Amd { gfx: 0x1201 } => TargetName::AmdGfx1201,
            Target::Hexagon { version: 65 } => TargetName::HexagonV65,
            _ => return None,
        })
    }

    /// A [`Target`] of this name with the options a name does not fix at their defaults (no CPU baseline or
    /// features, no Adreno images or halves): `TargetName::of(&t.representative()) == Some(t)`.
    pub const fn representative(self) -> Target<'static> {
        match self {
            TargetName::CpuX86_64 | TargetName::CpuAarch64 => Target::Cpu {
                arch: match self.cpu_arch() {
                    Some(a) => a,
                    None => CpuArch::X86_64,
                },
                baseline: "",
                features: 0,
            },
            TargetName::AdrenoA630 => Target::Adreno {
                chip: 630,
                image: false,
                half: false,
            },
            TargetName::AmdGfx1100 => Target::Amd { gfx: 0x1100 },
            TargetName::AmdGfx1201 => Target::Amd { gfx: 0x1201 },
            TargetName::HexagonV65 => Target::Hexagon { version: 65 },
        }
    }
}

impl fmt::Display for TargetName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A string that names no [`TargetName`]; its message lists the valid names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnknownTarget;

impl fmt::Display for UnknownTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("unknown target (valid: ")?;
        for (i, t) in TargetName::ALL.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            f.write_str(t.as_str())?;
        }
        f.write_str(")")
    }
}

impl core::error::Error for UnknownTarget {}

impl FromStr for TargetName {
    type Err = UnknownTarget;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        TargetName::ALL
            .into_iter()
            .find(|t| t.as_str() == s)
            .ok_or(UnknownTarget)
    }
}
