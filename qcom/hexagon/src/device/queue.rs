//! [`HexagonQueue`]: the executor's queue recorded as the FastRPC engine's op list — every launch and copy a view
//! of the one arena (`View::buffer` 0, the HAL's arena offset as the view offset) — and encoded into one schedule
//! table when the recording is closed by `signal`, so `submit` is one invoke with nothing to build.
//!
//! Submissions are synchronous (the invoke returns when the DSP has run the whole table): a `wait` is always
//! satisfied and a `signal` complete when `submit` returns. Timestamps record nothing: the runner times the whole
//! table on the DSP (`HAP_perf_get_time_us`), which is the submit's device time. Launch geometry is not used (a DSP
//! kernel is one call of its `entry`).
use modelrt_hal::device::{Arg, KernelId, Queue};

use super::phase::Phase;
use super::{DspError, Names};
use crate::fastrpc::engine::{Op, View};

/// A recorded schedule for the model library.
pub struct HexagonQueue {
    ops: Vec<Op>,
    names: Names,
    /// The table's arena size (the ION buffer's length).
    arena_len: u32,
    /// The encoded table; `None` while ops were recorded since the last `signal`.
    phase: Option<Phase>,
}

fn u32_of(v: u64, what: &str) -> Result<u32, DspError> {
    u32::try_from(v).map_err(|_| DspError::Other(format!("{what} {v} does not fit 32 bits")))
}

impl HexagonQueue {
    pub(super) fn new(names: Names, arena_len: u32) -> Self {
        HexagonQueue {
            ops: Vec::new(),
            names,
            arena_len,
            phase: None,
        }
    }

    /// The recorded ops.
    pub fn ops(&self) -> &[Op] {
        &self.ops
    }

    /// Launches per submit (what tinygrad's pattern would open, invoke and close).
    pub fn launches(&self) -> u32 {
        self.ops
            .iter()
            .filter(|o| matches!(o, Op::Launch { .. }))
            .count() as u32
    }

    /// The encoded table and the kernel names, encoding it now if the recording was not closed by `signal`
    /// (allocates only then).
    pub(super) fn phase(&mut self) -> Result<(&Phase, &[String]), DspError> {
        let p = match self.phase.take() {
            Some(p) => p,
            None => Phase::encode(&self.ops, self.arena_len, &self.names)?,
        };
        Ok((self.phase.insert(p), &self.names))
    }
}

impl Queue for HexagonQueue {
    type Error = DspError;

    fn wait(&mut self, _value: u64) -> Result<(), DspError> {
        Ok(())
    }

    fn timestamp(&mut self) -> Result<(), DspError> {
        Ok(())
    }

    fn exec(
        &mut self,
        kernel: KernelId,
        args: &[Arg],
        _global: [u32; 3],
        _local: [u32; 3],
    ) -> Result<(), DspError> {
        let (mut bufs, mut vals) = (Vec::new(), Vec::new());
        for a in args {
            match *a {
                Arg::Buffer { offset, size } => bufs.push(View {
                    buffer: 0,
                    offset: u32_of(offset, "offset")?,
                    size: u32_of(size, "size")?,
                }),
                // 8-byte scalar slots, the int zero-extended (what the runner hands `entry`)
                Arg::Int(v) => vals.push(u64::from(v as u32)),
            }
        }
        self.ops.push(Op::Launch {
            kernel: kernel.0,
            bufs,
            vals,
        });
        self.phase = None;
        Ok(())
    }

    fn copy(&mut self, dst: u64, src: u64, len: u64) -> Result<(), DspError> {
        let size = u32_of(len, "copy size")?;
        self.ops.push(Op::Copy {
            dst: View {
                buffer: 0,
                offset: u32_of(dst, "offset")?,
                size,
            },
            src: View {
                buffer: 0,
                offset: u32_of(src, "offset")?,
                size,
            },
        });
        self.phase = None;
        Ok(())
    }

    /// Closes the recording: the table is encoded here, at load time.
    fn signal(&mut self, _value: u64) -> Result<(), DspError> {
        self.phase()?;
        Ok(())
    }
}
