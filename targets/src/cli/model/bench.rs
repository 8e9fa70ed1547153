//! `modelrt bench`: time repeated runs after a warm-up — min/median/max of step, enqueue and device
//! time, load time and peak RSS — as a human summary or one JSON object (`--json`, read by
//! `cargo xtask bench`), optionally with a Chrome trace of one run.
use std::path::Path;

use anyhow::bail;
use modelrt_targets::runner::load;
use serde_json::json;

use super::{
    alloc_outputs, mib, ms, parse_bundle, read_bundle_file, reference_inputs, run_once, trace,
    DeviceArgs,
};

/// Statistics of a series of nanosecond samples.
fn stats(v: &mut [u64]) -> (u64, u64, u64) {
    v.sort_unstable();
    (v[0], v[v.len() / 2], v[v.len() - 1])
}

/// What `modelrt bench` should produce besides the timing.
#[derive(Clone, Copy, Debug, Default)]
pub struct BenchOutput<'a> {
    /// Print one JSON object (for `cargo xtask bench`) instead of the human summary.
    pub json: bool,
    /// Also write a Chrome trace-event JSON of one step-by-step run to this file.
    pub trace: Option<&'a Path>,
}

/// Peak resident set size of this process (Linux `VmHWM`), if the platform reports it.
fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024)
}

/// `modelrt bench`.
pub fn bench(
    path: &Path,
    iters: usize,
    warmup: usize,
    dev: DeviceArgs,
    out: BenchOutput<'_>,
) -> anyhow::Result<()> {
    if iters == 0 {
        bail!("--iters must be at least 1");
    }
    let bytes = read_bundle_file(path)?;
    let b = parse_bundle(&bytes, path)?;
    let inputs = match reference_inputs(&b) {
        Ok(i) => i,
        Err(_) => b
            .body()
            .inputs
            .iter()
            .map(|t| Ok(vec![0u8; t?.byte_len() as usize]))
            .collect::<anyhow::Result<_>>()?,
    };
    let t_load = std::time::Instant::now();
    let mut model = load(b, dev.options())?;
    let load_ns = t_load.elapsed().as_nanos() as u64;
    let mut outputs = alloc_outputs(model.bundle())?;
    for _ in 0..warmup {
        run_once(model.as_mut(), &inputs, &mut outputs)?;
    }
    let (mut total, mut enq, mut devt) = (
        Vec::with_capacity(iters),
        Vec::with_capacity(iters),
        Vec::with_capacity(iters),
    );
    for _ in 0..iters {
        let t = run_once(model.as_mut(), &inputs, &mut outputs)?;
        total.push(t.total_ns);
        enq.push(t.enqueue_ns);
        devt.push(t.device_ns);
    }
    let device_name = model.device_name();
    let modelled = !model.computes_outputs();
    drop(model);
    // Before the trace run, which loads a second executor.
    let peak_rss = peak_rss_bytes();
    let traced = match out.trace {
        Some(file) => Some((file, trace::write_trace(&bytes, path, &inputs, dev, file)?)),
        None => None,
    };
    if out.json {
        let mut doc = json!({
            "device": device_name,
            "load_ns": load_ns,
            "iters": iters,
            "warmup": warmup,
            "samples_ns": total.clone(),
            "peak_rss_bytes": peak_rss,
        });
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
        println!("{doc}");
        return Ok(());
    }
    println!("device      {device_name}");
    if modelled {
        println!("note        this device models the hardware: its device times are modelled, not measured");
    }
    println!("load        {}", ms(load_ns));
    for (label, v) in [
        ("step", &mut total),
        ("enqueue", &mut enq),
        ("device", &mut devt),
    ] {
        let (lo, med, hi) = stats(v);
        println!(
            "{label:11} min {}  median {}  max {}  ({iters} iters, {warmup} warm-up)",
            ms(lo),
            ms(med),
            ms(hi)
        );
    }
    if let Some(rss) = peak_rss {
        println!("peak rss    {}", mib(rss));
    }
    if let Some((file, n)) = traced {
        println!(
            "trace       {} ({n} slices; one submit per step, host clock — open in Perfetto)",
            file.display()
        );
    }
    Ok(())
}
