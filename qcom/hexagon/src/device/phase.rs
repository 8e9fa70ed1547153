//! A recorded queue as the DSP runs it: the engine's ops (views of the one arena) encoded once into a schedule
//! table, and the single INVOKE_ATTRS of the model library that runs it — {table in, 16-byte result out, the arena
//! as a dma handle}, built on the stack. Errors name the call, the model library and, when the runner stopped at a
//! kernel, the op and the kernel.
use crate::fastrpc::abi::FASTRPC_ATTR_NOVA;
use crate::fastrpc::engine::{Op, View};
use crate::fastrpc::table::{self, ArenaView, RunResult, TableOp, RESULT_LEN};
use crate::fastrpc::{Arg, FastRpcError, FastRpcIo};

/// An encoded schedule: its table and, per op, the kernel it launches (`None` for a copy).
pub(crate) struct Phase {
    table: Vec<u8>,
    kernel_of: Vec<Option<u32>>,
}

fn arena_view(v: &View) -> ArenaView {
    ArenaView {
        arena: 0,
        offset: v.offset,
        size: v.size,
    }
}

impl Phase {
    /// Encode `ops` over one arena of `arena_len` bytes (views are arena offsets: `View::buffer` is 0). Checks
    /// what the runner and the DSP would refuse (kernel ids, views inside the arena and 128-byte aligned, the
    /// per-launch limits).
    pub(crate) fn encode(
        ops: &[Op],
        arena_len: u32,
        names: &[String],
    ) -> Result<Self, FastRpcError> {
        let mut kernel_of = Vec::with_capacity(ops.len());
        let mut views: Vec<Vec<ArenaView>> = Vec::with_capacity(ops.len());
        for (i, op) in ops.iter().enumerate() {
            match op {
                Op::Launch { kernel, bufs, .. } => {
                    if *kernel as usize >= names.len() {
                        return Err(FastRpcError::invalid(
                            "load",
                            format!("op {i}: kernel {kernel} does not exist"),
                        ));
                    }
                    views.push(bufs.iter().map(arena_view).collect());
                    kernel_of.push(Some(*kernel));
                }
                Op::Copy { dst, src } => {
                    views.push(vec![arena_view(dst), arena_view(src)]);
                    kernel_of.push(None);
                }
            }
        }
        let tops: Vec<TableOp<'_>> = ops
            .iter()
            .zip(&views)
            .map(|(op, v)| match op {
                Op::Launch { kernel, vals, .. } => TableOp::Launch {
                    kernel: *kernel,
                    bufs: v,
                    vals,
                },
                Op::Copy { .. } => TableOp::Copy {
                    dst: v[0],
                    src: v[1],
                },
            })
            .collect();
        let table = table::encode(&[arena_len], &tops).map_err(|e| match e {
            FastRpcError::Invalid { call, reason } => {
                let kernel = reason
                    .strip_prefix("op ")
                    .and_then(|r| r.split(':').next())
                    .and_then(|n| n.parse::<usize>().ok())
                    .and_then(|i| kernel_of.get(i).copied().flatten())
                    .map_or(String::new(), |k| {
                        format!(" (kernel {})", names[k as usize])
                    });
                FastRpcError::Invalid {
                    call,
                    reason: format!("{reason}{kernel}"),
                }
            }
            e => e,
        })?;
        Ok(Phase { table, kernel_of })
    }

    /// Ops in the schedule (0: nothing to invoke).
    pub(crate) fn len(&self) -> usize {
        self.kernel_of.len()
    }

    /// Run the schedule with one INVOKE_ATTRS of the model library `library` (open as `handle`) over the arena
    /// `arena_fd`; returns the DSP-reported µs. Allocates nothing on success.
    pub(crate) fn invoke(
        &self,
        io: &dyn FastRpcIo,
        library: &str,
        handle: u32,
        arena_fd: i32,
        names: &[String],
    ) -> Result<u64, FastRpcError> {
        let mut result = [0u8; RESULT_LEN];
        let sc = table::run_sc(1).unwrap_or(table::SC_RUN_BASE | 1);
        let fds = [-1, -1, arena_fd];
        let attrs = [0, 0, FASTRPC_ATTR_NOVA];
        let mut args = [Arg::In(&self.table), Arg::Out(&mut result), Arg::Handle];
        io.invoke_attrs(handle, sc, &mut args, &fds, &attrs)
            .map_err(|e| e.context(&format!("model library {library}")))?;
        let r = RunResult::parse(&result);
        if r.status != 0 || r.ops_done as usize != self.kernel_of.len() {
            let at = self.kernel_of.get(r.ops_done as usize).copied().flatten();
            let what = at.map_or("a copy".to_string(), |k| {
                format!("kernel {}", names[k as usize])
            });
            return Err(FastRpcError::Remote {
                call: format!("INVOKE_ATTRS run ({library})"),
                reason: format!(
                    "the schedule stopped at op {} of {} ({what}) with status {}",
                    r.ops_done,
                    self.kernel_of.len(),
                    r.status
                ),
            });
        }
        Ok(r.dsp_us)
    }
}
