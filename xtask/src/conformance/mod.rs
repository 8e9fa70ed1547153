//! `cargo xtask conformance`: ONNX's own backend node tests as a conformance suite for the CPU path.
//!
//! Cases are generated once from the installed `onnx` package into `target/conformance/cases/`
//! ([`cases`]). Each case is compiled with the real compile path for this host's CPU and run with the
//! `modelrt` binary, and separately run eagerly by tinygrad ([`pipeline`]); both are compared with
//! ONNX's expected outputs under ONNX's runner rules ([`compare`]) and classified ([`classify`]).
//! Python work is served by two long-lived worker processes ([`worker`]); tinygrad's results are
//! cached in `target/conformance/tinygrad.json` (they depend only on the cases and the pinned
//! tinygrad). The report, the committed baseline and the CI gate are in [`report`].
pub mod cases;
pub mod classify;
pub mod compare;
pub mod pipeline;
pub mod report;
mod tgcache;
pub mod worker;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};

use cases::{Case, Index};
use classify::TgStatus;
use report::{Baseline, CaseResult};
use tgcache::TgCache;
use worker::Worker;

/// Which cases to run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Selection {
    All,
    /// One case per op tinygrad's ONNX frontend implements ([`report::ci_subset`]).
    Ci,
}

/// `cargo xtask conformance` options.
#[derive(Clone, Debug)]
pub struct Options {
    pub selection: Selection,
    /// Only cases whose name contains this.
    pub filter: Option<String>,
    /// Write the results into the committed baseline.
    pub update_baseline: bool,
    /// Limit for each step of a case (export, run, tinygrad).
    pub timeout: Duration,
    /// Use a release build of `modelrt` (default: the debug build the tests already made).
    pub release: bool,
}

impl Options {
    /// What CI runs.
    pub fn ci() -> Self {
        Options {
            selection: Selection::Ci,
            filter: None,
            update_baseline: false,
            timeout: Duration::from_secs(120),
            release: false,
        }
    }
}

/// `xtask/conformance/baseline.json`.
pub fn baseline_path(root: &Path) -> PathBuf {
    root.join("xtask").join("conformance").join("baseline.json")
}

fn load_baseline(root: &Path) -> Result<Baseline> {
    let p = baseline_path(root);
    if !p.is_file() {
        return Ok(Baseline::default());
    }
    let text =
        std::fs::read_to_string(&p).with_context(|| format!("cannot read {}", p.display()))?;
    serde_json::from_str(&text).with_context(|| format!("malformed {}", p.display()))
}

fn select(index: &Index, baseline: &Baseline, o: &Options) -> Vec<String> {
    let names: Vec<String> = match o.selection {
        Selection::All => index.cases.iter().map(|c| c.name.clone()).collect(),
        Selection::Ci => report::ci_subset(index, baseline),
    };
    names
        .into_iter()
        .filter(|n| o.filter.as_ref().is_none_or(|f| n.contains(f.as_str())))
        .collect()
}

fn bar(mp: &MultiProgress, n: usize, what: &str) -> ProgressBar {
    let b = mp.add(ProgressBar::new(n as u64));
    let style = ProgressStyle::with_template(&format!(
        "{what:9} [{{elapsed_precise}}] {{bar:30}} {{pos}}/{{len}} eta {{eta}} {{msg}}"
    ))
    .unwrap_or_else(|_| ProgressStyle::default_bar());
    b.set_style(style);
    b
}

fn worker_script() -> PathBuf {
    crate::exporter_python::exporter_dir().join("conformance_worker.py")
}

fn python_worker(python: &Path, mode: &str, envs: Vec<(String, String)>, log: PathBuf) -> Worker {
    let script = worker_script();
    let mut envs = envs;
    envs.push(("PYTHONDONTWRITEBYTECODE".into(), "1".into()));
    envs.push(("PYTHONWARNINGS".into(), "ignore".into()));
    Worker::new(
        python,
        vec![script.display().to_string(), mode.to_string()],
        envs,
        log,
    )
}

/// Run every case through both paths: tinygrad (cases not in the cache) on a second thread, modelrt
/// on this one. Returns modelrt's outcomes (in `cases` order) and tinygrad's new results.
fn execute(
    python: &Path,
    ctx: &pipeline::Ctx,
    cases: &[Case],
    tg_todo: &[&Case],
) -> Result<(Vec<pipeline::Outcome>, TgCache)> {
    let mp = MultiProgress::new();
    let mbar = bar(&mp, cases.len(), "modelrt");
    let tbar = bar(&mp, tg_todo.len(), "tinygrad");
    let log = |name: &str| ctx.work.with_file_name(name);
    std::thread::scope(|s| {
        let tg = s.spawn(|| -> Result<TgCache> {
            let env = vec![("DEV".into(), "CPU".into())];
            let mut w = python_worker(python, "tinygrad", env, log("tinygrad-worker.log"));
            let mut out = TgCache::new();
            for c in tg_todo {
                tbar.set_message(c.name.clone());
                let r = pipeline::tinygrad_case(&mut w, c, &ctx.work, ctx.timeout)?;
                out.insert(c.name.clone(), r);
                tbar.inc(1);
            }
            tbar.finish_with_message("done");
            Ok(out)
        });
        let mut w = python_worker(python, "export", vec![], log("export-worker.log"));
        let mut outcomes = Vec::new();
        for c in cases {
            mbar.set_message(c.name.clone());
            outcomes.push(pipeline::modelrt_case(&mut w, ctx, c)?);
            mbar.inc(1);
        }
        mbar.finish_with_message("done");
        let tg_new = tg
            .join()
            .map_err(|_| anyhow::anyhow!("the tinygrad thread panicked"))??;
        Ok((outcomes, tg_new))
    })
}

/// Run the suite; prints the table, writes `target/conformance/results.json` (and
/// `docs/conformance.md` for a full unfiltered run), and fails on the CI gate's problems.
pub fn run(o: &Options) -> Result<Vec<CaseResult>> {
    let t0 = Instant::now();
    let root = crate::setup::workspace_root();
    let python = crate::venv::ensure_venv(&root)?;
    let index = cases::ensure_generated(&root, &python)?;
    let baseline = load_baseline(&root)?;
    let selected = select(&index, &baseline, o);
    if selected.is_empty() {
        bail!("no conformance case matches the selection");
    }
    let modelrt = crate::bench::build_modelrt(&root, o.release)?;
    let base = root.join("target").join("conformance");
    let work = base.join("work");
    std::fs::create_dir_all(&work).with_context(|| format!("cannot create {}", work.display()))?;
    let cases_root = cases::cases_dir(&root);
    let loaded: Vec<Case> = selected
        .iter()
        .map(|n| Case::load(&cases_root.join(n)))
        .collect::<Result<_>>()?;
    let cache = tgcache::Cache::open(&base, &cases_root, &worker_script())?;
    let tg_todo: Vec<&Case> = loaded
        .iter()
        .filter(|c| cache.get(&c.name).is_none())
        .collect();
    eprintln!(
        "conformance: {} cases ({} need a tinygrad run), modelrt {}; logs in {}",
        loaded.len(),
        tg_todo.len(),
        modelrt.display(),
        base.display()
    );
    let ctx = pipeline::Ctx {
        modelrt,
        target: modelrt_hal::target::TargetName::host_cpu(),
        work,
        timeout: o.timeout,
    };
    let (outcomes, tg_new) = execute(&python, &ctx, &loaded, &tg_todo)?;
    let cache = cache.extended(tg_new)?;
    let mut results: Vec<CaseResult> = loaded
        .iter()
        .zip(outcomes)
        .map(|(c, m)| {
            let (tinygrad, tinygrad_detail) = cache
                .get(&c.name)
                .cloned()
                .unwrap_or((TgStatus::Error, "not run".into()));
            CaseResult {
                name: c.name.clone(),
                op: c.op.clone(),
                modelrt: m.status,
                detail: m.detail,
                max_err: m.max_err,
                consts: m.consts,
                tinygrad,
                tinygrad_detail,
            }
        })
        .collect();
    results.sort_by(|a, b| a.name.cmp(&b.name));
    publish(&root, o, &index, &baseline, &results)?;
    println!(
        "conformance: {} cases in {:.0} s",
        results.len(),
        t0.elapsed().as_secs_f64()
    );
    let problems = report::problems(&results, &baseline);
    if !problems.is_empty() {
        for p in &problems {
            eprintln!("  {p}");
        }
        bail!(
            "conformance: {} problem(s): WRONG, CRASH or a baseline PASS lost (listed above)",
            problems.len()
        );
    }
    Ok(results)
}

/// Print the table; write results.json, the report (full runs) and the baseline (when asked).
fn publish(
    root: &Path,
    o: &Options,
    index: &Index,
    baseline: &Baseline,
    results: &[CaseResult],
) -> Result<()> {
    println!("{}", report::terminal(results));
    let out = root.join("target").join("conformance").join("results.json");
    std::fs::write(&out, serde_json::to_string_pretty(results)?)
        .with_context(|| format!("cannot write {}", out.display()))?;
    let full = o.selection == Selection::All && o.filter.is_none();
    if full {
        write_doc(root, results)?;
    }
    if o.update_baseline {
        let b = report::updated_baseline(baseline, &index.onnx, results, full);
        let p = baseline_path(root);
        if let Some(d) = p.parent() {
            std::fs::create_dir_all(d)?;
        }
        std::fs::write(&p, report::baseline_json(&b))
            .with_context(|| format!("cannot write {}", p.display()))?;
        println!("updated {}", p.display());
    }
    Ok(())
}

fn today() -> String {
    std::process::Command::new("date")
        .arg("+%Y-%m-%d")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// Replace everything after the marker in `docs/conformance.md` with the report.
fn write_doc(root: &Path, results: &[CaseResult]) -> Result<()> {
    const MARK: &str = "<!-- conformance-table -->";
    let doc = root.join("docs").join("conformance.md");
    let text = std::fs::read_to_string(&doc).unwrap_or_default();
    let head = text.split(MARK).next().unwrap_or_default().to_string();
    std::fs::write(
        &doc,
        format!("{head}{MARK}\n{}", report::markdown(results, &today())),
    )
    .with_context(|| format!("cannot write {}", doc.display()))?;
    println!("updated {}", doc.display());
    Ok(())
}
