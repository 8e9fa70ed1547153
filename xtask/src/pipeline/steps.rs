//! Consecutive steps of a stateful bundle against tinygrad's golden replay: per-step inputs cut from `.npy` files that
//! stack N steps on a new leading axis (what `pipeline_golden.py replay` writes and `modelrt run --steps` reads), a
//! step loop over a loaded model, and the comparisons of outputs and state buffers with the golden files.
use std::path::Path;

use anyhow::{bail, Context, Result};
use modelrt_core::Bundle;
use modelrt_targets::npy;
use modelrt_targets::runner::LoadedModel;

/// Raw bytes of one step's tensors, in the bundle's input (or output) order.
pub type Step = Vec<Vec<u8>>;

/// Read and parse a `.npy` file.
pub fn read_npy(p: &Path) -> Result<npy::NpyArray> {
    let bytes = std::fs::read(p).with_context(|| format!("cannot read {}", p.display()))?;
    npy::parse(&bytes).map_err(|e| anyhow::anyhow!("{}: {e}", p.display()))
}

/// Per-step inputs in `bundle`'s input order from `dir/{prefix}in_NAME.npy`, each holding N steps stacked.
pub fn step_inputs(bundle: &Bundle<'_>, dir: &Path, prefix: &str) -> Result<Vec<Step>> {
    let mut per_input = Vec::new();
    for t in bundle.body().inputs.iter() {
        let t = t.map_err(|e| anyhow::anyhow!("{e}"))?;
        let a = read_npy(&dir.join(format!("{prefix}in_{}.npy", t.name)))?;
        let len = usize::try_from(t.byte_len())?;
        if len == 0 || a.data.len() % len != 0 {
            bail!(
                "{prefix}in_{}.npy is not a stack of '{}' tensors",
                t.name,
                t.name
            );
        }
        per_input.push(a.data.chunks(len).map(<[u8]>::to_vec).collect::<Vec<_>>());
    }
    let n = per_input.first().map_or(0, Vec::len);
    if per_input.iter().any(|v| v.len() != n) {
        bail!(
            "the input files in {} hold different step counts",
            dir.display()
        );
    }
    Ok((0..n)
        .map(|i| per_input.iter().map(|v| v[i].clone()).collect())
        .collect())
}

/// Run `steps` consecutive steps from the model's current state; returns each step's outputs.
pub fn run_steps(model: &mut dyn LoadedModel<'_>, steps: &[Step]) -> Result<Vec<Step>> {
    steps
        .iter()
        .map(|ins| {
            let mut outs = model
                .bundle()
                .body()
                .outputs
                .iter()
                .map(|t| {
                    Ok(vec![
                        0u8;
                        usize::try_from(
                            t.map_err(|e| anyhow::anyhow!("{e}"))?.byte_len()
                        )?
                    ])
                })
                .collect::<Result<Step>>()?;
            let ins: Vec<&[u8]> = ins.iter().map(Vec::as_slice).collect();
            let mut refs: Vec<&mut [u8]> = outs.iter_mut().map(Vec::as_mut_slice).collect();
            model.run(&ins, &mut refs)?;
            Ok(outs)
        })
        .collect()
}

/// Little-endian f32 values.
pub fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// Largest absolute difference of two equally long f32 byte strings (infinite when a NaN appears on one side only
/// or the lengths differ).
pub fn max_abs_f32(got: &[u8], want: &[u8]) -> f64 {
    if got.len() != want.len() {
        return f64::INFINITY;
    }
    f32s(got)
        .iter()
        .zip(f32s(want))
        .map(|(&g, w)| match (g.is_nan(), w.is_nan()) {
            (true, true) => 0.0,
            (false, false) => (f64::from(g) - f64::from(w)).abs(),
            _ => f64::INFINITY,
        })
        .fold(0.0, f64::max)
}
