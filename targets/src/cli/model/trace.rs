//! `modelrt bench --trace`: run the bundle once more, step by step, on a second CPU executor and write
//! the steps as a Chrome trace-event JSON (open in Perfetto), to a temporary file renamed over FILE.
use std::path::Path;

use anyhow::{bail, Context};
use modelrt_hal::target::Target;
use modelrt_targets::runner::cpu_threads;

use super::{alloc_outputs, parse_bundle, DeviceArgs};

/// Run the bundle once step by step on a second CPU executor and write the Chrome trace to `file`.
pub(super) fn write_trace(
    bytes: &[u8],
    path: &Path,
    inputs: &[Vec<u8>],
    dev: &DeviceArgs,
    file: &Path,
) -> anyhow::Result<usize> {
    use modelrt_core::profile::{record_steps, traced_run, write_chrome_trace};
    use modelrt_cpu::CpuDevice;
    // This second executor does not load through the registry: the same trust check as its load.
    if let Some(store) = dev.trust()? {
        store.check(bytes)?;
    }
    let b = parse_bundle(bytes, path)?;
    if b.multi().is_some() {
        bail!("--trace is not supported for multi-device bundles (bench reports each role's time instead)");
    }
    let on_cpu = matches!(b.body().target, Target::Cpu { .. })
        && dev
            .first_device()
            .spec()
            .is_none_or(|s| s.family == Some("cpu"));
    if !on_cpu {
        bail!("--trace is only supported on the CPU backend");
    }
    let device =
        CpuDevice::new(cpu_threads(&b, dev.threads)).context("cannot create the CPU device")?;
    let name = format!(
        "modelrt cpu ({}) {}",
        crate::cli::units::plural(device.threads() as u64, "thread"),
        path.display()
    );
    let mut exec = modelrt_core::Executor::load(b.clone(), device)
        .map_err(|e| anyhow::anyhow!("cannot load bundle: {e}"))?;
    let mut queues = Vec::new();
    record_steps(&b, exec.device_mut(), |q| queues.push(q))
        .map_err(|e| anyhow::anyhow!("cannot record step queues: {e}"))?;
    let ins: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
    let mut outputs = alloc_outputs(&b)?;
    let mut slices = Vec::new();
    // The first run warms caches and page tables; the second is the one written.
    for pass in 0..2 {
        slices.clear();
        let mut outs: Vec<&mut [u8]> = outputs.iter_mut().map(Vec::as_mut_slice).collect();
        traced_run(&b, exec.device_mut(), &mut queues, &ins, &mut outs, |s| {
            if pass == 1 {
                slices.push(s)
            }
        })
        .map_err(|e| anyhow::anyhow!("traced run failed: {e}"))?;
    }
    let mut doc = String::new();
    write_chrome_trace(&mut doc, &name, &slices)
        .map_err(|_| anyhow::anyhow!("cannot format the trace"))?;
    // Whole or not at all: a failed write leaves an earlier trace at `file` as it was.
    modelrt_targets::replace::replace_with(file, doc.as_bytes())
        .with_context(|| format!("cannot write {}", file.display()))?;
    Ok(slices.len())
}
