//! A closed stdout for `cargo xtask` (`cargo xtask compile … | head -0`) ends the program quietly
//! with the conventional status 141 (128 + SIGPIPE), not a "failed printing to stdout" panic (exit 101). The real
//! binary compiles a small model with its stdout on a pipe whose reader is already gone.
use std::path::Path;
use std::process::{Command, Stdio};

#[path = "../../tests/src/skip.rs"]
mod skip;

#[test]
fn a_closed_stdout_ends_quietly() {
    // the binary runs the exporter with the workspace's venv
    if skip::exporter_python().is_none() {
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = root.join("target/e2e/closed-pipe");
    std::fs::create_dir_all(&out).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .current_dir(&root)
        .args([
            "compile",
            "xtask/models/policy.onnx",
            "--target",
            "cpu-x86_64",
            "-o",
        ])
        .arg(out.join("policy.mrt"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take()); // the reader goes away before anything is printed
    let o = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(o.status.code(), Some(141), "{stderr}");
    // the work itself was done: the bundle was written before the closing line was printed
    assert!(out.join("policy.mrt").is_file());
}
