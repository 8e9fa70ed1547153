//! Classification of one conformance case: what the exporter, the bundle writer and `modelrt run`
//! said, turned into PASS / WRONG / REFUSED / CRASH for modelrt and PASS / WRONG / ERROR for tinygrad.
//!
//! A refusal must be exactly what a user would see as a clean failure: one `error:` line (exporter
//! exit code 2, or `modelrt run` exit code 1). Anything else that fails — a traceback, a panic, a
//! signal, a timeout, an exit without exactly one `error:` line — is a crash.
use serde::{Deserialize, Serialize};

/// modelrt's result on one case.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "UPPERCASE")]
pub enum Status {
    Pass,
    Wrong,
    Refused,
    Crash,
}

/// tinygrad's own (eager) result on one case.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "UPPERCASE")]
pub enum TgStatus {
    Pass,
    Wrong,
    Error,
}

impl Status {
    pub fn name(self) -> &'static str {
        match self {
            Status::Pass => "PASS",
            Status::Wrong => "WRONG",
            Status::Refused => "REFUSED",
            Status::Crash => "CRASH",
        }
    }
}

impl TgStatus {
    pub fn name(self) -> &'static str {
        match self {
            TgStatus::Pass => "PASS",
            TgStatus::Wrong => "WRONG",
            TgStatus::Error => "ERROR",
        }
    }
}

/// Result of one step that can fail (export, bundle build, run).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    Ok,
    /// A clean one-line refusal (the text after `error: `).
    Refused(String),
    /// Anything else; one line describing it.
    Crash(String),
}

/// The export worker's reply for one case (see `xtask/exporter/conformance_worker.py`).
#[derive(Clone, Debug, Default, Deserialize)]
pub struct ExportReply {
    pub rc: Option<i32>,
    #[serde(default)]
    pub stderr: String,
    pub exception: Option<String>,
}

fn last_line(text: &str) -> &str {
    text.lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("(no output)")
}

fn clip(s: &str) -> String {
    const MAX: usize = 240;
    match s.char_indices().nth(MAX) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// export.py's `main(argv)` result: 0 = ok; 2 with exactly one `error:` line and no traceback =
/// refused; an exception or any other exit = crash.
pub fn classify_export(r: &ExportReply) -> Step {
    if let Some(tb) = &r.exception {
        return Step::Crash(clip(&format!("exporter traceback: {}", last_line(tb))));
    }
    let errors: Vec<&str> = r
        .stderr
        .lines()
        .filter_map(|l| l.strip_prefix("error: "))
        .collect();
    let traceback = r.stderr.lines().any(|l| l.starts_with("Traceback"));
    match r.rc {
        Some(0) => Step::Ok,
        Some(2) if errors.len() == 1 && !traceback => Step::Refused(clip(errors[0].trim())),
        Some(rc) if errors.len() == 1 => {
            Step::Crash(clip(&format!("exporter exit {rc}: {}", errors[0].trim())))
        }
        Some(rc) => Step::Crash(clip(&format!(
            "exporter exit {rc} without one error line: {}",
            last_line(&r.stderr)
        ))),
        None => Step::Crash("exporter reply without an exit code".into()),
    }
}

/// How a `modelrt run` process ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Exit {
    /// Exit code (`None` = killed by a signal).
    Code(Option<i32>),
    /// Killed by the harness after this many seconds.
    Timeout(u64),
}

/// `modelrt run`: exit 0 = ok; exit 1 whose stderr is exactly one `error:` line = refused; a panic,
/// a signal, a timeout or any other exit = crash.
pub fn classify_run(exit: &Exit, stderr: &str) -> Step {
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    match exit {
        Exit::Timeout(s) => Step::Crash(format!("modelrt run timed out after {s} s")),
        Exit::Code(None) => Step::Crash(clip(&format!(
            "modelrt run killed by a signal: {}",
            last_line(stderr)
        ))),
        Exit::Code(Some(0)) => Step::Ok,
        Exit::Code(Some(1)) if lines.len() == 1 && lines[0].starts_with("error: ") => {
            Step::Refused(clip(&lines[0]["error: ".len()..]))
        }
        Exit::Code(Some(c)) => {
            let panic = lines.iter().find(|l| l.contains("panicked at"));
            Step::Crash(clip(&match panic {
                Some(p) => format!("modelrt run panicked (exit {c}): {p}"),
                None => format!("modelrt run exit {c}: {}", last_line(stderr)),
            }))
        }
    }
}

/// Names of the inputs a refusal asks to pass as `--const NAME=FILE.npy` (the exporter's refusal for
/// graph inputs that feed shape-like parameters names them that way).
pub fn const_names(refusal: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = refusal;
    while let Some(i) = rest.find("--const ") {
        rest = &rest[i + "--const ".len()..];
        if let Some(eq) = rest.find('=') {
            let name = rest[..eq].trim_matches(|c: char| c == '\'' || c == '"' || c == '`');
            if !name.is_empty()
                && !name.contains(char::is_whitespace)
                && !names.iter().any(|n| n == name)
            {
                names.push(name.to_string());
            }
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(rc: i32, stderr: &str) -> ExportReply {
        ExportReply {
            rc: Some(rc),
            stderr: stderr.into(),
            exception: None,
        }
    }

    #[test]
    fn one_error_line_with_exit_2_is_refused_with_the_reason() {
        let r = reply(
            2,
            "exporter: target cpu-x86_64\nexporter: captured in 0.1s\nerror: unsupported ONNX model: op='Foo' is not supported\n",
        );
        assert_eq!(
            classify_export(&r),
            Step::Refused("unsupported ONNX model: op='Foo' is not supported".into())
        );
        assert_eq!(classify_export(&reply(0, "exporter: done\n")), Step::Ok);
    }

    #[test]
    fn a_traceback_is_a_crash_never_a_refusal() {
        let r = ExportReply {
            rc: None,
            stderr: "exporter: target cpu-x86_64\n".into(),
            exception: Some(
                "Traceback (most recent call last):\n  File \"x.py\", line 1\nAssertionError: shape requested\n".into(),
            ),
        };
        assert_eq!(
            classify_export(&r),
            Step::Crash("exporter traceback: AssertionError: shape requested".into())
        );
        // exit 2 but with a traceback printed, or with two error lines: not a clean refusal
        let r = reply(2, "Traceback (most recent call last):\nerror: boom\n");
        assert!(matches!(classify_export(&r), Step::Crash(_)));
        let r = reply(2, "error: one\nerror: two\n");
        assert!(matches!(classify_export(&r), Step::Crash(_)));
        // an internal error (export.py's exit 3) stays a crash even with its one error line
        let r = reply(
            3,
            "error: the exporter failed on this model: ValueError: 8 (traceback: t.txt)\n",
        );
        assert_eq!(
            classify_export(&r),
            Step::Crash("exporter exit 3: the exporter failed on this model: ValueError: 8 (traceback: t.txt)".into())
        );
        let r = reply(1, "something went wrong\n");
        assert_eq!(
            classify_export(&r),
            Step::Crash("exporter exit 1 without one error line: something went wrong".into())
        );
    }

    #[test]
    fn modelrt_run_exits_are_classified() {
        assert_eq!(classify_run(&Exit::Code(Some(0)), ""), Step::Ok);
        assert_eq!(
            classify_run(
                &Exit::Code(Some(1)),
                "error: input 'x': a.npy has dtype float32, the model expects int64\n"
            ),
            Step::Refused("input 'x': a.npy has dtype float32, the model expects int64".into())
        );
        let p = classify_run(
            &Exit::Code(Some(101)),
            "thread 'main' panicked at core/src/exec.rs:10:5:\nindex out of bounds\nnote: run with RUST_BACKTRACE=1\n",
        );
        assert!(
            matches!(&p, Step::Crash(m) if m.starts_with("modelrt run panicked (exit 101)")),
            "{p:?}"
        );
        assert!(matches!(
            classify_run(&Exit::Code(None), "Segmentation fault"),
            Step::Crash(_)
        ));
        assert_eq!(
            classify_run(&Exit::Timeout(60), ""),
            Step::Crash("modelrt run timed out after 60 s".into())
        );
        // exit 1 with more than the one error line is not a clean refusal
        assert!(matches!(
            classify_run(&Exit::Code(Some(1)), "warning: x\nerror: y\n"),
            Step::Crash(_)
        ));
    }

    #[test]
    fn const_names_are_read_from_the_refusal() {
        assert_eq!(
            const_names("input 'shape' feeds Reshape's shape; pass --const shape=FILE.npy to fold its value"),
            vec!["shape".to_string()]
        );
        assert_eq!(
            const_names("inputs feed shape parameters: pass --const starts=S.npy --const ends=E.npy (and --const starts=...)"),
            vec!["starts".to_string(), "ends".to_string()]
        );
        assert!(const_names("unsupported ONNX model: op='Foo' is not supported").is_empty());
    }

    #[test]
    fn statuses_serialize_in_upper_case() {
        assert_eq!(
            serde_json::to_string(&Status::Refused).unwrap(),
            "\"REFUSED\""
        );
        assert_eq!(
            serde_json::from_str::<TgStatus>("\"ERROR\"").unwrap(),
            TgStatus::Error
        );
    }
}
