//! A hexagon bundle's steps as the FastRPC engine's op list by (buffer, offset) — launch arguments split into
//! buffer views and 8-byte scalar slots — for the launch-by-launch paths: the qemu execution model
//! ([`crate::bundle::emu`]) and tinygrad's per-launch pattern ([`launch_plan`]). The one-invoke path (`--device
//! dsp`/`dsp-emu`) records the same ops from the executor's queue, by arena offset
//! ([`crate::device::HexagonQueue`]).
use std::sync::Arc;

use crate::fastrpc::engine::{Kernel, Op, View};
use anyhow::{bail, Context, Result};
use modelrt_core::bundle::{ArgRef, Bundle, Step as BStep};
use modelrt_hal::target::ParamKind;

fn u32_of(v: u64, what: &str) -> Result<u32> {
    u32::try_from(v).with_context(|| format!("{what} {v} does not fit 32 bits"))
}

/// The engine's ops for bundle steps (launch arguments split into buffer views and 8-byte scalar slots).
pub fn ops(
    b: &Bundle<'_>,
    steps: impl Iterator<Item = Result<BStep, modelrt_core::bundle::BundleError>>,
) -> Result<Vec<Op>> {
    let body = b.body();
    let mut out = Vec::new();
    for step in steps {
        match step? {
            BStep::Launch { kernel, args, .. } => {
                let k = body.kernels.get(kernel as usize)?;
                let (mut bufs, mut vals) = (Vec::new(), Vec::new());
                for (a, p) in args.iter().zip(k.params.iter()) {
                    match (*a, p.kind) {
                        (
                            ArgRef::Buffer {
                                buffer,
                                offset,
                                size,
                            },
                            ParamKind::Buffer,
                        ) => bufs.push(View {
                            buffer,
                            offset: u32_of(offset, "offset")?,
                            size: u32_of(size, "size")?,
                        }),
                        (ArgRef::Int(v), ParamKind::Var | ParamKind::CoreId) => {
                            vals.push(u64::from(v as u32))
                        }
                        _ => bail!("kernel {}: argument does not match its parameter", k.name),
                    }
                }
                out.push(Op::Launch { kernel, bufs, vals });
            }
            BStep::LaunchThreads { kernel, .. } => bail!(
                "kernel {}: a launch with partial work groups (format 2.3) cannot run on the DSP",
                body.kernels.get(kernel as usize)?.name
            ),
            BStep::Copy { dst, src, size } => {
                let size = u32_of(size, "copy size")?;
                out.push(Op::Copy {
                    dst: View {
                        buffer: dst.buffer,
                        offset: u32_of(dst.offset, "offset")?,
                        size,
                    },
                    src: View {
                        buffer: src.buffer,
                        offset: u32_of(src.offset, "offset")?,
                        size,
                    },
                });
            }
        }
    }
    Ok(out)
}

/// The same bundle as tinygrad runs it: one library per kernel (the model library left out), init and run ops
/// in order, for [`crate::fastrpc::engine::Loaded`] (the per-launch engine; used to count tinygrad's
/// open/invoke/close pattern against the one-invoke step).
pub fn launch_plan(b: &Bundle<'_>) -> Result<crate::fastrpc::engine::Plan> {
    let body = b.body();
    let mut p = crate::fastrpc::engine::Plan::default();
    for k in body.kernels.iter() {
        let k = k?;
        p.kernels.push(Kernel {
            name: k.name.to_string(),
            lib: Arc::from(k.binary),
        });
    }
    for buf in body.buffers.iter() {
        p.buffers.push(buf?.size);
    }
    p.ops = ops(b, body.init.iter().chain(body.run.iter()))?;
    Ok(p)
}
