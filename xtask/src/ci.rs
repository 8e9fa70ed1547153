//! `cargo xtask ci` (the whole suite, as CI runs it) and `cargo xtask demo` (the embedded demo
//! bundles).
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use modelrt_hal::target::TargetName;
use xtask::compile::compile;
use xtask::exporter::ExportArgs;
use xtask::setup::workspace_root;

/// The ONNX model behind `modelrt demo` (openpilot-vision-like: input `img` 1x12x128x256).
pub const DEMO_MODEL: &str = "xtask/models/vision.onnx";
/// Seed of the demo's embedded reference inputs.
pub const DEMO_SEED: u64 = 0;
/// (exporter target, committed bundle) pairs for the demo.
pub const DEMO_BUNDLES: &[(TargetName, &str)] = &[
    (TargetName::CpuX86_64, "targets/assets/demo-x86_64.mrt"),
    (TargetName::CpuAarch64, "targets/assets/demo-aarch64.mrt"),
];

fn step(name: &str, cmd: &mut Command) -> Result<()> {
    eprintln!("\n==> {name}");
    let t = Instant::now();
    let status = cmd
        .current_dir(workspace_root())
        .status()
        .with_context(|| format!("cannot run {name}"))?;
    eprintln!(
        "<== {name}: {} in {:.1} s",
        if status.success() { "ok" } else { "FAILED" },
        t.elapsed().as_secs_f64()
    );
    if !status.success() {
        bail!("{name} failed");
    }
    Ok(())
}

/// Run `cmds` at once (each with its output captured), print every output in order, fail if any failed.
fn parallel_steps(name: &str, cmds: Vec<Command>) -> Result<()> {
    eprintln!("\n==> {name}");
    let t = Instant::now();
    let dir = workspace_root().join("target/ci-logs");
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut children = Vec::new();
    for (i, mut c) in cmds.into_iter().enumerate() {
        // a file, not a pipe: a child never blocks on output nobody reads yet
        let log = dir.join(format!("parallel-{i}.log"));
        let f = std::fs::File::create(&log)
            .with_context(|| format!("cannot create {}", log.display()))?;
        let child = c
            .stdout(f.try_clone()?)
            .stderr(f)
            .spawn()
            .with_context(|| format!("cannot run {name}"))?;
        children.push((child, log));
    }
    let mut ok = true;
    for (mut child, log) in children {
        let status = child
            .wait()
            .with_context(|| format!("cannot wait for {name}"))?;
        eprint!("{}", std::fs::read_to_string(&log).unwrap_or_default());
        ok &= status.success();
    }
    eprintln!(
        "<== {name}: {} in {:.1} s",
        if ok { "ok" } else { "FAILED" },
        t.elapsed().as_secs_f64()
    );
    if !ok {
        bail!("{name} failed");
    }
    Ok(())
}

/// Where tests append one line per skipped test (`tests/src/skip.rs` reads the same variable).
const SKIP_LOG_ENV: &str = "MODELRT_SKIP_LOG";

/// Print how many tests skipped and why; any skip fails CI.
fn skip_summary(log: &Path) -> Result<()> {
    let text = match std::fs::read_to_string(log) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", log.display())),
    };
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    eprintln!("\n==> skipped tests: {}", lines.len());
    for l in &lines {
        eprintln!("    {l}");
    }
    if !lines.is_empty() {
        bail!(
            "{} test(s) skipped for a missing prerequisite (see {}); CI runs every test",
            lines.len(),
            log.display()
        );
    }
    Ok(())
}

fn cargo() -> Command {
    Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
}

/// Which tests `cargo test` runs: heavy tests carry `#[ignore = "heavy: ..."]` (docs/testing.md lists them and their
/// last full run); CI runs the rest, `--full` both, `--heavy-only` just those.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Tests {
    Subset,
    Full,
    HeavyOnly,
}

/// The workspace's `cargo test` with the environment every test expects (the venv's Python, no skips allowed).
fn cargo_test(
    python: &Path,
    skip_log: &Path,
    aarch64_modelrt: Option<&Path>,
    tests: Tests,
) -> Command {
    let mut cmd = cargo();
    cmd.args(["test", "--workspace", "--no-fail-fast"])
        .env("MODELRT_PYTHON", python)
        .env("MODELRT_REQUIRE_PYTHON", "1")
        .env(SKIP_LOG_ENV, skip_log);
    if let Some(bin) = aarch64_modelrt {
        cmd.env("MODELRT_AARCH64_BIN", bin);
    }
    match tests {
        Tests::Subset => {}
        Tests::Full => {
            cmd.args(["--", "--include-ignored"]);
        }
        Tests::HeavyOnly => {
            cmd.args(["--", "--ignored"]);
        }
    }
    cmd
}

/// Only the heavy tests (`cargo xtask ci --heavy-only`).
fn heavy_only(python: &Path) -> Result<()> {
    let t = Instant::now();
    eprintln!("\n==> cargo xtask dist --target aarch64-unknown-linux-gnu");
    let dist = xtask::dist::dist("aarch64-unknown-linux-gnu")?;
    let aarch64_modelrt = dist.dir.join("bin").join("modelrt");
    let skip_log = workspace_root().join("target/test-skips.log");
    let _ = std::fs::remove_file(&skip_log);
    let tests = step(
        "cargo test --workspace --no-fail-fast -- --ignored (the heavy tests)",
        &mut cargo_test(python, &skip_log, Some(&aarch64_modelrt), Tests::HeavyOnly),
    );
    let skips = skip_summary(&skip_log);
    tests?;
    skips?;
    eprintln!(
        "\nthe heavy tests passed in {:.0} s",
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The whole suite.
pub fn run(no_lint: bool, which: Tests) -> Result<()> {
    let t = Instant::now();
    let python = xtask::setup::ensure_all()?;
    if which == Tests::HeavyOnly {
        return heavy_only(&python);
    }
    if !no_lint {
        step(
            "cargo fmt --check",
            cargo().args(["fmt", "--all", "--", "--check"]),
        )?;
        step(
            "cargo clippy",
            cargo().args([
                "clippy",
                "--workspace",
                "--all-targets",
                "--",
                "-D",
                "warnings",
            ]),
        )?;
        // the exporter's Python: lint and format (xtask/exporter/ruff.toml; ruff is pinned in requirements.txt)
        step(
            "ruff check xtask/exporter targets/python",
            Command::new(&python).args([
                "-m",
                "ruff",
                "check",
                "--no-cache",
                "xtask/exporter",
                "targets/python",
            ]),
        )?;
        step(
            "ruff format --check xtask/exporter targets/python",
            Command::new(&python).args([
                "-m",
                "ruff",
                "format",
                "--check",
                "--no-cache",
                "xtask/exporter",
                "targets/python",
            ]),
        )?;
    }
    step(
        "no_std build of core+hal for aarch64-unknown-none",
        cargo().args([
            "build",
            "-p",
            "modelrt-core",
            "-p",
            "modelrt-hal",
            "--target",
            "aarch64-unknown-none",
        ]),
    )?;
    step(
        "no_std build of qcom's PM4 and a6xx parts for aarch64-unknown-none",
        cargo().args([
            "build",
            "-p",
            "modelrt-qcom",
            "--no-default-features",
            "--target",
            "aarch64-unknown-none",
        ]),
    )?;
    step(
        "no_std build with defmt logging",
        cargo().args([
            "build",
            "-p",
            "modelrt-core",
            "-p",
            "modelrt-hal",
            "--features",
            "modelrt-core/defmt",
            "--target",
            "aarch64-unknown-none",
        ]),
    )?;
    step(
        "no_std build of the USB-GPU crates' protocol cores (ASM24, PCIe, copy planning; AMD firmware headers and IP discovery; Navi31 flash) for aarch64-unknown-none",
        cargo().args([
            "build",
            "-p",
            "modelrt-asm24",
            "-p",
            "modelrt-amd",
            "-p",
            "modelrt-gpuflash",
            "--no-default-features",
            "--target",
            "aarch64-unknown-none",
        ]),
    )?;
    step(
        "real-hardware-only build of the USB-GPU crates (std, no emulator) with gpuflash",
        cargo().args([
            "build",
            "-p",
            "modelrt-asm24",
            "-p",
            "modelrt-amd",
            "-p",
            "modelrt-gpuflash",
            "--no-default-features",
            "--features",
            "std",
        ]),
    )?;
    eprintln!("\n==> cargo xtask dist --target aarch64-unknown-linux-gnu");
    let dist = xtask::dist::dist("aarch64-unknown-linux-gnu")?;
    let aarch64_modelrt = dist.dir.join("bin").join("modelrt");
    let skip_log = workspace_root().join("target/test-skips.log");
    let _ = std::fs::remove_file(&skip_log);
    let name = if which == Tests::Full {
        "cargo test --workspace --no-fail-fast -- --include-ignored (with the heavy tests)"
    } else {
        "cargo test --workspace --no-fail-fast (heavy tests left to `cargo xtask ci --full`: docs/testing.md)"
    };
    let tests = step(
        name,
        &mut cargo_test(&python, &skip_log, Some(&aarch64_modelrt), which),
    );
    let skips = skip_summary(&skip_log);
    tests?;
    skips?;
    // Two processes (the exporter's compiles are single-threaded Python) sharing the test classes: each claims the
    // next class from one list, the heaviest first (xtask/exporter/tests/shard.py). Each log is printed whole when
    // both have finished.
    let claims = workspace_root().join("target/ci-logs/shard-claims");
    let _ = std::fs::remove_dir_all(&claims);
    let worker = || {
        let mut cmd = xtask::exporter_python::command(&python);
        cmd.args(["-m", "tests.shard", "claim"])
            .arg(&claims)
            .current_dir(workspace_root().join("xtask/exporter"))
            .env("MODELRT_REQUIRE_PYTHON", "1");
        cmd
    };
    parallel_steps(
        "exporter unit tests (xtask/exporter/tests/shard.py: 2 processes sharing the classes)",
        vec![worker(), worker()],
    )?;
    step(
        "fuzz targets, 12 s each (core/fuzz/run.sh: stable libFuzzer; docs/fuzzing.md)",
        Command::new("bash")
            .args(["core/fuzz/run.sh", "--seconds", "12"])
            .current_dir(workspace_root()),
    )?;
    step(
        "Python API fuzzer, 12 s (targets/python/fuzz/run.sh: atheris; docs/fuzzing.md)",
        Command::new("bash")
            .args(["targets/python/fuzz/run.sh", "--seconds", "12"])
            .env("MODELRT_PYTHON", &python)
            .current_dir(workspace_root()),
    )?;
    eprintln!("\n==> ONNX conformance, CI subset (fails on WRONG, CRASH or a lost baseline PASS)");
    xtask::conformance::run(&xtask::conformance::Options::ci())?;
    eprintln!("\n==> footprint of the no_std core+hal (budget +10%)");
    xtask::footprint::run()?;
    eprintln!("\n==> benchmark harness (--quick: checks it runs; numbers not representative)");
    xtask::bench::run(&xtask::bench::BenchOptions::quick())?;
    eprintln!(
        "\nall CI steps passed in {:.0} s",
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Compile the demo bundle for `target` into `out`.
pub fn compile_demo(python: &Path, target: TargetName, out: &Path) -> Result<()> {
    let mut args = ExportArgs::onnx(workspace_root().join(DEMO_MODEL), target, PathBuf::new());
    args.reference = true;
    args.seed = Some(DEMO_SEED);
    compile(python, args, out)?;
    Ok(())
}

/// `cargo xtask demo [--check]`.
pub fn demo(check: bool) -> Result<()> {
    let python = xtask::venv::ensure_venv(&workspace_root())?;
    let mut stale = Vec::new();
    for (target, path) in DEMO_BUNDLES {
        let committed = workspace_root().join(path);
        if check {
            let fresh = workspace_root()
                .join("target")
                .join("demo-check")
                .join(format!("{target}.mrt"));
            compile_demo(&python, *target, &fresh)?;
            let a = std::fs::read(&fresh)?;
            let b = std::fs::read(&committed).unwrap_or_default();
            if a != b {
                stale.push(*path);
            }
        } else {
            compile_demo(&python, *target, &committed)?;
            println!("wrote {}", committed.display());
        }
    }
    if !stale.is_empty() {
        bail!(
            "embedded demo bundles are out of date: {} (run `cargo xtask demo`)",
            stale.join(", ")
        );
    }
    if check {
        println!("embedded demo bundles are up to date");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::skip_summary;

    #[test]
    fn skip_summary_fails_on_any_logged_skip_and_passes_without_a_log() {
        let dir = std::env::temp_dir().join(format!("xtask-skips-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join("skips.log");
        let _ = std::fs::remove_file(&log);
        assert!(skip_summary(&log).is_ok(), "no log file means no skips");
        std::fs::write(
            &log,
            "SKIPPED e2e_cpu::a: no python\nSKIPPED golden::b: no python\n",
        )
        .unwrap();
        let e = skip_summary(&log).unwrap_err().to_string();
        assert!(e.starts_with("2 test(s) skipped"), "{e}");
        std::fs::write(&log, "").unwrap();
        assert!(skip_summary(&log).is_ok(), "an empty log means no skips");
    }
}
