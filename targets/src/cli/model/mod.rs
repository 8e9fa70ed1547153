//! Model subcommands of `modelrt` — `info`, `run`, `verify`, `bench` (and `demo`, which verifies) — one
//! module each; this module holds what they share: the device arguments, opening a bundle file
//! (mapped read-only, see `modelrt_targets::bundle_file`), loading it, and running a loaded model
//! once on owned buffers.
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;
use modelrt_core::bundle::Bundle;
use modelrt_core::Timing;

use modelrt_amd::platform::{AmdLoadProgress, AmdOptions};
use modelrt_targets::bundle_file::BundleFile;
use modelrt_targets::registry::REGISTRY;
use modelrt_targets::runner::{
    load_mapped, DeviceChoice, DeviceOptions, LoadOptions, LoadedModel, TrustStore,
};

use crate::cli::units;

mod bench;
mod files;
mod frames;
mod info;
mod roles;
mod run;
mod steps;
mod summary;
mod trace;
mod verify;

pub use bench::{bench, BenchArgs};
pub use info::info;
pub use run::{run, RunArgs};
pub use verify::{verify_bytes, verify_file};

/// Where and how to run.
#[derive(Args, Clone, Debug)]
pub struct DeviceArgs {
    /// Backend to run on; a multi-device bundle takes one per role in role order, comma-separated
    /// (`qcom-emu,usb-emu`; `auto` picks each role's device).
    #[arg(long, default_value = "auto", value_delimiter = ',', value_parser = device_parser())]
    pub device: Vec<DeviceChoice>,
    /// CPU worker threads (0 = as many as the kernels were split into, capped by this machine's cores).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// Read the bundle file into memory and copy its weights into the device arena instead of
    /// mapping the file read-only and reading weights in place (for files that may be rewritten
    /// while modelrt runs them, and for comparison).
    #[arg(long)]
    pub no_mmap: bool,
    /// Directory with the amdgpu firmware for --device usb|usb-emu [default: $MODELRT_AMD_FIRMWARE_DIR,
    /// else /lib/firmware/amdgpu].
    #[arg(long, value_name = "DIR")]
    pub firmware_dir: Option<PathBuf>,
    /// Load only bundles signed by one of these Ed25519 public keys: a `.pub` key file, or a
    /// directory of them (repeatable) [default: $MODELRT_TRUSTED_KEYS, a `:`-separated list; unset:
    /// signatures are not checked]. An unsigned, foreign-signed or altered bundle is refused before
    /// any of its code is mapped or run (docs/signing.md).
    #[arg(long, value_name = "FILE|DIR")]
    pub trusted_keys: Vec<PathBuf>,
}

/// `--device`'s values: `auto` and every registered device, with the help its registration gives.
fn device_parser() -> impl clap::builder::TypedValueParser<Value = DeviceChoice> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    let values = std::iter::once(
        PossibleValue::new("auto").help("The backend the bundle's target calls for"),
    )
    .chain(
        REGISTRY
            .devices()
            .iter()
            .map(|d| PossibleValue::new(d.name).help(d.help).hide(d.hidden)),
    );
    // Only listed names get through the parser, so `parse` cannot fail here.
    PossibleValuesParser::new(values).map(|s| REGISTRY.parse(&s).unwrap_or_default())
}

impl DeviceArgs {
    /// The first (for a single-target bundle: the only) device asked for.
    pub fn first_device(&self) -> DeviceChoice {
        self.device.first().copied().unwrap_or_default()
    }

    /// Whether any device asked for is a software model (its times are modelled).
    pub fn any_emulated(&self) -> bool {
        self.device.iter().any(|d| d.is_emulated())
    }

    fn options(&self) -> anyhow::Result<LoadOptions> {
        Ok(LoadOptions {
            device: self.first_device(),
            roles: if self.device.len() > 1 {
                self.device.clone()
            } else {
                Vec::new()
            },
            threads: self.threads,
            options: load_progress(DeviceOptions::default().with(AmdOptions {
                firmware_dir: self.firmware_dir.clone(),
                option_name: Some(modelrt_amd::platform::CLI_OPTION),
            })),
            trusted_keys: self.trust()?,
        })
    }

    /// The trust store `--trusted-keys` (else `MODELRT_TRUSTED_KEYS`) names, if any.
    fn trust(&self) -> anyhow::Result<Option<TrustStore>> {
        TrustStore::from_paths_or_env(&self.trusted_keys)
    }
}

/// `options` with a progress bar on stderr for the weights' upload, when stderr is a terminal (the
/// AMD devices stream weights through the bridge; other devices ignore the option).
fn load_progress(options: DeviceOptions) -> DeviceOptions {
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() {
        return options;
    }
    let bar: std::sync::Mutex<Option<indicatif::ProgressBar>> = std::sync::Mutex::new(None);
    options.with(AmdLoadProgress(std::sync::Arc::new(move |sent, total| {
        let mut bar = bar.lock().unwrap_or_else(|e| e.into_inner());
        let b = bar.get_or_insert_with(|| {
            let b = indicatif::ProgressBar::new(total);
            b.set_style(
                indicatif::ProgressStyle::with_template(
                    "weights → VRAM {bar:40} {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec}",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            b
        });
        b.set_position(sent);
        if sent >= total {
            b.finish_and_clear();
        }
    })))
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
    warn_threads(&b, dev);
    load_mapped(b, file.and_then(BundleFile::mapping), dev.options()?)
}

/// Warn (on stderr) when `--threads` cannot do what it says: more threads than this machine has
/// cores, or a device that does not use host threads at all.
fn warn_threads(b: &Bundle<'_>, dev: &DeviceArgs) {
    if dev.threads == 0 {
        return;
    }
    if b.multi().is_some() {
        return;
    }
    if let Ok(spec) = REGISTRY.resolve(dev.first_device(), &b.body().target) {
        if spec.family != Some("cpu") {
            eprintln!(
                "warning: --threads sets the cpu device's worker threads; --device {} does not use it",
                spec.name
            );
            return;
        }
    }
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    if dev.threads > cores {
        eprintln!(
            "warning: --threads {} is more than this machine's {}: the extra threads only share them (--threads 0 picks a count that fits)",
            dev.threads,
            units::plural(cores as u64, "core")
        );
    }
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

/// `weights     ...; arena R resident of A` for a CPU load of `b`: how the weights reached the arena.
fn memory_line(b: &Bundle<'_>, m: &modelrt_targets::runner::MemoryReport) -> String {
    let resident = m
        .arena_resident
        .map_or_else(|| "unknown".to_string(), units::size);
    let (mut count, mut bytes) = (0usize, 0u64);
    for d in b.body().buffers.iter().flatten() {
        if d.kind == modelrt_core::bundle::BufferKind::Weight {
            count += 1;
            bytes += d.size;
        }
    }
    let (bound, copied) = (m.weights.bound, m.weights.copied.len());
    let weights = if count == 0 {
        "none in this bundle".to_string()
    } else if bound == 0 && copied == 0 {
        // --no-mmap (or embedded bytes): nothing was bound, every weight was copied at load.
        format!(
            "{} ({}) copied into the arena at load (bundle read into memory, not mapped)",
            units::plural(count as u64, "buffer"),
            units::size(bytes)
        )
    } else {
        format!(
            "{bound} read in place from the bundle file ({}), {copied} copied",
            units::size(m.weights.bound_bytes),
        )
    };
    format!(
        "weights     {weights}; arena {resident} resident of {}",
        units::size(m.arena_bytes)
    )
}

/// ` — emulated: ...` after a timing line of an emulated device (empty for others): every modelled
/// time says so.
fn emulated_note(dev: &DeviceArgs) -> &'static str {
    if dev.any_emulated() {
        " — emulated: modelled times, not hardware measurements"
    } else {
        ""
    }
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

/// Why a bundle cannot be verified, and what works instead.
pub(super) const NO_REFERENCE: &str = "this bundle has no embedded reference to verify against \
(`cargo xtask compile MODEL.onnx --target ... --reference` embeds one; `cargo xtask convert` bundles have none): \
check it with `modelrt run BUNDLE -i NAME=FILE.npy -o DIR` against outputs you trust";

/// The bundle's embedded reference inputs.
fn reference_inputs(b: &Bundle<'_>) -> anyhow::Result<Vec<Vec<u8>>> {
    let r = b.body().reference.context(NO_REFERENCE)?;
    r.inputs.iter().map(|t| Ok(t?.data.to_vec())).collect()
}
