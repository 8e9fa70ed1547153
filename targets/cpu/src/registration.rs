//! The `cpu` device as the platform registry lists it ([`CPU`]): a [`CpuDevice`] with the worker count
//! [`crate::threads`] picks, weights bound in place from the bundle mapping when there is one, frames
//! read in place ([`crate::frame::cpu_frame`]) and a memory report.
use anyhow::Context;
use modelrt_core::bundle::Bundle;
use modelrt_platform::device::{always, serves_all};
use modelrt_platform::{DeviceSpec, Loaded, LoadedModel, MemoryReport, OpenRequest, WeightBinding};

use crate::frame::cpu_frame;
use crate::threads::cpu_threads;
use crate::CpuDevice;

/// The host CPU.
pub static CPU: DeviceSpec = DeviceSpec {
    name: "cpu",
    help: "Host CPU (tinygrad CLANG kernels)",
    family: Some("cpu"),
    emulated: None,
    hidden: false,
    serves: serves_all,
    available: always,
    open,
};

fn memory(dev: &mut CpuDevice, weights: &WeightBinding) -> MemoryReport {
    MemoryReport {
        arena_bytes: dev.arena_size(),
        arena_resident: dev.arena_resident_bytes(),
        weights: weights.clone(),
    }
}

fn open<'b>(
    bundle: Bundle<'b>,
    req: &OpenRequest<'_>,
) -> anyhow::Result<Box<dyn LoadedModel<'b> + 'b>> {
    let mut dev = CpuDevice::new(cpu_threads(&bundle, req.threads))
        .context("cannot create the CPU device")?;
    let weights = match req.map {
        Some(m) => dev
            .bind_weights(&bundle, m)
            .context("cannot bind the weights in place")?,
        None => WeightBinding::default(),
    };
    let n = dev.threads();
    let name = format!("cpu ({n} {})", if n == 1 { "thread" } else { "threads" });
    Ok(Loaded::new(bundle, dev, name, true)?
        .with_frame(cpu_frame)
        .with_memory(memory, weights)
        .boxed())
}
