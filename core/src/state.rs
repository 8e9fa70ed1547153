//! Recurrent state of a loaded bundle: its `BufferKind::State` buffers (tinygrad `assign` targets
//! such as openpilot's feature and desire queues).
//!
//! Semantics (also in `docs/state.md`):
//! - **init**: at load each state buffer gets its captured bytes from the weights blob; bytes past
//!   the captured length (a bundle may store a shorter prefix) are zero.
//! - **persist**: `Executor::run` never re-initialises state; each step reads what the previous one
//!   left. Validation guarantees no other buffer (scratch, input, weight) shares a state buffer's
//!   arena bytes and that no input is uploaded into one.
//! - **reset**: [`Executor::reset_state`] restores the load-time contents (the init phase is not
//!   re-run: it derives weights and never writes state).
//! - **inspect**: [`Executor::state`] describes state buffer `i` (the `i`-th `State` buffer in the
//!   bundle's buffer table), [`Executor::state_index`] finds one by label, and
//!   [`Executor::read_state`] copies its current bytes out.
//!
//! Nothing here allocates: state buffers are found by walking the bundle's buffer table.
use modelrt_hal::device::Device;
use modelrt_hal::target::DType;

use crate::bundle::{BufferDesc, BufferKind, Bundle};
use crate::exec::{ExecError, Executor};

/// One state buffer of a loaded bundle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StateInfo<'b> {
    /// Index among the bundle's state buffers (what [`Executor::read_state`] takes).
    pub index: usize,
    /// Index in the bundle's buffer table.
    pub buffer: u32,
    /// The producer's label (e.g. `state:feat_q`).
    pub label: &'b str,
    /// Element type.
    pub dtype: DType,
    /// Size in bytes.
    pub size: u64,
}

/// Chunk of zeros used to clear the part of a state buffer past its captured bytes.
const ZEROS: [u8; 256] = [0; 256];

/// Write state buffer `b`'s load-time contents to the device: its init bytes, then zeros.
pub(crate) fn restore<D: Device>(
    bundle: &Bundle<'_>,
    device: &mut D,
    b: &BufferDesc<'_>,
) -> Result<(), ExecError<D::Error>> {
    let init = bundle.init_bytes(b).unwrap_or(&[]);
    device
        .upload(b.arena_offset, init)
        .map_err(ExecError::Device)?;
    // Validation bounds `init.len() <= size` and the buffer by the arena, so these cannot overflow.
    let mut at = init.len() as u64;
    while at < b.size {
        let n = (b.size - at).min(ZEROS.len() as u64) as usize;
        device
            .upload(b.arena_offset + at, &ZEROS[..n])
            .map_err(ExecError::Device)?;
        at += n as u64;
    }
    Ok(())
}

impl<'b, D: Device> Executor<'b, D> {
    /// Number of state buffers (0 for a stateless bundle).
    pub fn state_count(&self) -> usize {
        self.states().count()
    }

    /// State buffer `i` (`None` past the last one).
    pub fn state(&self, i: usize) -> Option<StateInfo<'b>> {
        self.states().nth(i)
    }

    /// Index of the state buffer labelled `label`.
    pub fn state_index(&self, label: &str) -> Option<usize> {
        self.states().position(|s| s.label == label)
    }

    /// Copy the current bytes of state buffer `i` into `out`, which must be exactly its size.
    pub fn read_state(&mut self, i: usize, out: &mut [u8]) -> Result<(), ExecError<D::Error>> {
        let s = self.state(i).ok_or(ExecError::Count {
            what: "state buffers",
            expected: self.state_count(),
            got: i.saturating_add(1),
        })?;
        if s.size != out.len() as u64 {
            return Err(ExecError::Size {
                what: "state buffer",
                name_index: i,
                expected: s.size,
                got: out.len() as u64,
            });
        }
        let offset = self.bundle.arena_offset(s.buffer, 0)?;
        self.device.download(offset, out).map_err(ExecError::Device)
    }

    /// Put every state buffer back to its load-time contents (the next `run` is like the first).
    pub fn reset_state(&mut self) -> Result<(), ExecError<D::Error>> {
        let buffers = self.bundle.body().buffers;
        for b in buffers.iter() {
            let b = b?;
            if b.kind == BufferKind::State {
                restore(&self.bundle, &mut self.device, &b)?;
            }
        }
        Ok(())
    }

    /// The state buffers in table order. A parsed bundle's table decodes, so records that fail to
    /// decode (impossible after validation) are skipped rather than reported.
    fn states(&self) -> impl Iterator<Item = StateInfo<'b>> + '_ {
        let buffers = self.bundle.body().buffers;
        buffers
            .iter()
            .enumerate()
            .filter_map(|(i, b)| Some((i, b.ok()?)))
            .filter(|(_, b)| b.kind == BufferKind::State)
            .enumerate()
            .map(|(index, (buffer, b))| StateInfo {
                index,
                buffer: buffer as u32,
                label: b.label,
                dtype: b.dtype,
                size: b.size,
            })
    }
}
