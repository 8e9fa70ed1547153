//! `modelrt bench`: time repeated runs after a warm-up — min/median/max of step, enqueue and device
//! time, load time and peak RSS — as a human summary or one JSON object (`--json`, read by
//! `cargo xtask bench`), optionally with a Chrome trace of one run. `--steps N` times N consecutive
//! frames of a stateful pipeline (state reset after the warm-up, then carried frame to frame).
use std::path::PathBuf;

use anyhow::bail;
use clap::Args;
use modelrt_core::bundle::Bundle;
use modelrt_core::Timing;
use modelrt_targets::runner::{DeviceChoice, LoadedModel};
use serde_json::json;

use crate::cli::units;

use crate::cli::progress::{self, Interrupted};

use super::frames::FrameBuffers;
use super::steps::{read_inputs_or, StepInputs};
use super::{
    alloc_outputs, load_from, memory_line, open_bundle_file, parse_bundle, reference_inputs, trace,
    DeviceArgs,
};

/// One run on borrowed inputs.
fn run_step(
    model: &mut dyn LoadedModel<'_>,
    inputs: &[&[u8]],
    outputs: &mut [Vec<u8>],
) -> anyhow::Result<Timing> {
    let mut outs: Vec<&mut [u8]> = outputs.iter_mut().map(Vec::as_mut_slice).collect();
    model.run(inputs, &mut outs)
}

/// Statistics of a series of nanosecond samples.
fn stats(v: &mut [u64]) -> (u64, u64, u64) {
    v.sort_unstable();
    (v[0], v[v.len() / 2], v[v.len() - 1])
}

/// A `/proc/self/status` field in bytes (Linux; `None` elsewhere).
fn status_bytes(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024)
}

/// Peak resident set size of this process (`VmHWM`), if the platform reports it.
fn peak_rss_bytes() -> Option<u64> {
    status_bytes("VmHWM")
}

/// `modelrt bench` arguments.
#[derive(Args, Clone, Debug)]
pub struct BenchArgs {
    /// The bundle (.mrt).
    pub bundle: PathBuf,
    /// Timed iterations.
    #[arg(long, default_value_t = 100)]
    pub iters: usize,
    /// Untimed warm-up iterations.
    #[arg(long, default_value_t = 10)]
    pub warmup: usize,
    /// Time N consecutive frames of a stateful pipeline instead of --iters repeats: state is reset
    /// after the warm-up, so the frames run from the load-time state as after a fresh start, and
    /// each carries its state to the next.
    #[arg(long, value_name = "N", conflicts_with = "iters")]
    pub steps: Option<usize>,
    /// An input as NAME=FILE.npy (repeatable): with --steps N the file holds N tensors stacked on
    /// a new leading axis, one per frame; without it, the model's shape, the same every step.
    /// Inputs not given keep the default [default: the bundle's reference inputs, else zeros, every
    /// step].
    #[arg(short, long = "input", value_name = "NAME=FILE.npy")]
    pub inputs: Vec<String>,
    /// Hand each input to the model as a borrowed buffer read in place (CPU backend; other
    /// backends, and inputs the CPU cannot bind, are copied and the summary says why). Filling the
    /// buffer with the next frame is not timed, as a camera's write would not be.
    #[arg(long)]
    pub zero_copy: bool,
    /// Print one JSON object (step samples, stats, load time, peak RSS) instead of the summary.
    #[arg(long)]
    pub json: bool,
    /// Also write a Chrome trace-event JSON (Perfetto) of one step-by-step run (CPU backend).
    #[arg(long, value_name = "FILE.json")]
    pub trace: Option<PathBuf>,
    #[command(flatten)]
    pub device: DeviceArgs,
}

/// The same input bytes every step: the reference inputs, else zeros.
fn default_inputs(b: &Bundle<'_>) -> anyhow::Result<Vec<Vec<u8>>> {
    match reference_inputs(b) {
        Ok(i) => Ok(i),
        Err(_) => b
            .body()
            .inputs
            .iter()
            .map(|t| Ok(vec![0u8; t?.byte_len() as usize]))
            .collect(),
    }
}

/// Whose times an emulated device reports (for the "emulated" note; its registration says).
fn emulator(d: DeviceChoice) -> &'static str {
    d.spec()
        .and_then(|s| s.emulated)
        .unwrap_or("the emulated device's")
}

/// `modelrt bench`.
pub fn bench(a: &BenchArgs) -> anyhow::Result<()> {
    let (path, warmup, dev) = (a.bundle.as_path(), a.warmup, &a.device);
    let iters = a.steps.unwrap_or(a.iters);
    if iters == 0 {
        bail!(
            "{} must be at least 1",
            if a.steps.is_some() {
                "--steps"
            } else {
                "--iters"
            }
        );
    }
    // Load time covers opening (mapping or reading) the file, parsing and checking it (CRC,
    // validation) and loading it on the device.
    let t_load = std::time::Instant::now();
    let file = open_bundle_file(path, !dev.no_mmap)?;
    let b = parse_bundle(file.bytes(), path)?;
    let mut model = load_from(b, Some(&file), dev)?;
    let load_ns = t_load.elapsed().as_nanos() as u64;
    let b = model.bundle().clone();
    let one = default_inputs(&b)?;
    let frames = if a.inputs.is_empty() {
        StepInputs {
            data: one,
            steps: 1,
        }
    } else {
        read_inputs_or(&b, &a.inputs, a.steps, Some(&one))?
    };
    let inputs: Vec<Vec<u8>> = frames.step(0).iter().map(|s| s.to_vec()).collect();
    let mut outputs = alloc_outputs(model.bundle())?;
    let mut zero = a
        .zero_copy
        .then(|| FrameBuffers::new(&inputs.iter().map(Vec::len).collect::<Vec<_>>()));
    let mut step = |model: &mut dyn LoadedModel<'_>, k: usize, outputs: &mut [Vec<u8>]| {
        let frame = frames.step(k % frames.steps);
        match zero.as_mut() {
            Some(z) => z.run(model, &frame, outputs),
            None => run_step(model, &frame, outputs),
        }
    };
    progress::catch_interrupt()?;
    let bar = progress::bar((warmup + iters) as u64, "bench");
    for k in 0..warmup {
        if progress::stop_requested() {
            bar.finish_and_clear();
            return Err(Interrupted(format!(
                "during warm-up iteration {} of {warmup}: nothing was timed yet",
                k + 1
            ))
            .into());
        }
        step(model.as_mut(), k, &mut outputs)?;
        bar.inc(1);
    }
    if a.steps.is_some() {
        model.reset_state()?;
    }
    // Capped so a huge --iters does not reserve its samples up front.
    let reserve = iters.min(1 << 16);
    let (mut total, mut enq, mut devt) = (
        Vec::with_capacity(reserve),
        Vec::with_capacity(reserve),
        Vec::with_capacity(reserve),
    );
    let usb_before = model.usb_counts();
    let mut frames_report = Vec::new();
    for k in 0..iters {
        if progress::stop_requested() {
            break;
        }
        let t = step(model.as_mut(), k, &mut outputs)?;
        total.push(t.total_ns);
        enq.push(t.enqueue_ns);
        devt.push(t.device_ns);
        frames_report.extend(model.frame_report());
        bar.inc(1);
    }
    bar.finish_and_clear();
    // Ctrl-C during the timed steps: the statistics are those of the steps that completed.
    let (planned, iters) = (iters, total.len());
    let partial = iters < planned;
    if iters == 0 {
        return Err(Interrupted(format!(
            "before the first of {} completed: nothing was timed",
            units::plural(planned as u64, unit_word(a))
        ))
        .into());
    }
    let roles = super::roles::RoleSummary::of(&frames_report);
    // USB transfers of the timed steps, from the driver's counters (devices behind a bridge).
    let usb = usb_before
        .zip(model.usb_counts())
        .map(|(before, after)| after.since(&before));
    let device_name = model.device_name();
    let memory = model.memory();
    // Resident memory split while the model is loaded: anonymous (arena, copies) vs file-backed
    // (the mapped bundle's page-cache pages, shared and reclaimable).
    let (rss_anon, rss_file) = (status_bytes("RssAnon"), status_bytes("RssFile"));
    let modelled = !model.computes_outputs();
    // The emulated devices (qcom-emu, dsp-emu, usb-emu) model the hardware: every time and count
    // they report is labelled as modelled.
    let emulated = dev.any_emulated();
    drop(model);
    // Before the trace run, which loads a second executor.
    let peak_rss = peak_rss_bytes();
    // An interrupted bench skips the extra traced run.
    let traced = match a.trace.as_deref().filter(|_| !partial) {
        Some(out) => Some((
            out,
            trace::write_trace(file.bytes(), path, &inputs, dev, out)?,
        )),
        None => None,
    };
    let unit = if a.steps.is_some() { "frame" } else { "step" };
    let stopped = || {
        Interrupted(format!(
            "after {} of {planned}; the statistics above are partial",
            units::plural(iters as u64, unit_word(a))
        ))
    };
    let paths = zero.as_ref().map(FrameBuffers::describe);
    if a.json {
        let mut doc = json!({
            "device": device_name,
            "load_ns": load_ns,
            "iters": iters,
            "steps": a.steps,
            "warmup": warmup,
            "samples_ns": total.clone(),
            "peak_rss_bytes": peak_rss,
            "rss_anon_bytes": rss_anon,
            "rss_file_bytes": rss_file,
            "bundle_source": file.source().describe(),
            "weights_in_place_bytes": memory.as_ref().map(|m| m.weights.bound_bytes),
            "arena_bytes": memory.as_ref().map(|m| m.arena_bytes),
            "arena_resident_bytes": memory.as_ref().and_then(|m| m.arena_resident),
            "input_paths": paths,
            "emulated": emulated || modelled,
            "partial": partial,
            "planned_iters": planned,
        });
        if let Some(r) = &roles {
            doc["roles"] = r.json();
        }
        if let Some(c) = usb {
            let n = iters as u64;
            doc["usb_transfers_per_step"] = (c.transfers() / n).into();
            doc["usb_control_per_step"] = (c.control / n).into();
            doc["usb_bulk_per_step"] = (c.bulk / n).into();
            doc["usb_bytes_out_per_step"] = (c.bytes_out / n).into();
            doc["usb_bytes_in_per_step"] = (c.bytes_in / n).into();
        }
        for (label, v) in [
            ("", &mut total),
            ("enqueue_", &mut enq),
            ("device_", &mut devt),
        ] {
            let (lo, med, hi) = stats(v);
            doc[format!("{label}min_ns")] = lo.into();
            doc[format!("{label}median_ns")] = med.into();
            doc[format!("{label}max_ns")] = hi.into();
        }
        outln!("{doc}");
        return if partial {
            Err(stopped().into())
        } else {
            Ok(())
        };
    }
    outln!("device      {device_name}");
    if partial {
        outln!(
            "partial     interrupted after {} of {planned}: the statistics below cover those only",
            units::plural(iters as u64, unit_word(a))
        );
    }
    if modelled {
        outln!("note        this device models the hardware: its device times are modelled, not measured");
    }
    outln!(
        "load        {} (open, check and load; bundle {})",
        units::duration(load_ns),
        file.source().describe()
    );
    if let Some(m) = &memory {
        outln!("{}", memory_line(&b, m));
    }
    for (label, v) in [
        (unit, &mut total),
        ("enqueue", &mut enq),
        ("device", &mut devt),
    ] {
        let (lo, med, hi) = stats(v);
        outln!(
            "{label:11} min {}  median {}  max {}  ({}, {warmup} warm-up)",
            units::duration(lo),
            units::duration(med),
            units::duration(hi),
            if a.steps.is_some() {
                format!(
                    "{}, state carried",
                    units::plural(iters as u64, "consecutive frame")
                )
            } else {
                units::plural(iters as u64, "iter")
            }
        );
    }
    if emulated {
        outln!(
            "note        emulated: {unit}/enqueue/device times are {}, not hardware measurements",
            emulator(dev.first_device())
        );
    }
    if let Some(c) = usb {
        let n = iters as f64;
        outln!(
            "usb         {:.0} transfers per {unit} ({:.0} control, {:.0} bulk; {:.1} KiB out, {:.1} KiB in){}",
            c.transfers() as f64 / n,
            c.control as f64 / n,
            c.bulk as f64 / n,
            c.bytes_out as f64 / n / 1024.0,
            c.bytes_in as f64 / n / 1024.0,
            if emulated { " — emulated bridge" } else { "" }
        );
    }
    if let Some(r) = &roles {
        for line in r.lines(unit) {
            outln!("{line}");
        }
    }
    if let Some(paths) = paths {
        outln!("inputs      {}", paths.join(", "));
    }
    if let Some(rss) = peak_rss {
        let split = match (rss_anon, rss_file) {
            (Some(a), Some(f)) => format!(
                " (while loaded: {} anonymous, {} file-backed)",
                units::size(a),
                units::size(f)
            ),
            _ => String::new(),
        };
        outln!("peak rss    {}{split}", units::size(rss));
    }
    if let Some((file, n)) = traced {
        outln!(
            "trace       {} ({}; one submit per step, host clock — open in Perfetto)",
            file.display(),
            units::plural(n as u64, "slice")
        );
    }
    if partial {
        return Err(stopped().into());
    }
    Ok(())
}

/// What one timed step is called in messages: a frame with --steps, else an iteration.
fn unit_word(a: &BenchArgs) -> &'static str {
    if a.steps.is_some() {
        "frame"
    } else {
        "iteration"
    }
}
