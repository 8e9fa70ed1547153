//! `cargo xtask bench usb-big`: a model at the scale of openpilot's big driving model over the USB GPU
//! path, measured once and written to the `usb-big` section of docs/bench.md. Heavy (minutes, several
//! GB of memory), so it is a command, never part of the tests.
//!
//! 1. `xtask/exporter/tools/make_big_model.py` writes the ONNX model into `target/usb-big/` (more than
//!    1 GB of float16 weights, the driving model's inputs; never committed);
//! 2. `cargo xtask compile --target amd-gfx1100 --no-emu-check` compiles it (wall time and peak RSS by
//!    `/usr/bin/time`; the emulator check would run 0.6 G multiply-adds per step on the RDNA3
//!    interpreter, so it is skipped, and the bundle says `outputs NOT checked`);
//! 3. `modelrt usb load-bench --transport emu` loads it on usb-emu twice, in fresh processes: the
//!    executor's load (weights through the packed copy-in pipeline) and tinygrad 0.14's per-buffer
//!    copy-in protocol replayed on the same bridge emulator and GPU model;
//! 4. the `usb-big` section of docs/bench.md gets the figures, and `modelrt usb copy-bench --sweep`
//!    adds MB/s in and out from 4 KiB to 1 GiB.
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use serde_json::Value;

/// The generated section of docs/bench.md.
pub const DOC_SECTION: &str = "usb-big";

/// Options of the run.
#[derive(Clone, Debug)]
pub struct UsbBigOptions {
    /// Width of the model's matrix products (12288: 1.16 GB of float16 weights).
    pub hidden: usize,
    /// Use the release `modelrt` binary (the debug one is slower at copying 1 GB).
    pub release: bool,
    /// Replace the section of docs/bench.md.
    pub write_doc: bool,
}

/// `/usr/bin/time -f "%M %e"`: run `cmd`, return (peak RSS KiB, wall seconds).
fn timed(cmd: &mut Command, what: &str, out: &Path) -> Result<(u64, f64)> {
    let report = out.with_extension("time");
    let prog = cmd.get_program().to_owned();
    let args: Vec<_> = cmd.get_args().map(|a| a.to_owned()).collect();
    let mut t = Command::new("/usr/bin/time");
    t.arg("-f")
        .arg("%M %e")
        .arg("-o")
        .arg(&report)
        .arg(prog)
        .args(args);
    if let Some(d) = cmd.get_current_dir() {
        t.current_dir(d);
    }
    for (k, v) in cmd.get_envs() {
        if let Some(v) = v {
            t.env(k, v);
        }
    }
    let status = t
        .status()
        .with_context(|| format!("cannot start {what} under /usr/bin/time"))?;
    if !status.success() {
        bail!("{what} failed ({status})");
    }
    let text = std::fs::read_to_string(&report)?;
    let mut it = text.split_whitespace().rev();
    let secs: f64 = it.next().context("no time")?.parse()?;
    let kib: u64 = it.next().context("no RSS")?.parse()?;
    Ok((kib, secs))
}

fn load_bench(modelrt: &Path, bundle: &Path, fw: &Path, protocol: &str) -> Result<Value> {
    let mut cmd = Command::new(modelrt);
    cmd.args([
        "usb",
        "load-bench",
        "--transport",
        "emu",
        "--json",
        "--protocol",
        protocol,
    ])
    .arg(bundle)
    .arg("--firmware-dir")
    .arg(fw);
    super::proc::run_json(
        &mut cmd,
        &format!("load-bench ({protocol})"),
        Duration::from_secs(3600),
    )
}

fn f(v: &Value, k: &str) -> f64 {
    v[k].as_f64().unwrap_or(f64::NAN)
}

/// Run everything; returns the Markdown of the section.
pub fn run(root: &Path, o: &UsbBigOptions) -> Result<String> {
    let dir = root.join("target/usb-big");
    std::fs::create_dir_all(&dir)?;
    let fw = root.join("target/amdgpu-firmware");
    if !fw.join("psp_13_0_0_sos.bin").exists() {
        bail!(
            "no AMD firmware in {} (run `cargo xtask firmware`)",
            fw.display()
        );
    }
    let py = crate::venv::ensure_venv(root)?;
    let onnx = dir.join("big.onnx");
    let bundle = dir.join("big.mrt");
    println!(
        "usb-big: generating {} (hidden {})",
        onnx.display(),
        o.hidden
    );
    let (gen_kib, gen_s) = timed(
        Command::new(&py)
            .arg(root.join("xtask/exporter/tools/make_big_model.py"))
            .arg("--out")
            .arg(&onnx)
            .arg("--hidden")
            .arg(o.hidden.to_string()),
        "the model generator",
        &dir.join("gen"),
    )?;
    let onnx_bytes = std::fs::metadata(&onnx)?.len();
    println!("usb-big: compiling for amd-gfx1100");
    let xtask = std::env::current_exe()?;
    let _ = std::fs::remove_file(&bundle);
    let (compile_kib, compile_s) = timed(
        Command::new(&xtask)
            .arg("compile")
            .arg(&onnx)
            .args(["--target", "amd-gfx1100", "--no-emu-check", "-o"])
            .arg(&bundle)
            .current_dir(root),
        "the compile",
        &dir.join("compile"),
    )?;
    let bundle_bytes = std::fs::metadata(&bundle)?.len();
    let modelrt = super::prepare::build_modelrt(root, o.release)?;
    println!("usb-big: loading on usb-emu ({})", modelrt.display());
    let ours = load_bench(&modelrt, &bundle, &fw, "modelrt")?;
    let tg = load_bench(&modelrt, &bundle, &fw, "tinygrad")?;
    println!("usb-big: copy sweep 4 KiB … 1 GiB");
    let sweep = Command::new(&modelrt)
        .args([
            "usb",
            "copy-bench",
            "--transport",
            "emu",
            "--sweep",
            "--firmware-dir",
        ])
        .arg(&fw)
        .output()
        .context("modelrt usb copy-bench --sweep")?;
    if !sweep.status.success() {
        bail!(
            "copy-bench --sweep failed: {}",
            String::from_utf8_lossy(&sweep.stderr)
        );
    }
    let sweep = String::from_utf8_lossy(&sweep.stdout).into_owned();
    println!("usb-big: per-step transfers of the vision-, policy- and dmonitor-like bundles");
    let mut steps = String::from(
        "| Model | Control / step | Bulk / step | Bytes out / in per step | Emulated step |\n|---|---|---|---|---|\n",
    );
    for model in ["vision", "policy", "dmonitor"] {
        let b = dir.join(format!("{model}-gfx1100.mrt"));
        // Compiled once (a later run reuses them: they do not depend on the big model).
        let status = if b.exists() {
            std::process::ExitStatus::default()
        } else {
            Command::new(&xtask)
                .arg("compile")
                .arg(root.join(format!("xtask/models/{model}.onnx")))
                .args(["--target", "amd-gfx1100", "--no-emu-check", "-o"])
                .arg(&b)
                .current_dir(root)
                .status()?
        };
        if !status.success() {
            bail!("compiling {model} for amd-gfx1100 failed");
        }
        let mut cmd = Command::new(&modelrt);
        cmd.arg("bench")
            .arg(&b)
            .args([
                "--device",
                "usb-emu",
                "--iters",
                "5",
                "--warmup",
                "1",
                "--json",
                "--firmware-dir",
            ])
            .arg(&fw);
        let v = super::proc::run_json(
            &mut cmd,
            &format!("bench {model}"),
            Duration::from_secs(1800),
        )?;
        steps.push_str(&format!(
            "| {model} | {} | {} | {:.1} KiB / {:.1} KiB | {:.2} ms |\n",
            v["usb_control_per_step"],
            v["usb_bulk_per_step"],
            v["usb_bytes_out_per_step"].as_f64().unwrap_or(f64::NAN) / 1024.0,
            v["usb_bytes_in_per_step"].as_f64().unwrap_or(f64::NAN) / 1024.0,
            f(&v, "median_ns") / 1e6,
        ));
    }
    let gib = |b: u64| b as f64 / 1e9;
    let row = |name: &str, v: &Value| {
        format!(
            "| {name} | {:.2} s | {:.1} s | {:.0} MiB | {:.3} GB | {} | {} | {:.2} | {:.2} |\n",
            f(v, "device_ms") / 1e3,
            f(v, "wall_load_ms") / 1e3,
            v["peak_rss_kib"].as_u64().unwrap_or(0) as f64 / 1024.0,
            v["bytes_out"].as_u64().unwrap_or(0) as f64 / 1e9,
            v["control"],
            v["bulk"],
            f(v, "control_per_mib"),
            f(v, "transfers_per_mib"),
        )
    };
    let mut md = String::new();
    md.push_str(&format!(
        "Generated by `cargo xtask bench usb-big` ({}; `modelrt` {} build). Model: \
         `make_big_model.py --hidden {}` — {:.2} GB ONNX, {} buffers holding {:.2} GB of weights, \
         openpilot 0.11's driving-model inputs.\n\n",
        today(),
        if o.release { "release" } else { "debug" },
        o.hidden,
        gib(onnx_bytes),
        ours["buffers"],
        gib(ours["weight_bytes"].as_u64().unwrap_or(0)),
    ));
    md.push_str(&format!(
        "| Step | Wall | Peak RSS |\n|---|---|---|\n| generate the ONNX model | {gen_s:.0} s | {:.0} MiB |\n\
         | `cargo xtask compile --target amd-gfx1100 --no-emu-check` ({:.2} GB bundle) | {compile_s:.0} s | {:.0} MiB |\n\n",
        gen_kib as f64 / 1024.0,
        gib(bundle_bytes),
        compile_kib as f64 / 1024.0,
    ));
    md.push_str(
        "Loading it on usb-emu (bridge emulator + Navi31 GPU model), each in a fresh process. \
         Load time is the emulated link clock (the bridge emulator's transfer costs: a model, not a \
         measurement); wall time is this shared 2-core host copying into the model's sparse VRAM; peak RSS includes that VRAM (the weights once) and the mapped bundle's pages. \
         Bytes and transfer counts are what the driver puts on the link and would be the same on \
         hardware; the times would not.\n\n\
         | Protocol | Load (emulated) | Wall | Peak RSS | Bytes out | Control | Bulk | Control / MiB | Transfers / MiB |\n\
         |---|---|---|---|---|---|---|---|---|\n",
    );
    md.push_str(&row(
        "modelrt (`Executor::load`: weights packed into the copy-in pipeline, kernels, schedule)",
        &ours,
    ));
    md.push_str(&row("tinygrad 0.14 copy-in replayed (one `_copyin` per weight buffer, fence read per chunk; weights only)", &tg));
    md.push_str(
        "\nPer steady-state step on usb-emu (`modelrt bench --device usb-emu --iters 5 --warmup 1`; \
         the reason for each transfer: docs/hw/amd-driver.md §5.2; counts hold on hardware, the \
         emulated step time does not):\n\n",
    );
    md.push_str(&steps);
    md.push_str("\n`modelrt usb copy-bench --transport emu --sweep` (MB/s emulated; ctl/bulk per MiB hold on hardware):\n\n```\n");
    md.push_str(&sweep);
    md.push_str("```\n");
    if o.write_doc {
        let doc = root.join("docs/bench.md");
        crate::doc_section::write(&doc, DOC_SECTION, &md)?;
        println!("updated {}", doc.display());
    }
    Ok(md)
}

/// Today's date (UTC), as `date -u +%F` prints it.
fn today() -> String {
    Command::new("date")
        .args(["-u", "+%F"])
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}
