//! Model subcommands of `modelrt` — `info`, `run`, `verify`, `bench` (and `demo`, which verifies) — one
//! module each; this module holds what they share: the device arguments, opening a bundle file
//! (mapped read-only, see `modelrt_targets::bundle_file`), loading it, and running a loaded model
//! once on owned buffers.
use std::path::Path;

use anyhow::Context;
use clap::Args;
use modelrt_core::bundle::Bundle;
use modelrt_core::Timing;

use modelrt_targets::bundle_file::BundleFile;
use modelrt_targets::runner::{load_mapped, DeviceChoice, LoadOptions, LoadedModel};

mod bench;
mod frames;
mod info;
mod run;
mod steps;
mod trace;
mod verify;

pub use bench::{bench, BenchArgs};
pub use info::info;
pub use run::{run, RunArgs};
pub use verify::{verify_bytes, verify_file};

/// Where and how to run.
#[derive(Args, Clone, Copy, Debug)]
pub struct DeviceArgs {
    /// Backend to run on.
    #[arg(long, value_enum, default_value_t = DeviceChoice::Auto)]
    pub device: DeviceChoice,
    /// CPU worker threads (0 = as many as the kernels were split into, capped by this machine's cores).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// Read the bundle file into memory and copy its weights into the device arena instead of
    /// mapping the file read-only and reading weights in place (for files that may be rewritten
    /// while modelrt runs them, and for comparison).
    #[arg(long)]
    pub no_mmap: bool,
}

impl DeviceArgs {
    fn options(&self) -> LoadOptions {
        LoadOptions {
            device: self.device,
            threads: self.threads,
        }
    }
}

/// Open a bundle file: mapped read-only when it is a regular file and `map` is set, else read.
pub fn open_bundle_file(path: &Path, map: bool) -> anyhow::Result<BundleFile> {
    BundleFile::open(path, map)
}

/// Load `b`, parsed from `file`'s bytes (or from embedded bytes when `file` is `None`).
fn load_from<'b>(
    b: Bundle<'b>,
    file: Option<&BundleFile>,
    dev: &DeviceArgs,
) -> anyhow::Result<Box<dyn LoadedModel<'b> + 'b>> {
    load_mapped(b, file.and_then(BundleFile::mapping), dev.options())
}

/// Parse bundle bytes, naming the file in the error.
pub fn parse_bundle<'a>(bytes: &'a [u8], path: &Path) -> anyhow::Result<Bundle<'a>> {
    Bundle::parse(bytes).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

/// `[1x12x128x256]`.
fn shape_str(shape: &[u64]) -> String {
    let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
    format!("[{}]", dims.join("x"))
}

/// `weights     N in place (X MiB), M copied; arena R of A resident` for a CPU load.
fn memory_line(m: &modelrt_targets::runner::MemoryReport) -> String {
    let resident = m.arena_resident.map_or_else(|| "unknown".to_string(), mib);
    format!(
        "weights     {} read in place from the bundle file ({}), {} copied; arena {} resident of {}",
        m.weights.bound,
        mib(m.weights.bound_bytes),
        m.weights.copied.len(),
        resident,
        mib(m.arena_bytes)
    )
}

fn mib(n: u64) -> String {
    format!("{:.2} MiB", n as f64 / (1024.0 * 1024.0))
}

fn ms(ns: u64) -> String {
    format!("{:.3} ms", ns as f64 / 1e6)
}

/// Zeroed output buffers in the bundle's output order.
fn alloc_outputs(b: &Bundle<'_>) -> anyhow::Result<Vec<Vec<u8>>> {
    b.body()
        .outputs
        .iter()
        .map(|t| Ok(vec![0u8; t?.byte_len() as usize]))
        .collect()
}

fn run_once(
    model: &mut dyn LoadedModel<'_>,
    inputs: &[Vec<u8>],
    outputs: &mut [Vec<u8>],
) -> anyhow::Result<Timing> {
    let ins: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
    let mut outs: Vec<&mut [u8]> = outputs.iter_mut().map(Vec::as_mut_slice).collect();
    model.run(&ins, &mut outs)
}

/// The bundle's embedded reference inputs.
fn reference_inputs(b: &Bundle<'_>) -> anyhow::Result<Vec<Vec<u8>>> {
    let r = b
        .body()
        .reference
        .context("this bundle has no embedded reference (compile it with --reference)")?;
    r.inputs.iter().map(|t| Ok(t?.data.to_vec())).collect()
}
