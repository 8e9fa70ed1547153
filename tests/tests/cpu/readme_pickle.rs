//! The README's pickle example, run as written: the modeld section's `cargo xtask pickle` writes a
//! compile_modeld-style pickle from `xtask/models/modeld_pipeline.py:build` (before, the README converted a
//! `driving_tinygrad.pkl` that nothing a user has could make), `cargo xtask convert` turns it into `modeld.mrt` with the
//! three queues as state, `modelrt info` lists them and `modelrt run --steps 20` runs it. The commands are read from
//! README.md itself (continuation lines joined, comments dropped) and run in a scratch directory that sees the
//! repository's `xtask/` at the same relative path; `cargo xtask` is this workspace's xtask binary and `modelrt` its
//! modelrt binary. The `.npy` files the `run` line names are made here from the bundle's own input declarations.
use std::path::{Path, PathBuf};
use std::process::Command;

use modelrt_core::bundle::Bundle;
use modelrt_hal::target::DType;
use modelrt_targets::npy;
use modelrt_tests::{python, root, xtask_bin};

const STEPS: u64 = 20;

/// The modeld section's shell block of README.md, one command per entry.
fn readme_commands() -> Vec<String> {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let section = readme
        .split("### openpilot's modeld pipeline")
        .nth(1)
        .expect("README has the modeld pipeline section");
    let block = section
        .split("```sh\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("the section has a shell block");
    let mut out: Vec<String> = Vec::new();
    let mut pending = String::new();
    for line in block.lines() {
        let line = line.split(" #").next().unwrap_or("").trim_end();
        if let Some(cont) = line.strip_suffix('\\') {
            pending.push_str(cont);
            pending.push(' ');
            continue;
        }
        pending.push_str(line.trim());
        if !pending.trim().is_empty() {
            out.push(pending.split_whitespace().collect::<Vec<_>>().join(" "));
        }
        pending.clear();
    }
    out
}

fn run(dir: &Path, line: &str, xtask: &Path, modelrt: &Path) -> String {
    let words: Vec<&str> = line.split(' ').collect();
    let (prog, args) = match words.as_slice() {
        ["cargo", "xtask", rest @ ..] => (xtask, rest),
        ["modelrt", rest @ ..] => (modelrt, rest),
        _ => panic!("unexpected README command: {line}"),
    };
    let o = Command::new(prog)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("{line}: {e}"));
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success(),
        "`{line}` failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    stdout
}

/// Input files for the README's `run` line: `STEPS` frames of each input of `bundle`, zeros except a 3x3 transform,
/// which is the identity (a zero transform would divide by zero in the warp).
fn write_inputs(dir: &Path, bundle: &Path, files: &[(&str, &str)]) {
    let bytes = std::fs::read(bundle).unwrap();
    let b = Bundle::parse(&bytes).unwrap();
    for (name, file) in files {
        let i = b
            .input_index(name)
            .unwrap_or_else(|| panic!("modeld.mrt has no input '{name}'"));
        let t = b.body().inputs.get(i).unwrap();
        let one = t.byte_len() as usize;
        let mut frame = vec![0u8; one];
        if t.numel() == 9 && t.dtype == DType::F32 {
            for k in [0, 4, 8] {
                frame[k * 4..k * 4 + 4].copy_from_slice(&1f32.to_le_bytes());
            }
        }
        let mut shape = vec![STEPS];
        shape.extend(t.shape.iter());
        npy::write_file(
            &dir.join(file),
            t.dtype,
            &shape,
            &frame.repeat(STEPS as usize),
        )
        .unwrap();
    }
}

#[test]
fn the_readme_pickle_example_runs_as_written() {
    let Some(_py) = python() else { return };
    let cmds = readme_commands();
    let pick = |prefix: &str| -> String {
        cmds.iter()
            .find(|c| c.starts_with(prefix))
            .unwrap_or_else(|| panic!("README's modeld block has no `{prefix}` line: {cmds:?}"))
            .clone()
    };
    let pickle = pick("cargo xtask pickle ");
    let convert = pick("cargo xtask convert ");
    let info = pick("modelrt info modeld.mrt");
    let run_line = pick("modelrt run modeld.mrt");
    assert!(convert.contains("driving_tinygrad.pkl") && pickle.contains("-o driving_tinygrad.pkl"));

    let dir = root().join("target/readme-pickle");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::os::unix::fs::symlink(root().join("xtask"), dir.join("xtask")).unwrap();
    let modelrt = xtask::bench::build_modelrt(&root(), false).unwrap();
    let xtask = xtask_bin(&modelrt);

    run(&dir, &pickle, &xtask, &modelrt);
    assert!(dir.join("driving_tinygrad.pkl").is_file());
    run(&dir, &convert, &xtask, &modelrt);
    let listing = run(&dir, &info, &xtask, &modelrt);
    for q in ["state:img_q", "state:feat_q", "state:desire_q"] {
        assert!(
            listing.contains(q),
            "`{info}` does not list {q}:\n{listing}"
        );
    }
    write_inputs(
        &dir,
        &dir.join("modeld.mrt"),
        &[
            ("frame", "frames.npy"),
            ("tfm", "tfms.npy"),
            ("desire", "desires.npy"),
            ("traffic_convention", "tc.npy"),
        ],
    );
    run(&dir, &run_line, &xtask, &modelrt);
    for (sub, stacked) in [("out", true), ("state", false)] {
        let files: Vec<PathBuf> = std::fs::read_dir(dir.join(sub))
            .unwrap_or_else(|e| panic!("{sub}/: {e}"))
            .map(|e| e.unwrap().path())
            .collect();
        assert!(!files.is_empty(), "`{run_line}` wrote nothing to {sub}/");
        for p in files {
            let a = npy::parse(&std::fs::read(&p).unwrap()).unwrap();
            if stacked {
                assert_eq!(a.shape[0], STEPS, "{}: one row per step", p.display());
            }
        }
    }
    std::fs::remove_dir_all(&dir).unwrap(); // 75 MB of frames
}
