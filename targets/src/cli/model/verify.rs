//! `modelrt verify` (and the verifying half of `modelrt demo`): run the bundle's embedded reference
//! inputs and compare every output with the embedded expected outputs within the bundle's tolerances.
use std::path::Path;

use anyhow::{bail, Context};
use modelrt_core::bundle::Bundle;
use modelrt_core::verify::{compare_reference, reference_tolerance};
use modelrt_targets::bundle_file::BundleFile;

use crate::cli::progress::{self, Interrupted};
use crate::cli::units;

use super::summary::print_output_summary;
use super::{alloc_outputs, load_from, parse_bundle, reference_inputs, run_once, DeviceArgs};

/// Check outputs against the embedded reference; prints one line per output. Returns whether all pass.
fn check_reference(b: &Bundle<'_>, outputs: &[Vec<u8>]) -> anyhow::Result<bool> {
    let r = b.body().reference.context(super::NO_REFERENCE)?;
    let mut all = true;
    for ((t, want), got) in b.body().outputs.iter().zip(r.outputs.iter()).zip(outputs) {
        let (t, want) = (t?, want?);
        // the recorded tolerance, raised for outputs narrower than float32 (core/src/verify.rs)
        let c = compare_reference(t.dtype, got, want.data, r.atol as f64, r.rtol as f64);
        let (atol, rtol) = reference_tolerance(t.dtype, r.atol as f64, r.rtol as f64);
        all &= c.ok();
        outln!(
            "verify {}: {} — max abs err {:.3e}, max rel err {:.3e}, {} of {} outside atol {} rtol {}",
            t.name,
            if c.ok() { "ok" } else { "FAILED" },
            c.max_abs,
            c.max_rel,
            c.mismatches,
            c.count,
            units::tolerance(atol as f32),
            units::tolerance(rtol as f32)
        );
    }
    Ok(all)
}

/// `modelrt verify` of an opened bundle file. Errors if verification fails.
pub fn verify_file(file: &BundleFile, path: &Path, dev: &DeviceArgs) -> anyhow::Result<()> {
    outln!("bundle      {}", file.source().describe());
    verify_in(file.bytes(), Some(file), path, dev, false)
}

/// The verification half of `demo` (embedded bytes). Errors if verification fails.
pub fn verify_bytes(
    bytes: &[u8],
    path: &Path,
    dev: &DeviceArgs,
    summary: bool,
) -> anyhow::Result<()> {
    verify_in(bytes, None, path, dev, summary)
}

fn verify_in(
    bytes: &[u8],
    file: Option<&BundleFile>,
    path: &Path,
    dev: &DeviceArgs,
    summary: bool,
) -> anyhow::Result<()> {
    let b = parse_bundle(bytes, path)?;
    let inputs = reference_inputs(&b)?;
    let mut model = load_from(b, file, dev)?;
    outln!("device      {}", model.device_name());
    if let Some(m) = model.memory() {
        outln!("{}", super::memory_line(model.bundle(), &m));
    }
    let mut outputs = alloc_outputs(model.bundle())?;
    progress::catch_interrupt()?;
    let bar = progress::bar(2, "verify (reference run, then a warm run)");
    let t = run_once(model.as_mut(), &inputs, &mut outputs)?;
    bar.inc(1);
    if !model.computes_outputs() {
        bail!(
            "{}: the command streams were validated, but this device executes no kernels, so the outputs cannot be verified",
            model.device_name()
        );
    }
    if summary {
        print_output_summary(model.bundle(), &outputs)?;
    }
    let ok = check_reference(model.bundle(), &outputs)?;
    if progress::stop_requested() {
        bar.finish_and_clear();
        outln!(
            "timing      first run {} (partial: interrupted before the warm run){}",
            units::duration(t.total_ns),
            super::emulated_note(dev)
        );
        return Err(Interrupted(format!(
            "after the reference run, which {} the embedded reference; the warm timing run was skipped",
            if ok { "matched" } else { "did NOT match" }
        ))
        .into());
    }
    // A second, warm run is the representative timing (the first includes page faults).
    let t2 = run_once(model.as_mut(), &inputs, &mut outputs)?;
    bar.finish_and_clear();
    outln!(
        "timing      first run {}; warm run {} (enqueue {}, device {}, upload {}, download {}){}",
        units::duration(t.total_ns),
        units::duration(t2.total_ns),
        units::duration(t2.enqueue_ns),
        units::duration(t2.device_ns),
        units::duration(t2.upload_ns),
        units::duration(t2.download_ns),
        super::emulated_note(dev)
    );
    if !ok {
        bail!("verification FAILED against the bundle's embedded reference");
    }
    outln!("verified    outputs match the embedded reference");
    Ok(())
}
