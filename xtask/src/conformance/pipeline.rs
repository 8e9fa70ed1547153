//! One conformance case through both paths:
//! - modelrt: the exporter (`export.py`'s `main`, served by the export worker) → manifest →
//!   `bundle_build::build` (the same Rust bundle writer `cargo xtask compile` uses) → `modelrt run`
//!   (the CLI binary, in its own process) → compare with ONNX's expected outputs;
//! - tinygrad: `OnnxRunner` run eagerly on its CPU device by the tinygrad worker, same inputs, same
//!   comparison.
//!
//! When the exporter refuses because inputs feed shape-like parameters and names them as
//! `--const NAME=…`, the case is exported once more with those inputs folded from the test's own
//! data, and they are not fed at run time.
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result};
use modelrt_core::bundle::Bundle;
use serde_json::json;

use super::cases::{load_tensor, Case};
use super::classify::{
    classify_export, classify_run, const_names, Exit, ExportReply, Status, Step, TgStatus,
};
use super::compare::{compare, Tensor, Verdict};
use super::worker::{Reply, Worker};
use crate::child_wait::wait_or_kill;

/// Fixed per-run settings.
pub struct Ctx {
    /// `modelrt` binary.
    pub modelrt: PathBuf,
    /// Exporter target (`cpu-x86_64` / `cpu-aarch64`, this host).
    pub target: modelrt_hal::target::TargetName,
    /// `target/conformance/work`.
    pub work: PathBuf,
    /// Limit for each step of a case.
    pub timeout: Duration,
}

/// modelrt's outcome on one case.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    pub status: Status,
    pub detail: String,
    pub max_err: Option<f64>,
    pub consts: Vec<String>,
}

impl Outcome {
    fn new(status: Status, detail: impl Into<String>) -> Self {
        Outcome {
            status,
            detail: detail.into(),
            max_err: None,
            consts: Vec::new(),
        }
    }
}

fn verdict_outcome(v: Verdict) -> Outcome {
    match v {
        Verdict::Match { max_err } => Outcome {
            max_err: Some(max_err),
            ..Outcome::new(Status::Pass, "")
        },
        Verdict::Mismatch { reason, max_err } => Outcome {
            max_err,
            ..Outcome::new(Status::Wrong, reason)
        },
    }
}

fn fresh_dir(p: &Path) -> Result<()> {
    if p.exists() {
        std::fs::remove_dir_all(p).with_context(|| format!("cannot clear {}", p.display()))?;
    }
    std::fs::create_dir_all(p).with_context(|| format!("cannot create {}", p.display()))
}

/// tinygrad's eager result on `case`.
pub fn tinygrad_case(
    w: &mut Worker,
    case: &Case,
    work: &Path,
    timeout: Duration,
) -> Result<(TgStatus, String)> {
    if let Some(why) = case.inputs.iter().find_map(|v| v.unusable()) {
        return Ok((TgStatus::Error, format!("harness: input {why}")));
    }
    let dir = work.join(&case.name).join("tinygrad");
    fresh_dir(&dir)?;
    let inputs: serde_json::Map<String, serde_json::Value> = case
        .inputs
        .iter()
        .filter_map(|v| Some((v.name.clone(), json!(case.file(v)?.display().to_string()))))
        .collect();
    let bf16: serde_json::Map<String, serde_json::Value> = case
        .inputs
        .iter()
        .filter(|v| v.dtype.as_deref() == Some("bfloat16"))
        .map(|v| (v.name.clone(), json!(true)))
        .collect();
    let req = json!({"model": case.model().display().to_string(), "inputs": inputs, "bfloat16": bf16,
                     "out_dir": dir.display().to_string()});
    let v = match w.request(&req, timeout)? {
        Reply::Json(v) => v,
        Reply::Timeout => {
            return Ok((
                TgStatus::Error,
                format!("timed out after {} s", timeout.as_secs()),
            ))
        }
        Reply::Died(how) => return Ok((TgStatus::Error, how)),
    };
    if let Some(e) = v["error"].as_str() {
        return Ok((TgStatus::Error, e.to_string()));
    }
    let mut got = Vec::new();
    for o in v["outputs"]
        .as_array()
        .context("tinygrad worker reply without outputs")?
    {
        let file = o["file"].as_str().context("output without file")?;
        got.push(load_tensor(Path::new(file), o["dtype"].as_str())?);
    }
    let expected = match case.expected() {
        Ok(e) => e,
        Err(e) => return Ok((TgStatus::Error, format!("harness: {e:#}"))),
    };
    Ok(match compare(&got, &expected, case.rtol, case.atol) {
        Verdict::Match { .. } => (TgStatus::Pass, String::new()),
        Verdict::Mismatch { reason, .. } => (TgStatus::Wrong, reason),
    })
}

fn export_step(
    w: &mut Worker,
    ctx: &Ctx,
    case: &Case,
    out: &Path,
    consts: &[(String, PathBuf)],
) -> Result<Step> {
    let mut argv = vec![
        "--onnx".to_string(),
        case.model().display().to_string(),
        "--target".into(),
        ctx.target.to_string(),
        "--out".into(),
        out.display().to_string(),
    ];
    for (n, f) in consts {
        argv.extend(["--const".to_string(), format!("{n}={}", f.display())]);
    }
    Ok(match w.request(&json!({ "argv": argv }), ctx.timeout)? {
        Reply::Json(v) => {
            classify_export(&serde_json::from_value::<ExportReply>(v).unwrap_or_default())
        }
        Reply::Timeout => Step::Crash(format!(
            "exporter timed out after {} s",
            ctx.timeout.as_secs()
        )),
        Reply::Died(how) => Step::Crash(format!("exporter {how}")),
    })
}

/// Run `modelrt run` and classify how it ended; on success returns its stdout.
fn run_modelrt(ctx: &Ctx, bundle: &Path, inputs: &[(String, PathBuf)], out: &Path) -> Result<Step> {
    let mut cmd = Command::new(&ctx.modelrt);
    cmd.arg("run").arg(bundle);
    for (n, f) in inputs {
        cmd.arg("--input").arg(format!("{n}={}", f.display()));
    }
    cmd.arg("--output-dir").arg(out);
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot start {}", ctx.modelrt.display()))?;
    let mut stderr = child.stderr.take().context("stderr not captured")?;
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let exit = match wait_or_kill(&mut child, ctx.timeout)? {
        Some(st) => Exit::Code(st.code()),
        None => Exit::Timeout(ctx.timeout.as_secs()),
    };
    let err = if matches!(exit, Exit::Timeout(_)) {
        String::new()
    } else {
        reader.join().unwrap_or_default()
    };
    Ok(classify_run(&exit, &err))
}

/// Output file name `modelrt run --output-dir` uses for an output (its name, kept to safe characters).
fn output_file(name: &str) -> String {
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{safe}.npy")
}

/// The inputs a refusal asks to fold with `--const` that are not folded yet, with the test's data
/// files; `None` when it names none, or one the test has no `.npy` data for.
fn more_consts(
    case: &Case,
    refusal: &str,
    done: &[(String, PathBuf)],
) -> Option<Vec<(String, PathBuf)>> {
    let names: Vec<String> = const_names(refusal)
        .into_iter()
        .filter(|n| !done.iter().any(|(d, _)| d == n))
        .collect();
    if names.is_empty() {
        return None;
    }
    names
        .into_iter()
        .map(|n| {
            let v = case.inputs.iter().find(|v| v.name == n)?;
            Some((n, case.file(v)?))
        })
        .collect()
}

/// modelrt's result on `case`.
pub fn modelrt_case(w: &mut Worker, ctx: &Ctx, case: &Case) -> Result<Outcome> {
    let dir = ctx.work.join(&case.name);
    let mdir = dir.join("manifest");
    fresh_dir(&mdir)?;
    let mut consts: Vec<(String, PathBuf)> = Vec::new();
    let mut step = export_step(w, ctx, case, &mdir, &consts)?;
    // the exporter may name the shape-feeding inputs one refusal at a time: fold what it names and
    // export again, as long as each refusal names inputs of the test not folded yet
    while let Step::Refused(line) = &step {
        match more_consts(case, line, &consts) {
            Some(more) if consts.len() < case.inputs.len() => {
                consts.extend(more);
                fresh_dir(&mdir)?;
                step = export_step(w, ctx, case, &mdir, &consts)?;
            }
            _ => break,
        }
    }
    let const_names: Vec<String> = consts.iter().map(|(n, _)| n.clone()).collect();
    let with_consts = |mut o: Outcome| {
        o.consts = const_names.clone();
        o
    };
    match step {
        Step::Ok => {}
        Step::Refused(l) => return Ok(with_consts(Outcome::new(Status::Refused, l))),
        Step::Crash(l) => return Ok(with_consts(Outcome::new(Status::Crash, l))),
    }
    let bytes = match crate::manifest::Manifest::load(&mdir)
        .map_err(anyhow::Error::from)
        .and_then(|m| crate::bundle_build::build(&m))
    {
        Ok(b) => b,
        Err(e) => return Ok(with_consts(Outcome::new(Status::Refused, format!("{e:#}")))),
    };
    let bundle_path = dir.join("model.mrt");
    std::fs::write(&bundle_path, &bytes)
        .with_context(|| format!("cannot write {}", bundle_path.display()))?;
    let bundle = match Bundle::parse(&bytes) {
        Ok(b) => b,
        Err(e) => {
            return Ok(with_consts(Outcome::new(
                Status::Crash,
                format!("the written bundle does not parse: {e}"),
            )))
        }
    };
    let mut feeds = Vec::new();
    for d in bundle.body().inputs.iter() {
        let d = d.map_err(|e| anyhow::anyhow!("bundle input table: {e}"))?;
        let Some(v) = case.inputs.iter().find(|v| v.name == d.name) else {
            return Ok(with_consts(Outcome::new(
                Status::Crash,
                format!("bundle input '{}' is not an input of the test", d.name),
            )));
        };
        match case.file(v) {
            Some(f) => feeds.push((d.name.to_string(), f)),
            None => {
                let why = v.unusable().unwrap_or_default();
                return Ok(with_consts(Outcome::new(
                    Status::Refused,
                    format!("harness: cannot feed input {why}"),
                )));
            }
        }
    }
    let out = dir.join("out");
    fresh_dir(&out)?;
    match run_modelrt(ctx, &bundle_path, &feeds, &out)? {
        Step::Ok => {}
        Step::Refused(l) => return Ok(with_consts(Outcome::new(Status::Refused, l))),
        Step::Crash(l) => return Ok(with_consts(Outcome::new(Status::Crash, l))),
    }
    let mut got: Vec<Tensor> = Vec::new();
    for d in bundle.body().outputs.iter() {
        let d = d.map_err(|e| anyhow::anyhow!("bundle output table: {e}"))?;
        let f = out.join(output_file(d.name));
        if !f.is_file() {
            return Ok(with_consts(Outcome::new(
                Status::Wrong,
                format!("output '{}' was not written", d.name),
            )));
        }
        got.push(load_tensor(&f, Some(d.dtype.name()))?);
    }
    let expected = match case.expected() {
        Ok(e) => e,
        Err(e) => {
            return Ok(with_consts(Outcome::new(
                Status::Wrong,
                format!("harness: {e:#}"),
            )))
        }
    };
    Ok(with_consts(verdict_outcome(compare(
        &got, &expected, case.rtol, case.atol,
    ))))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(name: &str, file: Option<&str>) -> super::super::cases::Value {
        super::super::cases::Value {
            name: name.into(),
            kind: if file.is_some() {
                "tensor"
            } else {
                "sequence_type"
            }
            .into(),
            dtype: None,
            shape: None,
            file: file.map(str::to_string),
        }
    }

    #[test]
    fn const_retries_fold_only_new_inputs_the_test_has_data_for() {
        let case = Case {
            name: "test_slice".into(),
            op: "Slice".into(),
            rtol: 1e-3,
            atol: 1e-7,
            inputs: vec![
                input("x", Some("in_0.npy")),
                input("starts", Some("in_1.npy")),
                input("steps", Some("in_2.npy")),
                input("seq", None),
            ],
            outputs: vec![],
            dir: PathBuf::from("/cases/test_slice"),
        };
        let first = more_consts(
            &case,
            "input 'starts' …; fix it with --const starts=FILE.npy",
            &[],
        )
        .unwrap();
        assert_eq!(
            first,
            [(
                "starts".to_string(),
                PathBuf::from("/cases/test_slice/in_1.npy")
            )]
        );
        // a second refusal naming an input already folded plus a new one adds only the new one
        let again = more_consts(&case, "--const starts=A.npy --const steps=B.npy", &first).unwrap();
        assert_eq!(
            again,
            [(
                "steps".to_string(),
                PathBuf::from("/cases/test_slice/in_2.npy")
            )]
        );
        // nothing new, no --const at all, or an input without data: no retry
        assert_eq!(more_consts(&case, "--const starts=A.npy", &first), None);
        assert_eq!(more_consts(&case, "op='Foo' is not supported", &[]), None);
        assert_eq!(more_consts(&case, "--const seq=S.npy", &[]), None);
        assert_eq!(more_consts(&case, "--const nosuch=S.npy", &[]), None);
    }

    #[test]
    fn output_files_follow_modelrt_runs_naming() {
        assert_eq!(output_file("y"), "y.npy");
        assert_eq!(output_file("out/0:x"), "out_0_x.npy");
    }
}
