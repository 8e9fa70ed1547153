//! Multi-step runs of stateful bundles (`modelrt run/bench --steps N`): reading `.npy` inputs given as
//! `NAME=FILE.npy` — one tensor per input, or with `--steps N` the N per-step tensors stacked on a new
//! leading axis — splitting them per step, stacking outputs the same way, and dumping state buffers.
use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{bail, Context};
use modelrt_core::bundle::{Bundle, TensorDesc};
use modelrt_core::StateInfo;
use modelrt_targets::npy;
use modelrt_targets::runner::LoadedModel;

use super::shape_str;

/// Every input's bytes: `per_step` bytes per step, `steps` steps back to back.
pub(super) struct StepInputs {
    pub data: Vec<Vec<u8>>,
    pub steps: usize,
}

impl StepInputs {
    /// The inputs of step `k` (0-based), in bundle input order.
    pub fn step(&self, k: usize) -> Vec<&[u8]> {
        self.data
            .iter()
            .map(|d| {
                let n = d.len() / self.steps;
                &d[k * n..(k + 1) * n]
            })
            .collect()
    }
}

/// The shape an input file must have: the model's, or with `steps` a leading axis of that length.
fn file_shape(d: &TensorDesc<'_>, steps: Option<usize>) -> Vec<u64> {
    let mut s: Vec<u64> = steps.map(|n| n as u64).into_iter().collect();
    s.extend_from_slice(&d.shape);
    s
}

/// Parse `NAME=FILE.npy` specs and read every bundle input, checking name, dtype and shape (with a
/// leading axis of length `steps` when given; `Some(0)` is refused).
pub(super) fn read_inputs(
    b: &Bundle<'_>,
    specs: &[String],
    steps: Option<usize>,
) -> anyhow::Result<StepInputs> {
    read_inputs_or(b, specs, steps, None)
}

/// [`read_inputs`], where an input no spec names takes `defaults[i]` (one step's bytes, the same
/// every step) instead of being an error (`bench -i`: the others keep their default).
pub(super) fn read_inputs_or(
    b: &Bundle<'_>,
    specs: &[String],
    steps: Option<usize>,
    defaults: Option<&[Vec<u8>]>,
) -> anyhow::Result<StepInputs> {
    if steps == Some(0) {
        bail!("--steps must be at least 1");
    }
    let descs: Vec<TensorDesc<'_>> = b.body().inputs.iter().collect::<Result<_, _>>()?;
    let mut given: BTreeMap<String, PathBuf> = BTreeMap::new();
    for spec in specs {
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
    for (i, d) in descs.iter().enumerate() {
        let want = file_shape(d, steps);
        if let (None, Some(one)) = (given.get(d.name), defaults.and_then(|v| v.get(i))) {
            data.push(one.repeat(steps.unwrap_or(1)));
            continue;
        }
        let file = given.get(d.name).with_context(|| {
            format!(
                "missing input '{}' ({} {}); pass --input {}=FILE.npy",
                d.name,
                shape_str(&want),
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
        if arr.shape != want {
            match steps {
                Some(n) => bail!(
                    "input '{}': {} has shape {}, --steps {n} expects {} ({n} stacked {})",
                    d.name,
                    file.display(),
                    shape_str(&arr.shape),
                    shape_str(&want),
                    shape_str(&d.shape)
                ),
                None => bail!(
                    "input '{}': {} has shape {}, the model expects {}",
                    d.name,
                    file.display(),
                    shape_str(&arr.shape),
                    shape_str(&d.shape)
                ),
            }
        }
        data.push(arr.data);
    }
    Ok(StepInputs {
        data,
        steps: steps.unwrap_or(1),
    })
}

/// Write each output to its file in `files` (see `files::npy_paths`), each whole or not at all
/// (`npy::write_file`): `stacked[i]` holds `steps` consecutive outputs, written with a leading axis
/// of that length when `stacked_axis`.
pub(super) fn write_outputs(
    b: &Bundle<'_>,
    files: &[PathBuf],
    stacked: &[Vec<u8>],
    steps: usize,
    stacked_axis: bool,
) -> anyhow::Result<()> {
    for ((t, out), file) in b.body().outputs.iter().zip(stacked).zip(files) {
        let t = t?;
        let mut shape: Vec<u64> = if stacked_axis {
            vec![steps as u64]
        } else {
            vec![]
        };
        shape.extend_from_slice(&t.shape);
        npy::write_file(file, t.dtype, &shape, out)
            .with_context(|| format!("cannot write {}", file.display()))?;
        outln!("wrote       {} (output '{}')", file.display(), t.name);
    }
    Ok(())
}

/// Labels of the bundle's state buffers, in state-table order (what `LoadedModel::states` lists).
pub(super) fn state_labels<'b>(b: &Bundle<'b>) -> anyhow::Result<Vec<&'b str>> {
    let mut labels = Vec::new();
    for d in b.body().buffers.iter() {
        let d = d?;
        if d.kind == modelrt_core::bundle::BufferKind::State {
            labels.push(d.label);
        }
    }
    Ok(labels)
}

/// Shape of a state buffer as a flat array of its dtype (a bundle records no tensor shape for state).
pub(super) fn state_shape(s: &StateInfo<'_>) -> Vec<u64> {
    vec![s.size / s.dtype.size() as u64]
}

/// One line describing a state buffer: `LABEL dtype [n] (bytes)`.
pub(super) fn state_line(s: &StateInfo<'_>) -> String {
    format!(
        "{} {} {} ({} B)",
        s.label,
        s.dtype.name(),
        shape_str(&state_shape(s)),
        s.size
    )
}

/// Write every state buffer's current bytes to its file in `files` (one per state, in table
/// order; flat, the buffer's dtype).
pub(super) fn dump_state(model: &mut dyn LoadedModel<'_>, files: &[PathBuf]) -> anyhow::Result<()> {
    let states = model.states();
    for (s, file) in states.iter().zip(files) {
        let bytes = model.read_state(s.index)?;
        // Trailing bytes that do not fill an element (not produced by any exporter) are left out.
        let elems = bytes.len() - bytes.len() % s.dtype.size();
        npy::write_file(file, s.dtype, &state_shape(s), &bytes[..elems])
            .with_context(|| format!("cannot write {}", file.display()))?;
        outln!("state       {} -> {}", state_line(s), file.display());
    }
    Ok(())
}
