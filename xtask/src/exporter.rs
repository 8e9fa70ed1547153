//! Runs `xtask/exporter/export.py` (ONNX or compile3 pickle -> manifest directory) with the venv python,
//! forwarding its stderr live and turning its "user error" exit code 2 into a clean one-line error.

use anyhow::{anyhow, bail, Context, Result};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;

use crate::child_wait::wait_or_kill;
use modelrt_hal::target::TargetName;

/// Exit code export.py uses for user errors (bad model, unsupported op, wrong target, unsupported pickle, ...).
pub const USER_ERROR_EXIT: i32 = 2;
/// Exit code export.py uses when it failed on a model for a reason of its own (its one `error:` line names the
/// file holding the traceback).
pub const INTERNAL_ERROR_EXIT: i32 = 3;

/// Why an export failed, so callers (the conformance suite) can tell a clean refusal from a crash.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExportFailure {
    /// The model or the arguments cannot be compiled; the message says why and what to do.
    #[error("{0}")]
    Refused(String),
    /// The exporter failed on the model (its bug or tinygrad's); the message names the traceback file.
    #[error("{0}")]
    Internal(String),
    /// The exporter died, was killed, timed out, or exited without a one-line error.
    #[error("{0}")]
    Crashed(String),
}
/// Upper bound for one export (large models compile for minutes on 2 cores).
const EXPORT_TIMEOUT: Duration = Duration::from_secs(3600);

/// What to export.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// Compile an ONNX model for `ExportArgs::target`.
    Onnx(PathBuf),
    /// Import an existing openpilot compile3 pickle (plain or `PICKLE_OOB=1`).
    Pickle(PathBuf),
    /// Capture a tinygrad program: `SCRIPT.py:FN`, where `FN()` returns the function to capture, its example inputs
    /// and its initial state (xtask/exporter/mrt/script.py).
    Tinygrad(String),
}

impl Source {
    /// The file the source names (for `Tinygrad`, the script before `:FN`).
    pub fn file(&self) -> PathBuf {
        match self {
            Source::Onnx(p) | Source::Pickle(p) => p.clone(),
            Source::Tinygrad(spec) => {
                PathBuf::from(spec.rsplit_once(':').map_or(spec.as_str(), |x| x.0))
            }
        }
    }
}

/// Arguments for one export; mirrors export.py's CLI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportArgs {
    pub source: Source,
    /// The target an ONNX model or tinygrad program is compiled for (`None` for pickles, which carry theirs).
    pub target: Option<TargetName>,
    pub out: PathBuf,
    pub reference: bool,
    pub seed: Option<u64>,
    pub threads: Option<u32>,
    pub float16: bool,
    pub image: bool,
    pub cpu_baseline: Option<String>,
    /// Graph inputs folded into the graph with a fixed value before capture (`--const NAME=FILE.npy`).
    pub consts: Vec<(String, PathBuf)>,
    /// ONNX models: values of named dynamic input dimensions (`--dim NAME=VALUE`); the others are 1.
    pub dims: Vec<(String, u64)>,
    /// compile3's dtypes: float16 inputs fed as float32, float outputs returned as float32.
    pub compile3_dtypes: bool,
    /// Compile ops tinygrad is known to compute wrongly and skip the cross-check with onnxruntime.
    pub trust_tinygrad: bool,
    /// Pickles: initial contents of inputs the program advances in place (`NAME`, `zeros` or a `.npy` path).
    pub state_init: Vec<(String, String)>,
    /// CPU targets: tinygrad kernel search of this width during capture (`--beam N`).
    pub beam: Option<u32>,
    /// CPU targets: apply this search cache instead of searching (`--beam-cache FILE`).
    pub beam_cache: Option<PathBuf>,
    /// With `beam`: where the exporter writes the search cache.
    pub beam_cache_out: Option<PathBuf>,
    /// CPU targets, ONNX models: stride-1 3×3 convs as Winograd F(4×4,3×3) (`--winograd auto|on|off`; None: the
    /// exporter's default, off). Documented in docs/cpu-kernels.md.
    pub winograd: Option<String>,
    /// ONNX and `--tinygrad` compiles for a target with an executing model (adreno-a630, amd-gfx1100,
    /// hexagon-v65): run the bundle there on seeded inputs and compare with the reference before writing it
    /// ([`crate::emu_check`]). Not an export.py argument. Default on.
    pub emu_check: bool,
}

impl ExportArgs {
    /// Default ONNX export for `target` into `out`.
    pub fn onnx(model: impl Into<PathBuf>, target: TargetName, out: impl Into<PathBuf>) -> Self {
        ExportArgs {
            source: Source::Onnx(model.into()),
            target: Some(target),
            out: out.into(),
            reference: false,
            seed: None,
            threads: None,
            float16: false,
            image: false,
            cpu_baseline: None,
            consts: Vec::new(),
            dims: Vec::new(),
            compile3_dtypes: false,
            trust_tinygrad: false,
            state_init: Vec::new(),
            beam: None,
            beam_cache: None,
            beam_cache_out: None,
            winograd: None,
            emu_check: true,
        }
    }

    /// Default conversion of a compile3 pickle into `out` (the pickle names its own target).
    pub fn pickle(pickle: impl Into<PathBuf>, out: impl Into<PathBuf>) -> Self {
        ExportArgs {
            source: Source::Pickle(pickle.into()),
            target: None,
            ..ExportArgs::onnx(PathBuf::new(), TargetName::host_cpu(), out)
        }
    }

    /// The target's name, or `pickle` for a pickle (scratch directories and messages).
    pub fn target_label(&self) -> &'static str {
        self.target.map_or("pickle", TargetName::as_str)
    }

    /// export.py arguments (after the script path).
    pub fn to_argv(&self) -> Vec<String> {
        let mut v = Vec::new();
        match &self.source {
            Source::Onnx(_) | Source::Tinygrad(_) => {
                let (flag, what) = match &self.source {
                    Source::Tinygrad(spec) => ("--tinygrad", spec.clone()),
                    _ => ("--onnx", self.source.file().display().to_string()),
                };
                v.extend([flag.to_string(), what]);
                if let Some(t) = self.target {
                    v.extend(["--target".to_string(), t.to_string()]);
                }
                if self.reference {
                    v.push("--reference".into());
                }
                if let Some(s) = self.seed {
                    v.extend(["--seed".into(), s.to_string()]);
                }
                if let Some(t) = self.threads {
                    v.extend(["--threads".into(), t.to_string()]);
                }
                if self.float16 {
                    v.push("--float16".into());
                }
                if self.image {
                    v.push("--image".into());
                }
                if let Some(b) = &self.cpu_baseline {
                    v.extend(["--cpu-baseline".into(), b.clone()]);
                }
                for (name, file) in &self.consts {
                    v.extend(["--const".into(), format!("{name}={}", file.display())]);
                }
                for (name, value) in &self.dims {
                    v.extend(["--dim".into(), format!("{name}={value}")]);
                }
                if self.compile3_dtypes {
                    v.push("--compile3-dtypes".into());
                }
                if self.trust_tinygrad {
                    v.push("--trust-tinygrad".into());
                }
                if let Some(n) = self.beam {
                    v.extend(["--beam".into(), n.to_string()]);
                }
                for (flag, path) in [
                    ("--beam-cache", &self.beam_cache),
                    ("--beam-cache-out", &self.beam_cache_out),
                ] {
                    if let Some(p) = path {
                        v.extend([flag.to_string(), p.display().to_string()]);
                    }
                }
                if let Some(w) = &self.winograd {
                    v.extend(["--winograd".into(), w.clone()]);
                }
            }
            Source::Pickle(p) => {
                v.extend(["--pickle".to_string(), p.display().to_string()]);
                for (name, init) in &self.state_init {
                    v.extend(["--state-init".into(), format!("{name}={init}")]);
                }
            }
        }
        v.extend(["--out".to_string(), self.out.display().to_string()]);
        v
    }
}

/// Path of export.py inside this repository.
pub fn script_path() -> PathBuf {
    crate::exporter_python::exporter_dir().join("export.py")
}

/// Run export.py with `python`; returns the output directory holding manifest.json + blobs/.
pub fn export(python: &Path, args: &ExportArgs) -> Result<PathBuf> {
    run_script(python, &script_path(), args, EXPORT_TIMEOUT)
}

fn run_script(
    python: &Path,
    script: &Path,
    args: &ExportArgs,
    timeout: Duration,
) -> Result<PathBuf> {
    if !script.is_file() {
        bail!("exporter script not found at {}", script.display());
    }
    let mut child = crate::exporter_python::command(python)
        .arg(script)
        .args(args.to_argv())
        .stdin(Stdio::null())
        .stdout(Stdio::inherit())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| {
            format!(
                "cannot start the exporter ({} {})",
                python.display(),
                script.display()
            )
        })?;
    let stderr = child
        .stderr
        .take()
        .ok_or_else(|| anyhow!("exporter stderr not captured"))?;
    // forward stderr live from a thread; remember "error: ..." lines (and the last line) for the one-line error
    let (tx, rx) = mpsc::channel::<(bool, String)>();
    let reader = std::thread::spawn(move || {
        let mut err = std::io::stderr();
        for line in BufReader::new(stderr).lines().map_while(|l| l.ok()) {
            match line.strip_prefix("error: ") {
                Some(msg) => {
                    let _ = tx.send((true, msg.to_string()));
                }
                None => {
                    let _ = writeln!(err, "{line}");
                    if !line.trim().is_empty() {
                        let _ = tx.send((false, line.trim().to_string()));
                    }
                }
            }
        }
    });
    let Some(status) = wait_or_kill(&mut child, timeout)? else {
        // the reader thread is not joined: a grandchild may still hold the pipe open; it ends with the pipe
        return Err(ExportFailure::Crashed(format!(
            "exporter timed out after {} s",
            timeout.as_secs()
        ))
        .into());
    };
    let _ = reader.join();
    let lines: Vec<(bool, String)> = rx.try_iter().collect();
    let last_error = lines
        .iter()
        .rev()
        .find(|(is_err, _)| *is_err)
        .map(|(_, l)| l.clone());
    let last_line = lines.last().map(|(_, l)| l.clone());
    let failure = match status.code() {
        Some(0) => return Ok(args.out.clone()),
        Some(USER_ERROR_EXIT) => ExportFailure::Refused(match (last_error, last_line) {
            (Some(e), _) => e,
            (None, Some(l)) => format!("exporter failed (exit code 2): {l}"),
            (None, None) => "exporter failed with exit code 2 and no message".into(),
        }),
        Some(INTERNAL_ERROR_EXIT) => ExportFailure::Internal(
            last_error.unwrap_or_else(|| "exporter failed (exit code 3) with no message".into()),
        ),
        code => {
            let how = code.map_or_else(
                || "was killed by a signal".to_string(),
                |c| format!("exited with code {c}"),
            );
            ExportFailure::Crashed(match last_error {
                Some(e) => format!("exporter {how}: {e}"),
                None => format!("exporter {how}; see its output above"),
            })
        }
    };
    Err(failure.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_script(tag: &str, body: &str) -> PathBuf {
        let p = std::env::temp_dir().join(format!(
            "modelrt-fake-export-{tag}-{}.sh",
            std::process::id()
        ));
        std::fs::write(&p, body).unwrap();
        p
    }

    #[test]
    fn argv_matches_export_py_cli() {
        let mut a = ExportArgs::onnx("m.onnx", TargetName::CpuX86_64, "out");
        a.reference = true;
        a.seed = Some(3);
        a.threads = Some(2);
        a.cpu_baseline = Some("x86-64-v4".into());
        assert_eq!(
            a.to_argv(),
            [
                "--onnx",
                "m.onnx",
                "--target",
                "cpu-x86_64",
                "--reference",
                "--seed",
                "3",
                "--threads",
                "2",
                "--cpu-baseline",
                "x86-64-v4",
                "--out",
                "out"
            ]
        );
        let w = ExportArgs {
            winograd: Some("off".into()),
            ..ExportArgs::onnx("m.onnx", TargetName::CpuX86_64, "o")
        };
        assert_eq!(
            w.to_argv(),
            [
                "--onnx",
                "m.onnx",
                "--target",
                "cpu-x86_64",
                "--winograd",
                "off",
                "--out",
                "o"
            ]
        );
        let p = ExportArgs::pickle("m.pkl", "o");
        assert_eq!(p.to_argv(), ["--pickle", "m.pkl", "--out", "o"]);
        let st = ExportArgs {
            state_init: vec![("feat_q".into(), "zeros".into())],
            ..ExportArgs::pickle("m.pkl", "o")
        };
        assert_eq!(
            st.to_argv(),
            [
                "--pickle",
                "m.pkl",
                "--state-init",
                "feat_q=zeros",
                "--out",
                "o"
            ]
        );
        let tg = ExportArgs {
            source: Source::Tinygrad("models/p.py:build".into()),
            ..ExportArgs::onnx("x", TargetName::CpuX86_64, "o")
        };
        assert_eq!(
            tg.to_argv(),
            [
                "--tinygrad",
                "models/p.py:build",
                "--target",
                "cpu-x86_64",
                "--out",
                "o"
            ]
        );
        assert_eq!(tg.source.file(), PathBuf::from("models/p.py"));
        let img = ExportArgs {
            image: true,
            float16: true,
            ..ExportArgs::onnx("m", TargetName::AdrenoA630, "o")
        };
        assert!(
            img.to_argv().contains(&"--image".to_string())
                && img.to_argv().contains(&"--float16".to_string())
        );
        let dims = ExportArgs {
            dims: vec![("N".into(), 8), ("T".into(), 3)],
            ..ExportArgs::onnx("m", TargetName::CpuX86_64, "o")
        };
        let argv = dims.to_argv();
        assert!(
            argv.windows(4)
                .any(|w| w == ["--dim", "N=8", "--dim", "T=3"]),
            "{argv:?}"
        );
    }

    #[test]
    fn exit_code_2_becomes_the_one_line_error() {
        let s = fake_script(
            "e2",
            "echo 'exporter: working' >&2\necho 'error: unsupported target \"tpu\"' >&2\nexit 2\n",
        );
        let e = run_script(
            Path::new("sh"),
            &s,
            &ExportArgs::onnx("m", TargetName::CpuX86_64, "o"),
            Duration::from_secs(20),
        )
        .unwrap_err();
        assert_eq!(e.to_string(), "unsupported target \"tpu\"");
        let _ = std::fs::remove_file(s);
    }

    #[test]
    fn other_failures_and_success() {
        let s = fake_script("e1", "echo 'Traceback: boom' >&2\nexit 1\n");
        let e = run_script(
            Path::new("sh"),
            &s,
            &ExportArgs::onnx("m", TargetName::CpuX86_64, "o"),
            Duration::from_secs(20),
        )
        .unwrap_err();
        assert!(e.to_string().contains("exited with code 1"), "{e}");
        let _ = std::fs::remove_file(s);
        let s = fake_script("ok", "exit 0\n");
        let out = run_script(
            Path::new("sh"),
            &s,
            &ExportArgs::onnx("m", TargetName::CpuX86_64, "outdir"),
            Duration::from_secs(20),
        )
        .unwrap();
        assert_eq!(out, PathBuf::from("outdir"));
        let _ = std::fs::remove_file(s);
    }

    #[test]
    fn exit_2_without_error_line_reports_last_line_and_missing_script_is_clear() {
        let s = fake_script("e2b", "echo 'python: cannot open file' >&2\nexit 2\n");
        let a = ExportArgs::onnx("m", TargetName::CpuX86_64, "o");
        let e = run_script(Path::new("sh"), &s, &a, Duration::from_secs(20)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "exporter failed (exit code 2): python: cannot open file"
        );
        let _ = std::fs::remove_file(s);
        let missing = Path::new("/nonexistent/export.py");
        let e = run_script(Path::new("sh"), missing, &a, Duration::from_secs(20)).unwrap_err();
        assert!(e.to_string().contains("exporter script not found"), "{e}");
    }

    #[test]
    fn hung_exporter_is_killed() {
        let s = fake_script("hang", "sleep 30\n");
        let e = run_script(
            Path::new("sh"),
            &s,
            &ExportArgs::onnx("m", TargetName::CpuX86_64, "o"),
            Duration::from_millis(300),
        )
        .unwrap_err();
        assert!(e.to_string().contains("timed out"));
        let _ = std::fs::remove_file(s);
    }
}
