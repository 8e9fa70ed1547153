//! The host's peak fp32 FMA throughput per core by register width, measured once per bench run: clang-19 builds
//! `xtask/bench/fma_peak.c` (independent FMA chains per width, best of three timings) into the bench's output
//! directory and runs it on an otherwise idle moment of the run (before the timed rounds). The per-kernel tables
//! ([`super::kernels`]) divide each kernel's achieved GFLOP/s by this figure for the widest width the kernel uses.
//! Measured rather than documented because the machines the bench runs on differ (the AVX-512 FMA port count
//! and clock differ between x86 cores); where the measurement cannot run (no clang-19, not x86-64) the tables
//! give no percentage and say why.
use std::path::Path;
use std::process::Command;

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

/// Widths in the order the per-kernel tables look for the widest one a kernel uses.
pub const WIDTHS: [&str; 4] = ["zmm", "ymm", "xmm", "scalar"];

/// Per-core peak by width (GFLOP/s; `None` where the host lacks the width or it was not measured) and where the
/// figures come from, as the report states it.
#[derive(Clone, Debug)]
pub struct Peaks {
    pub per_core: [Option<f64>; 4],
    pub source: String,
}

impl Peaks {
    /// The figure for `width` (one of [`WIDTHS`]).
    pub fn get(&self, width: &str) -> Option<f64> {
        WIDTHS
            .iter()
            .position(|w| *w == width)
            .and_then(|i| self.per_core[i])
    }

    pub fn to_json(&self) -> Value {
        let mut m = serde_json::Map::new();
        for (w, v) in WIDTHS.iter().zip(self.per_core) {
            m.insert(w.to_string(), json!(v));
        }
        json!({"per_core_gflops": m, "source": self.source})
    }
}

/// Parse the measurement program's output: one `WIDTH GFLOPS` line per width it ran.
pub fn parse(out: &str) -> Result<[Option<f64>; 4]> {
    let mut per_core = [None; 4];
    for line in out.lines().filter(|l| !l.trim().is_empty()) {
        let mut it = line.split_whitespace();
        let (Some(w), Some(v), None) = (it.next(), it.next(), it.next()) else {
            bail!("unexpected line from the FMA peak program: {line:?}");
        };
        let i = WIDTHS
            .iter()
            .position(|x| *x == w)
            .with_context(|| format!("unknown width {w:?} from the FMA peak program"))?;
        let v: f64 = v
            .parse()
            .with_context(|| format!("bad figure in {line:?}"))?;
        if !(v.is_finite() && v > 0.0) {
            bail!("implausible peak {v} for {w}");
        }
        per_core[i] = Some(v);
    }
    if per_core[1].is_none() {
        bail!("the FMA peak program printed no ymm figure");
    }
    Ok(per_core)
}

/// Build and run the measurement in `dir`; a host where that is impossible gets no figures and the reason.
pub fn measure(root: &Path, dir: &Path) -> Peaks {
    match try_measure(root, dir) {
        Ok(per_core) => Peaks {
            per_core,
            source: "per-core FMA peak measured on this host at the start of the run \
                     (`xtask/bench/fma_peak.c`: 12 independent FMA chains per width, clang-19 -O2, best of 3)"
                .to_string(),
        },
        Err(e) => {
            eprintln!("[bench] the FMA peak was not measured ({e:#}); per-kernel tables give no % of peak");
            Peaks {
                per_core: [None; 4],
                source: format!("not measured on this host ({e:#})"),
            }
        }
    }
}

fn try_measure(root: &Path, dir: &Path) -> Result<[Option<f64>; 4]> {
    if std::env::consts::ARCH != "x86_64" {
        bail!("the FMA peak program is x86-64 only");
    }
    let src = root.join("xtask/bench/fma_peak.c");
    let exe = dir.join("fma_peak");
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let out = Command::new("clang-19")
        .args(["-O2", "-mavx2", "-mfma", "-o"])
        .arg(&exe)
        .arg(&src)
        .output()
        .context("cannot run clang-19 (apt-get install clang-19)")?;
    if !out.status.success() {
        bail!(
            "clang-19 failed on {}: {}",
            src.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let run = Command::new(&exe)
        .output()
        .with_context(|| format!("cannot run {}", exe.display()))?;
    if !run.status.success() {
        bail!("{} failed ({})", exe.display(), run.status);
    }
    parse(&String::from_utf8_lossy(&run.stdout))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_lines_become_per_width_figures() {
        let p = parse("zmm 165.4\nymm 70.6\nxmm 44.6\nscalar 7.3\n").unwrap();
        assert_eq!(p, [Some(165.4), Some(70.6), Some(44.6), Some(7.3)]);
        let no512 = parse("ymm 70\nxmm 35\nscalar 9\n").unwrap();
        assert_eq!(no512[0], None);
        assert_eq!(
            Peaks {
                per_core: no512,
                source: String::new()
            }
            .get("xmm"),
            Some(35.0)
        );
    }

    #[test]
    fn malformed_output_is_refused() {
        assert!(parse("zmm\n").is_err());
        assert!(parse("qmm 3\nymm 4\n").is_err());
        assert!(parse("ymm nan\n").is_err());
        assert!(parse("xmm 3\n").is_err());
        assert!(parse("ymm 3 4\n").is_err());
    }
}
