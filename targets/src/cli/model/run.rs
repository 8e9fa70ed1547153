//! `modelrt run`: read each input from a `.npy` file (name, dtype and shape checked against the bundle),
//! run once, print a summary of each output and optionally write each to `DIR/NAME.npy`.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use modelrt_core::bundle::{Bundle, TensorDesc};
use modelrt_core::verify::element;
use modelrt_targets::npy;
use modelrt_targets::runner::load;

use super::{alloc_outputs, ms, parse_bundle, read_bundle_file, run_once, shape_str, DeviceArgs};

/// `modelrt run`.
pub fn run(
    path: &Path,
    inputs: &[String],
    output_dir: Option<&Path>,
    dev: DeviceArgs,
) -> anyhow::Result<()> {
    let bytes = read_bundle_file(path)?;
    let b = parse_bundle(&bytes, path)?;
    let descs: Vec<TensorDesc<'_>> = b.body().inputs.iter().collect::<Result<_, _>>()?;
    let mut given: BTreeMap<String, PathBuf> = BTreeMap::new();
    for spec in inputs {
        let (name, file) = spec
            .split_once('=')
            .with_context(|| format!("--input '{spec}' is not NAME=FILE.npy"))?;
        if !descs.iter().any(|d| d.name == name) {
            let names: Vec<&str> = descs.iter().map(|d| d.name).collect();
            bail!(
                "unknown input '{name}'; this bundle's inputs are: {}",
                names.join(", ")
            );
        }
        if given
            .insert(name.to_string(), PathBuf::from(file))
            .is_some()
        {
            bail!("input '{name}' given twice");
        }
    }
    let mut data = Vec::new();
    for d in &descs {
        let file = given.get(d.name).with_context(|| {
            format!(
                "missing input '{}' ({} {}); pass --input {}=FILE.npy",
                d.name,
                shape_str(&d.shape),
                d.dtype.name(),
                d.name
            )
        })?;
        let raw = std::fs::read(file).with_context(|| format!("cannot read {}", file.display()))?;
        let arr = npy::parse(&raw).map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
        if arr.dtype != d.dtype {
            bail!(
                "input '{}': {} has dtype {}, the model expects {}",
                d.name,
                file.display(),
                arr.dtype.name(),
                d.dtype.name()
            );
        }
        if arr.shape.as_slice() != d.shape.as_slice() {
            bail!(
                "input '{}': {} has shape {}, the model expects {}",
                d.name,
                file.display(),
                shape_str(&arr.shape),
                shape_str(&d.shape)
            );
        }
        data.push(arr.data);
    }
    let mut model = load(b, dev.options())?;
    let mut outputs = alloc_outputs(model.bundle())?;
    let t = run_once(model.as_mut(), &data, &mut outputs)?;
    if !model.computes_outputs() {
        println!(
            "note        {} computed no outputs; nothing is written",
            model.device_name()
        );
        println!(
            "timing      {} (enqueue {}, modelled device {})",
            ms(t.total_ns),
            ms(t.enqueue_ns),
            ms(t.device_ns)
        );
        return Ok(());
    }
    print_output_summary(model.bundle(), &outputs)?;
    println!(
        "timing      {} (enqueue {}, device {}) on {}",
        ms(t.total_ns),
        ms(t.enqueue_ns),
        ms(t.device_ns),
        model.device_name()
    );
    if let Some(dir) = output_dir {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        for (t, out) in model.bundle().body().outputs.iter().zip(&outputs) {
            let t = t?;
            let file = dir.join(format!("{}.npy", sanitize(t.name)));
            std::fs::write(&file, npy::encode(t.dtype, &t.shape, out))
                .with_context(|| format!("cannot write {}", file.display()))?;
            println!("wrote       {}", file.display());
        }
    }
    Ok(())
}

/// Output names come from the model; keep them to safe file names.
fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// One line per output: min, max (and where), mean and the first values.
pub(super) fn print_output_summary(b: &Bundle<'_>, outputs: &[Vec<u8>]) -> anyhow::Result<()> {
    for (t, data) in b.body().outputs.iter().zip(outputs) {
        let t = t?;
        let n = t.numel() as usize;
        let vals: Vec<f64> = (0..n).filter_map(|i| element(t.dtype, data, i)).collect();
        let (mut lo, mut hi, mut sum, mut arg) = (f64::INFINITY, f64::NEG_INFINITY, 0.0, 0);
        for (i, v) in vals.iter().enumerate() {
            if *v > hi {
                hi = *v;
                arg = i;
            }
            lo = lo.min(*v);
            sum += v;
        }
        let head: Vec<String> = vals.iter().take(6).map(|v| format!("{v:.5}")).collect();
        println!(
            "output {} {} {}: min {lo:.5} max {hi:.5} (at {arg}) mean {:.5}  [{}{}]",
            t.name,
            shape_str(&t.shape),
            t.dtype.name(),
            sum / vals.len().max(1) as f64,
            head.join(", "),
            if vals.len() > 6 { ", …" } else { "" }
        );
    }
    Ok(())
}
