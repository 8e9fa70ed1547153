//! `modelrt run`: read each input from a `.npy` file (name, dtype and shape checked against the bundle),
//! run once — or `--steps N` consecutive steps of a stateful bundle, inputs and outputs stacked on a new
//! leading axis — print a summary of each output, optionally write each to `DIR/NAME.npy` and the final
//! state buffers to `--dump-state DIR`.
use std::path::PathBuf;

use clap::Args;
use modelrt_core::bundle::Bundle;
use modelrt_core::verify::element;

use super::steps::{dump_state, read_inputs, write_outputs};
use super::{alloc_outputs, load_from, ms, open_bundle_file, parse_bundle, shape_str, DeviceArgs};

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
    /// Write each output to DIR/NAME.npy.
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
    let mut model = load_from(b, Some(&file), &a.device)?;
    let n = inputs.steps;
    let mut outputs = alloc_outputs(model.bundle())?;
    let mut stacked: Vec<Vec<u8>> = outputs
        .iter()
        .map(|o| Vec::with_capacity(o.len() * n))
        .collect();
    let mut frame_ns = Vec::with_capacity(n);
    let mut last = None;
    for k in 0..n {
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
    }
    // `n >= 1`: `read_inputs` refuses 0 steps.
    let t = last.unwrap_or_default();
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
    if a.steps.is_some() {
        frame_ns.sort_unstable();
        println!(
            "steps       {n} (outputs above are the last step's); per step min {} median {} max {}",
            ms(frame_ns[0]),
            ms(frame_ns[n / 2]),
            ms(frame_ns[n - 1])
        );
    }
    println!(
        "timing      {} (enqueue {}, device {}) on {}",
        ms(t.total_ns),
        ms(t.enqueue_ns),
        ms(t.device_ns),
        model.device_name()
    );
    if let Some(dir) = &a.output_dir {
        write_outputs(model.bundle(), dir, &stacked, n, a.steps.is_some())?;
    }
    if let Some(dir) = &a.dump_state {
        dump_state(model.as_mut(), dir)?;
    }
    Ok(())
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
