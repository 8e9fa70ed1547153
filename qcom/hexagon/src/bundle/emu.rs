//! A hexagon bundle computed under qemu-hexagon: its init and run steps become one `qemu_harness` schedule
//! ([`crate::emu::harness`]) whose launches call each kernel library's FastRPC `entry`, and the output
//! tensors are read back. An execution model only, launch by launch (the per-kernel libraries): the FastRPC path
//! with its one-invoke model library is [`crate::device`].
use crate::emu::harness::{self, BufArg, Schedule, Step};
use crate::fastrpc::engine::Op;
use anyhow::{bail, Context, Result};
use modelrt_core::bundle::Bundle;
use modelrt_hal::target::Target;

/// One executed step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepStat {
    /// Kernel name, or `copy`.
    pub name: String,
    /// qemu instructions spent in the kernel's `entry` (0 for copies).
    pub instructions: u32,
}

/// The outputs (bundle order, raw bytes) and what each step cost.
#[derive(Clone, Debug)]
pub struct DspRun {
    pub outputs: Vec<Vec<u8>>,
    pub steps: Vec<StepStat>,
    /// Wall time of the qemu process.
    pub qemu_seconds: f64,
}

/// The schedule for one inference: every buffer with its initial bytes (weights, state) or `inputs`, then the
/// init steps and the run steps in order. Also returns each step's name.
pub fn schedule<'a>(b: &Bundle<'a>, inputs: &[&[u8]]) -> Result<(Schedule<'a>, Vec<String>)> {
    let body = b.body();
    if !matches!(body.target, Target::Hexagon { .. }) {
        bail!(
            "this bundle targets {}, not the Hexagon DSP",
            body.target.family()
        );
    }
    let mut s = Schedule::default();
    for buf in body.buffers.iter() {
        let buf = buf?;
        let mut data = vec![0u8; usize::try_from(buf.size).context("buffer size")?];
        if let Some(init) = b.init_bytes(&buf) {
            data[..init.len()].copy_from_slice(init);
        }
        s.buffers.push(data);
    }
    if inputs.len() != body.inputs.len() {
        bail!(
            "{} inputs given, the bundle has {}",
            inputs.len(),
            body.inputs.len()
        );
    }
    for (t, data) in body.inputs.iter().zip(inputs) {
        let t = t?;
        if data.len() as u64 != t.byte_len() {
            bail!(
                "input '{}' has {} bytes, expected {}",
                t.name,
                data.len(),
                t.byte_len()
            );
        }
        let at = usize::try_from(t.offset)?;
        s.buffers[t.buffer as usize][at..at + data.len()].copy_from_slice(data);
    }
    for k in body.kernels.iter() {
        s.libs.push(k?.binary);
    }
    let mut names = Vec::new();
    for op in crate::bundle::ops::ops(b, body.init.iter().chain(body.run.iter()))? {
        match op {
            Op::Launch { kernel, bufs, vals } => {
                names.push(body.kernels.get(kernel as usize)?.name.to_string());
                s.steps.push(Step::Launch {
                    lib: kernel,
                    bufs: bufs
                        .iter()
                        .map(|v| BufArg {
                            buffer: v.buffer,
                            offset: v.offset,
                            size: v.size,
                        })
                        .collect(),
                    vals,
                });
            }
            Op::Copy { dst, src } => {
                s.steps.push(Step::Copy {
                    dst: dst.buffer,
                    dst_offset: dst.offset,
                    src: src.buffer,
                    src_offset: src.offset,
                    size: src.size,
                });
                names.push("copy".into());
            }
        }
    }
    for t in body.outputs.iter() {
        s.outputs.push(t?.buffer);
    }
    Ok((s, names))
}

/// Run one inference of a hexagon bundle under qemu-hexagon.
pub fn run_bundle(b: &Bundle<'_>, inputs: &[&[u8]]) -> Result<DspRun> {
    let (s, names) = schedule(b, inputs)?;
    let t = std::time::Instant::now();
    let r = harness::run(&s).map_err(|e| match e {
        harness::HexagonError::Entry { step, ret } => {
            anyhow::anyhow!("DSP kernel {} (step {step}) returned {ret}", names[step])
        }
        e => anyhow::anyhow!("{e}"),
    })?;
    let qemu_seconds = t.elapsed().as_secs_f64();
    let mut outputs = Vec::new();
    for (t, data) in b.body().outputs.iter().zip(&r.outputs) {
        let t = t?;
        let at = usize::try_from(t.offset)?;
        let n = usize::try_from(t.byte_len())?;
        outputs.push(data[at..at + n].to_vec());
    }
    let steps = names
        .into_iter()
        .zip(&r.steps)
        .map(|(name, s)| StepStat {
            name,
            instructions: s.instructions,
        })
        .collect();
    Ok(DspRun {
        outputs,
        steps,
        qemu_seconds,
    })
}
