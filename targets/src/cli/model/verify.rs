//! `modelrt verify` (and the verifying half of `modelrt demo`): run the bundle's embedded reference
//! inputs and compare every output with the embedded expected outputs within the bundle's tolerances.
use std::path::Path;

use anyhow::{bail, Context};
use modelrt_core::bundle::Bundle;
use modelrt_core::verify::{compare_reference, reference_tolerance};
use modelrt_targets::bundle_file::BundleFile;

use super::run::print_output_summary;
use super::{alloc_outputs, load_from, ms, parse_bundle, reference_inputs, run_once, DeviceArgs};

/// Check outputs against the embedded reference; prints one line per output. Returns whether all pass.
fn check_reference(b: &Bundle<'_>, outputs: &[Vec<u8>]) -> anyhow::Result<bool> {
    let r = b
        .body()
        .reference
        .context("this bundle has no embedded reference (compile it with --reference)")?;
    let mut all = true;
    for ((t, want), got) in b.body().outputs.iter().zip(r.outputs.iter()).zip(outputs) {
        let (t, want) = (t?, want?);
        // the recorded tolerance, raised for outputs narrower than float32 (core/src/verify.rs)
        let c = compare_reference(t.dtype, got, want.data, r.atol as f64, r.rtol as f64);
        let (atol, rtol) = reference_tolerance(t.dtype, r.atol as f64, r.rtol as f64);
        all &= c.ok();
        println!(
            "verify {}: {} — max abs err {:.3e}, max rel err {:.3e}, {} of {} outside atol {:e} rtol {:e}",
            t.name,
            if c.ok() { "ok" } else { "FAILED" },
            c.max_abs,
            c.max_rel,
            c.mismatches,
            c.count,
            atol as f32,
            rtol as f32
        );
    }
    Ok(all)
}

/// `modelrt verify` of an opened bundle file. Errors if verification fails.
pub fn verify_file(file: &BundleFile, path: &Path, dev: DeviceArgs) -> anyhow::Result<()> {
    println!("bundle      {}", file.source().describe());
    verify_in(file.bytes(), Some(file), path, dev, false)
}

/// The verification half of `demo` (embedded bytes). Errors if verification fails.
pub fn verify_bytes(
    bytes: &[u8],
    path: &Path,
    dev: DeviceArgs,
    summary: bool,
) -> anyhow::Result<()> {
    verify_in(bytes, None, path, dev, summary)
}

fn verify_in(
    bytes: &[u8],
    file: Option<&BundleFile>,
    path: &Path,
    dev: DeviceArgs,
    summary: bool,
) -> anyhow::Result<()> {
    let b = parse_bundle(bytes, path)?;
    let inputs = reference_inputs(&b)?;
    let mut model = load_from(b, file, &dev)?;
    println!("device      {}", model.device_name());
    if let Some(m) = model.memory() {
        println!("{}", super::memory_line(&m));
    }
    let mut outputs = alloc_outputs(model.bundle())?;
    let t = run_once(model.as_mut(), &inputs, &mut outputs)?;
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
    // A second, warm run is the representative timing (the first includes page faults).
    let t2 = run_once(model.as_mut(), &inputs, &mut outputs)?;
    println!(
        "timing      first run {}; warm run {} (enqueue {}, device {}, upload {}, download {})",
        ms(t.total_ns),
        ms(t2.total_ns),
        ms(t2.enqueue_ns),
        ms(t2.device_ns),
        ms(t2.upload_ns),
        ms(t2.download_ns)
    );
    if !ok {
        bail!("verification FAILED against the bundle's embedded reference");
    }
    println!("verified    outputs match the embedded reference");
    Ok(())
}
