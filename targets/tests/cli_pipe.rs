//! A closed standard output (`modelrt info X.mrt | head -1`) ends every `modelrt` command quietly:
//! exit status 141 (a SIGPIPE death, as shells report it) or 0, nothing on stderr — never a panic.
//! Each command is spawned with its stdout pipe's read end closed before it writes anything.
mod cli_common;

use std::process::{Command, Stdio};

use cli_common::*;

/// Run `modelrt args` with stdout a pipe nobody reads (closed at once); (exit code, stderr).
fn closed_stdout(args: &[&str]) -> (Option<i32>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_modelrt"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("modelrt starts");
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("modelrt ends");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn every_command_ends_quietly_on_a_closed_stdout() {
    let dir = scratch("pipe");
    let demo = asset(if cfg!(target_arch = "aarch64") {
        "demo-aarch64.mrt"
    } else {
        "demo-x86_64.mrt"
    });
    let demo = demo.to_str().unwrap();
    let bundle = write(&dir, "copy.mrt", &copy_bundle(host_cpu(), ["y", "w"], &[]));
    let input = input_arg(&dir);
    let commands: [&[&str]; 9] = [
        &["info", demo],
        &["info", demo, "--verbose"],
        &["verify", demo],
        &["run", &bundle, "-i", &input],
        &["bench", &bundle, "--iters", "2", "--warmup", "0"],
        &["bench", &bundle, "--iters", "2", "--json"],
        &["demo"],
        &["--help"],
        &["usb", "list", "--transport", "emu"],
    ];
    for args in commands {
        let (code, err) = closed_stdout(args);
        assert!(
            matches!(code, Some(0) | Some(141)),
            "{args:?}: exit {code:?}, stderr: {err}"
        );
        assert!(err.is_empty(), "{args:?}: stderr: {err}");
    }
}
