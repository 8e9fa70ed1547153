//! How the FastRPC model runs a kernel launch it has validated: a pluggable [`DspExecutor`]. [`Refuse`] says
//! honestly that DSP execution is not modelled; [`Qemu`] runs the launch under qemu-hexagon through the
//! `hexrun` harness ([`crate::emu::hexagon`]), so outputs are really computed.
use crate::emu::hexagon::{self, BufArg, Schedule, Step};

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

/// Runs a launch; returns the µs the DSP-side `entry` stores into its timer output.
pub trait DspExecutor: Send {
    fn launch(&mut self, l: Launch<'_>) -> Result<u64, String>;
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
        let r = hexagon::run(&s).map_err(|e| e.to_string())?;
        for (dst, src) in l.buffers.iter_mut().zip(r.outputs) {
            *dst = src;
        }
        Ok(r.steps.first().map_or(0, |s| s.timer_us))
    }
}
