//! A long-lived line-protocol worker process (`xtask/exporter/conformance_worker.py`): one JSON
//! request per stdin line, one JSON reply per stdout line. Each request has a time limit; a worker
//! that overruns is killed and the next request starts a fresh one, as does a worker that dies
//! (crash isolation). Workers are also recycled every `recycle_after` requests so a slow leak in
//! tinygrad cannot grow without bound over ~1,900 cases.
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::Value;

/// What became of one request.
#[derive(Debug)]
pub enum Reply {
    /// The worker's JSON reply.
    Json(Value),
    /// No reply within the time limit; the worker was killed.
    Timeout,
    /// The worker ended (or wrote garbage) before replying; one line saying how.
    Died(String),
}

struct Live {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    served: usize,
}

/// A restartable worker process.
pub struct Worker {
    program: PathBuf,
    args: Vec<String>,
    envs: Vec<(String, String)>,
    log: PathBuf,
    recycle_after: usize,
    live: Option<Live>,
}

impl Worker {
    /// A worker started as `program args…` with `envs` added, its stderr appended to `log`.
    pub fn new(
        program: impl Into<PathBuf>,
        args: Vec<String>,
        envs: Vec<(String, String)>,
        log: impl Into<PathBuf>,
    ) -> Self {
        Worker {
            program: program.into(),
            args,
            envs,
            log: log.into(),
            recycle_after: 150,
            live: None,
        }
    }

    /// Restart the worker after this many requests.
    pub fn recycle_after(mut self, n: usize) -> Self {
        self.recycle_after = n.max(1);
        self
    }

    fn start(&self) -> Result<Live> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .with_context(|| format!("cannot open {}", self.log.display()))?;
        let mut child = Command::new(&self.program)
            .args(&self.args)
            .envs(self.envs.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log))
            .spawn()
            .with_context(|| format!("cannot start worker {}", self.program.display()))?;
        let stdin = child.stdin.take().context("worker stdin not captured")?;
        let stdout = child.stdout.take().context("worker stdout not captured")?;
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(|l| l.ok()) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(Live {
            child,
            stdin,
            lines,
            served: 0,
        })
    }

    /// Kill and reap the current process, if any.
    pub fn stop(&mut self) {
        if let Some(mut l) = self.live.take() {
            let _ = l.child.kill();
            let _ = l.child.wait();
        }
    }

    fn died(&mut self, what: &str) -> Reply {
        let how = match self.live.take() {
            Some(mut l) => {
                // the reply pipe closed: the process is exiting; give it a moment, then make sure
                let status = crate::child_wait::wait_or_kill(&mut l.child, Duration::from_secs(5));
                match status {
                    Ok(Some(s)) => match s.code() {
                        Some(c) => format!("exit code {c}"),
                        None => "killed by a signal".to_string(),
                    },
                    _ => "hung and was killed".to_string(),
                }
            }
            None => "not running".to_string(),
        };
        Reply::Died(format!("{what} ({how})"))
    }

    /// Send one request and wait up to `timeout` for its reply.
    pub fn request(&mut self, req: &Value, timeout: Duration) -> Result<Reply> {
        if self
            .live
            .as_ref()
            .is_some_and(|l| l.served >= self.recycle_after)
        {
            self.stop();
        }
        if self.live.is_none() {
            self.live = Some(self.start()?);
        }
        let Some(live) = self.live.as_mut() else {
            return Ok(Reply::Died("worker not running".into()));
        };
        live.served += 1;
        let line = format!("{req}\n");
        if live.stdin.write_all(line.as_bytes()).is_err() || live.stdin.flush().is_err() {
            return Ok(self.died("worker exited before the request"));
        }
        match live.lines.recv_timeout(timeout) {
            Ok(text) => match serde_json::from_str(&text) {
                Ok(v) => Ok(Reply::Json(v)),
                Err(_) => {
                    self.stop();
                    Ok(Reply::Died(format!(
                        "worker wrote a non-JSON reply: {}",
                        text.chars().take(120).collect::<String>()
                    )))
                }
            },
            Err(RecvTimeoutError::Timeout) => {
                self.stop();
                Ok(Reply::Timeout)
            }
            Err(RecvTimeoutError::Disconnected) => Ok(self.died("worker died")),
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sh(script: &str, tag: &str) -> Worker {
        let log = std::env::temp_dir().join(format!(
            "modelrt-conformance-worker-{tag}-{}.log",
            std::process::id()
        ));
        Worker::new("sh", vec!["-c".into(), script.into()], vec![], log)
    }

    #[test]
    fn serves_requests_in_order_from_one_process() {
        // replies with a counter kept in the shell: proves one process served both requests
        let mut w = sh(
            "n=0; while read l; do n=$((n+1)); echo \"{\\\"n\\\": $n}\"; done",
            "order",
        );
        for want in 1..=3 {
            match w
                .request(&json!({"x": 1}), Duration::from_secs(10))
                .unwrap()
            {
                Reply::Json(v) => assert_eq!(v["n"], want),
                r => panic!("{r:?}"),
            }
        }
    }

    #[test]
    fn a_hung_request_times_out_and_the_next_request_gets_a_fresh_worker() {
        // the first process hangs on its first request; a restarted one answers
        let marker = std::env::temp_dir().join(format!("modelrt-cw-hang-{}", std::process::id()));
        let _ = std::fs::remove_file(&marker);
        let script = format!(
            "while read l; do if [ -e {m} ]; then echo '{{\"ok\": true}}'; else touch {m}; sleep 30; fi; done",
            m = marker.display()
        );
        let mut w = sh(&script, "hang");
        let r = w.request(&json!({}), Duration::from_millis(500)).unwrap();
        assert!(matches!(r, Reply::Timeout), "{r:?}");
        match w.request(&json!({}), Duration::from_secs(10)).unwrap() {
            Reply::Json(v) => assert_eq!(v["ok"], true),
            r => panic!("{r:?}"),
        }
        let _ = std::fs::remove_file(&marker);
    }

    #[test]
    fn a_dying_worker_is_reported_and_garbage_is_not_a_reply() {
        let mut w = sh("read l; kill -9 $$", "die");
        let r = w.request(&json!({}), Duration::from_secs(10)).unwrap();
        assert!(
            matches!(&r, Reply::Died(m) if m.contains("killed by a signal")),
            "{r:?}"
        );
        let mut w = sh("while read l; do echo 'Traceback (most'; done", "garbage");
        let r = w.request(&json!({}), Duration::from_secs(10)).unwrap();
        assert!(
            matches!(&r, Reply::Died(m) if m.contains("non-JSON")),
            "{r:?}"
        );
    }

    #[test]
    fn workers_are_recycled() {
        let mut w = sh(
            "read l; echo \"{\\\"pid\\\": $$}\"; read l; echo '{}'",
            "recycle",
        )
        .recycle_after(1);
        let pid = |r: Reply| match r {
            Reply::Json(v) => v["pid"].as_i64().unwrap(),
            r => panic!("{r:?}"),
        };
        let a = pid(w.request(&json!({}), Duration::from_secs(10)).unwrap());
        let b = pid(w.request(&json!({}), Duration::from_secs(10)).unwrap());
        assert_ne!(a, b);
    }
}
