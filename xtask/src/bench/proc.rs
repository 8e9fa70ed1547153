//! Run one benchmark worker process with a time limit and parse the JSON object it prints as its
//! last stdout line.
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{bail, Context, Result};

use crate::child_wait::wait_or_kill;

/// Run `cmd` to completion (killed after `timeout`) and return the JSON of its last stdout line.
pub fn run_json(cmd: &mut Command, what: &str, timeout: Duration) -> Result<serde_json::Value> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot start {what}"))?;
    let mut stdout = child.stdout.take().context("stdout not captured")?;
    let mut stderr = child.stderr.take().context("stderr not captured")?;
    let out_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let Some(status) = wait_or_kill(&mut child, timeout)? else {
        bail!(
            "{what} did not finish within {} s and was killed",
            timeout.as_secs()
        );
    };
    let out = out_reader.join().unwrap_or_default();
    let err = err_reader.join().unwrap_or_default();
    if !status.success() {
        let last = err
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("(no output)");
        bail!("{what} failed ({status}): {last}");
    }
    let line = out
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .with_context(|| format!("{what} printed nothing"))?;
    serde_json::from_str(line).with_context(|| format!("{what} printed no JSON result: {line}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn parses_the_last_line_and_reports_failures_and_timeouts() {
        let v = run_json(
            Command::new("sh").args(["-c", "echo noise; echo '{\"a\": 3}'"]),
            "sh",
            Duration::from_secs(10),
        )
        .unwrap();
        assert_eq!(v["a"], 3);
        let e = run_json(
            Command::new("sh").args(["-c", "echo 'error: boom' >&2; exit 3"]),
            "worker",
            Duration::from_secs(10),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("worker failed") && e.contains("error: boom"),
            "{e}"
        );
        let e = run_json(
            Command::new("sh").args(["-c", "echo not json"]),
            "worker",
            Duration::from_secs(10),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("no JSON"), "{e}");
        let t = Instant::now();
        let e = run_json(
            Command::new("sleep").arg("30"),
            "sleeper",
            Duration::from_millis(200),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("killed") && t.elapsed() < Duration::from_secs(10),
            "{e}"
        );
    }
}
