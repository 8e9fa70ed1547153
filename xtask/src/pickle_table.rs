//! The real openpilot 0.11 pickles (`qcom/testdata/openpilot-0.11/`, issue 35) through `cargo xtask convert` and, when
//! converted, on `--device qcom-emu` against numpy models of openpilot's warps (`qcom/tests/qcom_cl/pickle_e2e.py`,
//! the reference v0.10.4's warp pickles are checked against): one [`Row`] per pickle — converts and computes (every
//! output byte equal), or refused with the exporter's one `error:` line. `cargo xtask pickle-table` runs all of them
//! and writes the table into docs/openpilot-pickles.md; tests/tests/adreno/openpilot_pickles.rs runs a subset.
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use modelrt_core::bundle::{Bundle, Step};

use crate::manifest::Manifest;

/// The pickles, their tinygrad (from the data README's provenance) and which numpy warp model their I/O is.
pub const PICKLES: &[(&str, &str, Warp)] = &[
    ("tg0.12-329_warp_1928x1208_tinygrad", "v0.12.0-329", Warp::Road),
    ("tg0.12-329_dm_warp_1928x1208_tinygrad", "v0.12.0-329", Warp::Driver),
    ("tg0.12-455_warp_1928x1208_tinygrad", "v0.12.0-455", Warp::Road),
    ("tg0.12-455_dm_warp_1928x1208_tinygrad", "v0.12.0-455", Warp::Driver),
    ("tg0.12-455_sunnypilot_warp_1928x1208_b2_tinygrad", "v0.12.0-455", Warp::Road),
    ("tg0.12-1606_dm_warp_1928x1208_tinygrad", "v0.12.0-1606", Warp::Driver),
    ("tg0.13.0-288_cpu_dm_warp_1928x1208_tinygrad", "v0.13.0-288", Warp::Driver),
];

/// Which numpy model of pickle_e2e.py gives a pickle's inputs and expected outputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Warp {
    Road,
    Driver,
}

/// What happened to one pickle.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Converted; on qcom-emu every output equals the numpy model's: (outputs, bytes compared, launches, launches
    /// with partial work groups, seconds on qcom-emu).
    Computes {
        outputs: usize,
        bytes: usize,
        launches: usize,
        partial: usize,
        seconds: u64,
    },
    /// The exporter's `error:` line (without the prefix).
    Refused(String),
}

/// One table row.
#[derive(Clone, Debug)]
pub struct Row {
    pub pickle: String,
    pub tinygrad: String,
    /// The layout line the exporter logged (`exec-items layout (…)`).
    pub layout: String,
    pub outcome: Outcome,
}

fn data_dir(root: &Path) -> PathBuf {
    root.join("qcom/testdata/openpilot-0.11")
}

/// Convert and, if converted, run pickle `stem` under `work`.
pub fn run_one(py: &Path, root: &Path, stem: &str, work: &Path) -> Result<Row> {
    let &(_, tinygrad, warp) = PICKLES
        .iter()
        .find(|p| p.0 == stem)
        .with_context(|| format!("{stem} is not one of the openpilot 0.11 pickles"))?;
    let dir = work.join(stem);
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    std::fs::create_dir_all(&dir)?;
    let pkl = dir.join(format!("{stem}.pkl"));
    let gz = data_dir(root).join(format!("{stem}.pkl.gz"));
    let st = Command::new("gzip")
        .arg("-dc")
        .arg(&gz)
        .stdout(std::fs::File::create(&pkl)?)
        .status()
        .context("gzip")?;
    if !st.success() {
        bail!("gzip -dc {} failed", gz.display());
    }
    let out = dir.join("manifest");
    let r = Command::new(py)
        .arg(root.join("xtask/exporter/export.py"))
        .arg("--pickle")
        .arg(&pkl)
        .arg("--out")
        .arg(&out)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .context("running the exporter")?;
    let stderr = String::from_utf8_lossy(&r.stderr);
    let layout = stderr
        .lines()
        .find_map(|l| l.strip_prefix("exporter: layout: "))
        .unwrap_or("(none logged)")
        .to_string();
    let errors: Vec<&str> = stderr
        .lines()
        .filter_map(|l| l.strip_prefix("error: "))
        .collect();
    let row = |outcome| Row {
        pickle: stem.to_string(),
        tinygrad: tinygrad.to_string(),
        layout: layout.clone(),
        outcome,
    };
    if !r.status.success() {
        if errors.len() != 1 || stderr.contains("Traceback") {
            bail!("{stem}: the exporter failed without exactly one error line:\n{stderr}");
        }
        return Ok(row(Outcome::Refused(errors[0].to_string())));
    }
    let manifest = Manifest::load(&out)?;
    let bytes = crate::bundle_build::build(&manifest)?;
    let e2e = dir.join("e2e");
    let kind = match warp {
        Warp::Road => "road",
        Warp::Driver => "driver",
    };
    let st = Command::new(py)
        .arg(root.join("qcom/tests/qcom_cl/pickle_e2e.py"))
        .arg(kind)
        .arg(&e2e)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .status()
        .context("pickle_e2e.py")?;
    if !st.success() {
        bail!("pickle_e2e.py {kind} failed");
    }
    let (n_out, n_bytes, launches, partial, seconds) = run_on_emu(&bytes, &e2e)?;
    Ok(row(Outcome::Computes {
        outputs: n_out,
        bytes: n_bytes,
        launches,
        partial,
        seconds,
    }))
}

/// Run bundle `bytes` on qcom-emu on `e2e/input<i>.bin`; every output must equal `e2e/expected<j>.bin`.
fn run_on_emu(bytes: &[u8], e2e: &Path) -> Result<(usize, usize, usize, usize, u64)> {
    let b = Bundle::parse(bytes)?;
    let body = b.body();
    let (mut launches, mut partial) = (0, 0);
    for s in body.run.iter() {
        match s? {
            Step::Launch { .. } => launches += 1,
            Step::LaunchThreads { .. } => {
                launches += 1;
                partial += 1
            }
            Step::Copy { .. } => {}
        }
    }
    let ins: Vec<Vec<u8>> = (0..body.inputs.len())
        .map(|i| std::fs::read(e2e.join(format!("input{i}.bin"))))
        .collect::<std::io::Result<_>>()?;
    let mut outs: Vec<Vec<u8>> = Vec::new();
    for t in body.outputs.iter() {
        outs.push(vec![0u8; t?.byte_len() as usize]);
    }
    let mut m = modelrt_targets::runner::load(
        b,
        modelrt_targets::runner::LoadOptions::on(modelrt_targets::runner::device("qcom-emu")?),
    )?;
    let ins: Vec<&[u8]> = ins.iter().map(Vec::as_slice).collect();
    let mut refs: Vec<&mut [u8]> = outs.iter_mut().map(Vec::as_mut_slice).collect();
    let t = Instant::now();
    m.run(&ins, &mut refs)?;
    let seconds = t.elapsed().as_secs();
    let mut total = 0;
    for (j, got) in outs.iter().enumerate() {
        let want = std::fs::read(e2e.join(format!("expected{j}.bin")))?;
        if got.len() != want.len() {
            bail!(
                "output {j}: {} bytes, the numpy model gives {}",
                got.len(),
                want.len()
            );
        }
        let bad = got.iter().zip(&want).filter(|(a, b)| a != b).count();
        if bad != 0 {
            bail!(
                "output {j}: {bad} of {} bytes differ from the numpy warp model",
                want.len()
            );
        }
        total += want.len();
    }
    Ok((outs.len(), total, launches, partial, seconds))
}

/// The markdown table of `rows`.
pub fn table(rows: &[Row]) -> String {
    let mut s = String::from("| pickle | tinygrad | layout | result |\n|---|---|---|---|\n");
    for r in rows {
        let result = match &r.outcome {
            Outcome::Computes {
                outputs,
                bytes,
                launches,
                partial,
                seconds,
            } => format!(
                "converts and computes: {outputs} outputs ({bytes} bytes) equal to the numpy warp model byte for byte on qcom-emu; {launches} launches, {partial} with partial work groups ({seconds} s)"
            ),
            Outcome::Refused(e) => format!("refused: {}", e.replace('|', "\\|")),
        };
        s.push_str(&format!(
            "| {} | {} | {} | {} |\n",
            r.pickle, r.tinygrad, r.layout, result
        ));
    }
    s
}
