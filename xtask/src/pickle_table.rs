//! The real openpilot 0.11 pickles (`qcom/testdata/openpilot-0.11/`, docs/openpilot-pickles.md) through `cargo xtask convert` and, when
//! converted, on `--device qcom-emu` on pseudo-random real-size frames (`qcom/tests/qcom_cl/pickle_e2e.py`): driver
//! warps (one kernel) against their kernel's own OpenCL C run on the host (`host_reference`) and, road warps, against
//! the numpy model of openpilot's warp that v0.10.4's pickles are checked against (which a driver warp is compared
//! with too, to say whether openpilot changed it). One [`Row`] per pickle — converts and computes (every output byte
//! equal), or refused with the exporter's one `error:` line. `cargo xtask pickle-table` runs all of them
//! and writes the table into docs/openpilot-pickles.md; tests/tests/adreno/openpilot_pickles.rs runs a subset.
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use modelrt_core::bundle::{Bundle, Step};

use crate::manifest::Manifest;

/// The pickles, their tinygrad (from the data README's provenance) and which numpy warp model their I/O is.
pub const PICKLES: &[(&str, &str, Warp)] = &[
    (
        "tg0.12-329_warp_1928x1208_tinygrad",
        "v0.12.0-329",
        Warp::Road,
    ),
    (
        "tg0.12-329_dm_warp_1928x1208_tinygrad",
        "v0.12.0-329",
        Warp::Driver,
    ),
    (
        "tg0.12-455_warp_1928x1208_tinygrad",
        "v0.12.0-455",
        Warp::Road,
    ),
    (
        "tg0.12-455_dm_warp_1928x1208_tinygrad",
        "v0.12.0-455",
        Warp::Driver,
    ),
    (
        "tg0.12-455_sunnypilot_warp_1928x1208_b2_tinygrad",
        "v0.12.0-455",
        Warp::Road,
    ),
    (
        "tg0.12-1606_dm_warp_1928x1208_tinygrad",
        "v0.12.0-1606",
        Warp::Driver,
    ),
    (
        "tg0.13.0-288_cpu_dm_warp_1928x1208_tinygrad",
        "v0.13.0-288",
        Warp::Driver,
    ),
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
        /// What the outputs were found equal to (the references of [`run_one`]).
        equal_to: String,
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
    let (outs, launches, partial, seconds) = run_on_emu(&bytes, &e2e)?;
    let expected: Vec<Vec<u8>> = (0..outs.len())
        .map(|j| std::fs::read(e2e.join(format!("expected{j}.bin"))))
        .collect::<std::io::Result<_>>()?;
    let numpy = differing(&outs, &expected)?;
    let equal_to = match warp {
        // One kernel: also its own OpenCL C source compiled for the host and run over its NDRange.
        Warp::Driver => {
            let b = Bundle::parse(&bytes)?;
            let k = b.body().kernels.get(0)?;
            let src = k
                .source
                .context("the driver warp's kernel has no OpenCL C source")?;
            let want = host_reference(src, &e2e, &dir.join("host-ref"))?;
            if outs.len() != 1 || outs[0] != want {
                let bad = outs[0].iter().zip(&want).filter(|(a, b)| a != b).count();
                bail!(
                    "{stem}: {bad} of {} output bytes differ from the kernel's OpenCL C run on the host",
                    want.len()
                );
            }
            match numpy {
                0 => "its kernel's OpenCL C run on the host and the numpy warp model (= v0.10.4's driver warp)".to_string(),
                n => format!(
                    "its kernel's OpenCL C run on the host; differs from the v0.10.4 numpy warp model in {n} bytes: openpilot changed this warp (out-of-frame pixels are 16, not clamped samples)"
                ),
            }
        }
        Warp::Road if numpy == 0 => "the numpy warp model (= v0.10.4's road warp)".to_string(),
        Warp::Road => bail!("{stem}: {numpy} output bytes differ from the numpy warp model"),
    };
    Ok(row(Outcome::Computes {
        outputs: outs.len(),
        bytes: outs.iter().map(Vec::len).sum(),
        launches,
        partial,
        seconds,
        equal_to,
    }))
}

/// Bytes of `got` that differ from `want` (sizes must agree).
fn differing(got: &[Vec<u8>], want: &[Vec<u8>]) -> Result<usize> {
    if got.len() != want.len() {
        bail!("{} outputs, the reference has {}", got.len(), want.len());
    }
    let mut n = 0;
    for (j, (g, w)) in got.iter().zip(want).enumerate() {
        if g.len() != w.len() {
            bail!(
                "output {j}: {} bytes, the reference has {}",
                g.len(),
                w.len()
            );
        }
        n += g.iter().zip(w).filter(|(a, b)| a != b).count();
    }
    Ok(n)
}

/// The output of a one-kernel warp computed by its own OpenCL C source on the host: clang-19's OpenCL C mode with the
/// work-item driver `qcom/tests/qcom_cl/ref_driver.c` (the reference of `qcom/tests/qcom_cl_kernels.rs`), over the
/// global work size the source's `get_global_id(d); /* N */` comments state, one item per group. Buffer parameters
/// come from the signature (`__global uchar* data0_1382400`): the one no input has the size of is the output; the
/// others are the e2e inputs of their byte size. Nothing of modelrt's conversion is used.
fn host_reference(src: &str, e2e: &Path, dir: &Path) -> Result<Vec<u8>> {
    std::fs::create_dir_all(dir)?;
    let name = src
        .split("__kernel void ")
        .nth(1)
        .and_then(|r| r.split('(').next())
        .context("no __kernel in the source")?
        .trim()
        .to_string();
    let sig = src
        .split_once('(')
        .and_then(|(_, r)| r.split_once(')'))
        .context("no parameter list")?
        .0;
    let mut params = Vec::new();
    for p in sig.split(',') {
        let (ty, rest) = p
            .trim()
            .strip_prefix("__global ")
            .and_then(|r| r.split_once('*'))
            .with_context(|| format!("parameter `{p}` is not a __global pointer"))?;
        let elems: usize = rest
            .trim()
            .rsplit_once('_')
            .and_then(|(_, n)| n.parse().ok())
            .with_context(|| format!("parameter `{p}`: no element count"))?;
        let size = match ty.trim() {
            "uchar" | "char" => 1,
            "float" | "int" | "uint" => 4,
            t => bail!("parameter `{p}`: element type {t}"),
        };
        params.push(elems * size);
    }
    let mut work = [1u64; 3];
    for part in src.split("get_global_id(").skip(1) {
        let d: usize = part[..1].parse()?;
        let n: u64 = part
            .split_once("/*")
            .and_then(|(_, r)| r.split_once("*/"))
            .and_then(|(n, _)| n.trim().parse().ok())
            .context("a get_global_id without its /* N */ comment")?;
        work[d.min(2)] = n;
    }
    let mut inputs: Vec<Vec<u8>> = Vec::new();
    for i in 0.. {
        match std::fs::read(e2e.join(format!("input{i}.bin"))) {
            Ok(b) => inputs.push(b),
            Err(_) => break,
        }
    }
    let mut files = Vec::new();
    let mut out_index = None;
    for (i, &bytes) in params.iter().enumerate() {
        let f = dir.join(format!("buf{i}.bin"));
        match inputs.iter().find(|b| b.len() == bytes) {
            Some(b) => std::fs::write(&f, b)?,
            None if out_index.is_none() => {
                out_index = Some(i);
                std::fs::write(&f, vec![0u8; bytes])?
            }
            None => bail!("two parameters match no input"),
        }
        files.push(f);
    }
    let out_index = out_index.context("every parameter matches an input: no output")?;
    let cl = dir.join(format!("{name}.cl"));
    std::fs::write(&cl, src)?;
    let clang = std::env::var_os("MODELRT_CLANG").unwrap_or_else(|| "clang-19".into());
    let driver = crate::setup::workspace_root().join("qcom/tests/qcom_cl/ref_driver.c");
    let (k, d, exe) = (dir.join("k.o"), dir.join("d.o"), dir.join("ref"));
    let run = |c: &mut Command| -> Result<()> {
        let o = c.output().with_context(|| format!("{c:?}"))?;
        if !o.status.success() {
            bail!("{c:?}: {}", String::from_utf8_lossy(&o.stderr));
        }
        Ok(())
    };
    // x86-64 without FMA keeps a*b+c as a rounded product and sum, as the interpreter's unfused mad.f32.
    run(Command::new(&clang)
        .args([
            "-x",
            "cl",
            "-cl-std=CL2.0",
            "-Xclang",
            "-finclude-default-header",
            "-O1",
            "-mno-fma",
            "-c",
        ])
        .arg(&cl)
        .arg("-o")
        .arg(&k))?;
    run(Command::new(&clang)
        .args([
            "-O1",
            "-c",
            &format!("-DKERNEL={name}"),
            &format!("-DNARGS={}", params.len()),
        ])
        .arg(&driver)
        .arg("-o")
        .arg(&d))?;
    run(Command::new(&clang)
        .arg(&d)
        .arg(&k)
        .arg("-lm")
        .arg("-o")
        .arg(&exe))?;
    let mut c = Command::new(&exe);
    c.args(work.iter().map(|w| w.to_string()));
    c.args(["1", "1", "1"]);
    c.args(&files);
    run(&mut c)?;
    Ok(std::fs::read(&files[out_index])?)
}

/// Run bundle `bytes` on qcom-emu on `e2e/input<i>.bin`: (outputs, launches, launches with partial groups, seconds).
fn run_on_emu(bytes: &[u8], e2e: &Path) -> Result<(Vec<Vec<u8>>, usize, usize, u64)> {
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
    drop(refs);
    Ok((outs, launches, partial, t.elapsed().as_secs()))
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
                equal_to,
            } => format!(
                "converts and computes: on qcom-emu {outputs} outputs ({bytes} bytes) equal byte for byte to {equal_to}; {launches} launches, {partial} with partial work groups ({seconds} s)"
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
