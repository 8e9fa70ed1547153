//! How the FastRPC model runs a kernel launch (or a model-level schedule invoke) it has validated: a pluggable [`DspExecutor`]. [`Refuse`] says
//! honestly that DSP execution is not modelled; [`Qemu`] runs the launch under qemu-hexagon through the
//! `qemu_harness` ([`crate::emu::harness`]), so outputs are really computed.
use crate::emu::harness::{self, BufArg, Schedule, Step};

/// One validated launch: the library, the scalar slots after the buffer sizes, the distinct ION buffers it
/// touches (whole) and one view per kernel buffer argument.
#[derive(Debug)]
pub struct Launch<'a> {
    pub lib: &'a [u8],
    pub vals: &'a [u64],
    pub buffers: &'a mut [Vec<u8>],
    /// (index into `buffers`, byte offset, size) per kernel buffer.
    pub views: &'a [(u32, u32, u32)],
}

/// One validated model-level invoke (method 3): the model library, the scalars word, the schedule table and the
/// arenas (whole ION buffers, in handle order).
#[derive(Debug)]
pub struct Run<'a> {
    pub lib: &'a [u8],
    pub sc: u32,
    pub table: &'a [u8],
    pub arenas: &'a mut [Vec<u8>],
}

/// Runs a launch or a whole schedule.
pub trait DspExecutor: Send {
    /// Returns the µs the DSP-side `entry` stores into its timer output.
    fn launch(&mut self, l: Launch<'_>) -> Result<u64, String>;
    /// Returns the runner's 16-byte result {u64 µs, u32 ops completed, i32 status}; `Err` when `entry` failed.
    fn run(&mut self, _r: Run<'_>) -> Result<[u8; 16], String> {
        Err("model-level invokes not modelled by this executor".into())
    }
}

/// Refuses every launch: the model validates traffic only.
#[derive(Clone, Copy, Debug, Default)]
pub struct Refuse;

impl DspExecutor for Refuse {
    fn launch(&mut self, _: Launch<'_>) -> Result<u64, String> {
        Err("DSP kernel execution not modelled (no executor configured)".into())
    }
}

/// Runs each launch as a one-step schedule under qemu-hexagon.
#[derive(Clone, Copy, Debug, Default)]
pub struct Qemu;

impl DspExecutor for Qemu {
    fn launch(&mut self, l: Launch<'_>) -> Result<u64, String> {
        let s = Schedule {
            libs: vec![l.lib],
            buffers: l.buffers.to_vec(),
            steps: vec![Step::Launch {
                lib: 0,
                bufs: l
                    .views
                    .iter()
                    .map(|&(buffer, offset, size)| BufArg {
                        buffer,
                        offset,
                        size,
                    })
                    .collect(),
                vals: l.vals.to_vec(),
            }],
            outputs: (0..l.buffers.len() as u32).collect(),
        };
        let r = harness::run(&s).map_err(|e| e.to_string())?;
        for (dst, src) in l.buffers.iter_mut().zip(r.outputs) {
            *dst = src;
        }
        Ok(r.steps.first().map_or(0, |s| s.timer_us))
    }

    fn run(&mut self, r: Run<'_>) -> Result<[u8; 16], String> {
        let s = Schedule {
            libs: vec![r.lib],
            buffers: r.arenas.to_vec(),
            steps: vec![Step::Invoke {
                lib: 0,
                sc: r.sc,
                input: r.table.to_vec(),
                handles: (0..r.arenas.len() as u32).collect(),
            }],
            outputs: (0..r.arenas.len() as u32).collect(),
        };
        let out = harness::qemu::run(s.encode().map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
        let res = s.decode(&out).map_err(|e| e.to_string())?;
        let st = res.steps.first().copied().unwrap_or_default();
        match (st.ret, st.status) {
            (0, _) => {}
            (1, status) => {
                return Err(format!(
                    "the schedule runner stopped at op {} (kernel returned {status})",
                    st.ops
                ))
            }
            (ret, _) => {
                return Err(format!(
                    "the schedule runner refused the call (entry returned {ret})"
                ))
            }
        }
        for (dst, src) in r.arenas.iter_mut().zip(res.outputs) {
            *dst = src;
        }
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&st.timer_us.to_le_bytes());
        b[8..12].copy_from_slice(&st.ops.to_le_bytes());
        b[12..].copy_from_slice(&st.status.to_le_bytes());
        Ok(b)
    }
}
