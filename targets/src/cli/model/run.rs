//! `modelrt run`: read each input from a `.npy` file (name, dtype and shape checked against the bundle),
//! run once — or `--steps N` consecutive steps of a stateful bundle, inputs and outputs stacked on a new
//! leading axis — print a summary of each output, optionally write each to `DIR/NAME.npy` and the final
//! state buffers to `--dump-state DIR` (names made file-safe and unique, see `files`; both directories
//! are checked before the model runs).
use std::collections::BTreeSet;
use std::path::PathBuf;

use anyhow::bail;

use clap::Args;
use modelrt_core::bundle::Bundle;

use crate::cli::progress::{self, Interrupted};
use crate::cli::units;

use super::files::{npy_paths, prepare_dir};
use super::steps::{dump_state, read_inputs, state_labels, write_outputs};
use super::summary::print_output_summary;
use super::{alloc_outputs, load_from, open_bundle_file, parse_bundle, DeviceArgs};

/// `modelrt run` arguments.
#[derive(Args, Clone, Debug)]
#[command(
    after_help = "State: a bundle's state buffers (recurrent state such as feature queues) start from \
the bytes captured at compile time when the bundle is loaded and carry over from each step to the next; \
`modelrt info` lists them. With --steps N every input file holds N per-step tensors stacked on a new \
leading axis ([N x model shape]) and every output is written stacked the same way."
)]
pub struct RunArgs {
    /// The bundle (.mrt).
    pub bundle: PathBuf,
    /// An input as NAME=FILE.npy (repeat for each input).
    #[arg(short, long = "input", value_name = "NAME=FILE.npy")]
    pub inputs: Vec<String>,
    /// Write each output to DIR/NAME.npy (characters other than letters, digits, `-_.` become `_`;
    /// names that would share a file get `-1`, `-2`, …; each file written is printed with its output).
    #[arg(short, long, value_name = "DIR")]
    pub output_dir: Option<PathBuf>,
    /// Run N consecutive steps (frames); each input file then has a leading axis of length N
    /// [default: one step, input files have the model's shape].
    #[arg(long, value_name = "N")]
    pub steps: Option<usize>,
    /// After the last step, write every state buffer to DIR/LABEL.npy (flat, its dtype).
    #[arg(long, value_name = "DIR")]
    pub dump_state: Option<PathBuf>,
    /// Reset the state buffers to their load-time contents before every step, so each step runs as if
    /// it were the first [default: state carries over between steps].
    #[arg(long)]
    pub reset_state: bool,
    #[command(flatten)]
    pub device: DeviceArgs,
}

/// `modelrt run`.
pub fn run(a: &RunArgs) -> anyhow::Result<()> {
    let path = a.bundle.as_path();
    let file = open_bundle_file(path, !a.device.no_mmap)?;
    let b = parse_bundle(file.bytes(), path)?;
    let inputs = read_inputs(&b, &a.inputs, a.steps)?;
    let (output_files, state_files) = plan_files(&b, a)?;
    let mut model = load_from(b, Some(&file), &a.device)?;
    let n = inputs.steps;
    let mut outputs = alloc_outputs(model.bundle())?;
    let mut stacked: Vec<Vec<u8>> = outputs
        .iter()
        .map(|o| Vec::with_capacity(o.len() * n))
        .collect();
    let mut frame_ns = Vec::with_capacity(n);
    let mut last = None;
    progress::catch_interrupt()?;
    let bar = progress::bar(n as u64, "run");
    for k in 0..n {
        if progress::stop_requested() {
            break;
        }
        if a.reset_state {
            model.reset_state()?;
        }
        let mut outs: Vec<&mut [u8]> = outputs.iter_mut().map(Vec::as_mut_slice).collect();
        let t = model.run(&inputs.step(k), &mut outs)?;
        for (s, o) in stacked.iter_mut().zip(&outputs) {
            s.extend_from_slice(o);
        }
        frame_ns.push(t.total_ns);
        last = Some(t);
        bar.inc(1);
    }
    bar.finish_and_clear();
    // Ctrl-C stops at a step boundary: what follows reports the steps that completed.
    let (planned, n) = (n, frame_ns.len());
    let Some(t) = last else {
        return Err(Interrupted(format!(
            "before the first of {} completed: nothing was computed or written",
            units::plural(planned as u64, "step")
        ))
        .into());
    };
    let partial = n < planned;
    if partial {
        outln!(
            "partial     interrupted after {n} of {planned} steps: everything below covers those only"
        );
    }
    if !model.computes_outputs() {
        outln!(
            "note        {} computed no outputs; nothing is written",
            model.device_name()
        );
        outln!(
            "timing      {} (enqueue {}, modelled device {})",
            units::duration(t.total_ns),
            units::duration(t.enqueue_ns),
            units::duration(t.device_ns)
        );
        return finish(partial, n, planned);
    }
    print_output_summary(model.bundle(), &outputs)?;
    if a.steps.is_some() {
        frame_ns.sort_unstable();
        outln!(
            "steps       {n}{} (outputs above are the last step's); per step min {} median {} max {}",
            if partial {
                format!(" of {planned} (partial)")
            } else {
                String::new()
            },
            units::duration(frame_ns[0]),
            units::duration(frame_ns[n / 2]),
            units::duration(frame_ns[n - 1])
        );
    }
    outln!(
        "timing      {} (enqueue {}, device {}) on {}{}",
        units::duration(t.total_ns),
        units::duration(t.enqueue_ns),
        units::duration(t.device_ns),
        model.device_name(),
        super::emulated_note(&a.device)
    );
    if a.output_dir.is_some() {
        write_outputs(
            model.bundle(),
            &output_files,
            &stacked,
            n,
            a.steps.is_some(),
        )?;
    }
    if a.dump_state.is_some() {
        dump_state(model.as_mut(), &state_files)?;
    }
    finish(partial, n, planned)
}

/// `Ok`, or after an interrupt the [`Interrupted`] that says how far the run got.
fn finish(partial: bool, done: usize, planned: usize) -> anyhow::Result<()> {
    if partial {
        return Err(Interrupted(format!(
            "after {done} of {planned} steps; the outputs and files above are partial (a leading axis of {done}); run again to compute all {planned}"
        ))
        .into());
    }
    Ok(())
}

/// Check `-o` and `--dump-state` before anything runs, and name the file of every output and
/// state buffer they will receive (unique within each directory; one directory given to both
/// holds distinct names for all). Empty lists for options not given.
fn plan_files(b: &Bundle<'_>, a: &RunArgs) -> anyhow::Result<(Vec<PathBuf>, Vec<PathBuf>)> {
    let mut taken = BTreeSet::new();
    let mut outputs = Vec::new();
    if let Some(dir) = &a.output_dir {
        prepare_dir("-o", dir)?;
        let names: Vec<&str> = b
            .body()
            .outputs
            .iter()
            .map(|t| t.map(|t| t.name))
            .collect::<Result<_, _>>()?;
        outputs = npy_paths(dir, &names, &mut taken);
    }
    let mut states = Vec::new();
    if let Some(dir) = &a.dump_state {
        let labels = state_labels(b)?;
        if labels.is_empty() {
            bail!("--dump-state: this bundle has no state buffers (`modelrt info` lists a bundle's state)");
        }
        prepare_dir("--dump-state", dir)?;
        if a.output_dir.as_ref() != Some(dir) {
            taken.clear();
        }
        states = npy_paths(dir, &labels, &mut taken);
    }
    Ok((outputs, states))
}
