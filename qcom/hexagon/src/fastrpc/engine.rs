//! Running a schedule of DSP kernels over a [`Session`]. The buffers live in ION (one allocation each, so every
//! view starts inside its own dma-buf); copies are host `memmove`s on the mappings. [`Pattern::LoadOnce`] opens
//! each kernel library once at load and replays a step with one INVOKE_ATTRS per launch from prepacked
//! [`LaunchFrame`]s (no allocation, no open/close). [`Pattern::PerLaunch`] reproduces tinygrad's launch
//! (open, invoke, close for every launch) so the two can be counted against each other.
use std::sync::Arc;

use super::abi::{ION_ALIGN, ION_FLAG_CACHED, ION_SYSTEM_HEAP_MASK};
use super::pack::{BufView, LaunchFrame};
use super::session::Session;
use super::{FastRpcError, IonBuf};

/// A kernel library of the plan.
#[derive(Clone, Debug)]
pub struct Kernel {
    pub name: String,
    pub lib: Arc<[u8]>,
}

/// A view of a plan buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct View {
    pub buffer: u32,
    pub offset: u32,
    pub size: u32,
}

/// One step of the schedule.
#[derive(Clone, Debug)]
pub enum Op {
    Launch {
        kernel: u32,
        bufs: Vec<View>,
        vals: Vec<u64>,
    },
    Copy {
        dst: View,
        src: View,
    },
}

/// What to run.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    pub kernels: Vec<Kernel>,
    pub buffers: Vec<u64>,
    pub ops: Vec<Op>,
}

/// How launches reach the DSP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pattern {
    /// Open every library once; one invoke per launch.
    LoadOnce,
    /// tinygrad's: open, invoke, close per launch.
    PerLaunch,
}

/// FastRPC calls one [`Loaded::step`] issued, and the DSP's reported kernel time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StepStats {
    pub invokes: u32,
    pub dsp_us: u64,
}

/// A plan loaded on a session.
pub struct Loaded<'s> {
    session: &'s Session,
    plan: Plan,
    pattern: Pattern,
    bufs: Vec<IonBuf>,
    handles: Vec<Option<u32>>,
    frames: Vec<Option<LaunchFrame>>,
}

impl<'s> Loaded<'s> {
    /// Allocate the buffers, check every view, pack every launch and (LoadOnce) open every library.
    pub fn load(session: &'s Session, plan: Plan, pattern: Pattern) -> Result<Self, FastRpcError> {
        let io = session.io();
        let mut l = Loaded {
            session,
            pattern,
            bufs: Vec::with_capacity(plan.buffers.len()),
            handles: vec![None; plan.kernels.len()],
            frames: Vec::with_capacity(plan.ops.len()),
            plan: Plan::default(),
        };
        for &len in &plan.buffers {
            l.bufs.push(io.ion_alloc(
                len.max(1),
                ION_ALIGN,
                ION_SYSTEM_HEAP_MASK,
                ION_FLAG_CACHED,
            )?);
        }
        for (i, op) in plan.ops.iter().enumerate() {
            let frame = match op {
                Op::Launch { kernel, bufs, vals } => {
                    let name = &plan
                        .kernels
                        .get(*kernel as usize)
                        .ok_or_else(|| {
                            FastRpcError::invalid(
                                "load",
                                format!("step {i}: kernel {kernel} does not exist"),
                            )
                        })?
                        .name;
                    let views = bufs
                        .iter()
                        .map(|v| {
                            l.view(v)
                                .map_err(|e| e.context(&format!("step {i}, kernel {name}")))
                        })
                        .collect::<Result<Vec<_>, _>>()?;
                    Some(
                        LaunchFrame::new(&views, vals)
                            .map_err(|e| e.context(&format!("step {i}, kernel {name}")))?,
                    )
                }
                Op::Copy { dst, src } => {
                    l.view(dst)?;
                    l.view(src)?;
                    if dst.size != src.size {
                        return Err(FastRpcError::invalid(
                            "load",
                            format!("step {i}: copy sizes differ"),
                        ));
                    }
                    None
                }
            };
            l.frames.push(frame);
        }
        l.plan = plan;
        if pattern == Pattern::LoadOnce {
            for k in 0..l.plan.kernels.len() {
                let kn = &l.plan.kernels[k];
                l.handles[k] = Some(session.open_lib(&kn.name, kn.lib.clone())?);
            }
        }
        Ok(l)
    }

    fn view(&self, v: &View) -> Result<BufView, FastRpcError> {
        let b = self.bufs.get(v.buffer as usize).ok_or_else(|| {
            FastRpcError::invalid("load", format!("buffer {} does not exist", v.buffer))
        })?;
        if u64::from(v.offset) + u64::from(v.size) > b.len {
            return Err(FastRpcError::invalid(
                "load",
                format!("view {v:?} lies outside the {}-byte buffer", b.len),
            ));
        }
        Ok(BufView {
            fd: b.fd,
            offset: v.offset,
            size: v.size,
        })
    }

    fn buf(&self, i: u32) -> Result<IonBuf, FastRpcError> {
        self.bufs.get(i as usize).copied().ok_or_else(|| {
            FastRpcError::invalid("buffer access", format!("buffer {i} does not exist"))
        })
    }

    /// Write bytes into plan buffer `i`.
    pub fn write(&self, i: u32, offset: u64, data: &[u8]) -> Result<(), FastRpcError> {
        self.session.io().ion_write(self.buf(i)?.fd, offset, data)
    }

    /// Read bytes of plan buffer `i`.
    pub fn read(&self, i: u32, offset: u64, out: &mut [u8]) -> Result<(), FastRpcError> {
        self.session.io().ion_read(self.buf(i)?.fd, offset, out)
    }

    /// Run every op once; errors name the call, the step and the kernel.
    pub fn step(&mut self) -> Result<StepStats, FastRpcError> {
        let io = self.session.io();
        let mut st = StepStats::default();
        for (i, op) in self.plan.ops.iter().enumerate() {
            match op {
                Op::Copy { dst, src } => {
                    let (d, s) = (
                        self.bufs[dst.buffer as usize],
                        self.bufs[src.buffer as usize],
                    );
                    io.ion_copy(
                        d.fd,
                        dst.offset.into(),
                        s.fd,
                        src.offset.into(),
                        src.size.into(),
                    )?;
                }
                Op::Launch { kernel, .. } => {
                    let k = &self.plan.kernels[*kernel as usize];
                    let ctx = || format!("step {i}, kernel {}", k.name);
                    let Some(frame) = self.frames[i].as_mut() else {
                        continue;
                    };
                    let handle = match self.handles[*kernel as usize] {
                        Some(h) => h,
                        None => {
                            st.invokes += 1;
                            self.session.open_lib(&k.name, k.lib.clone())?
                        }
                    };
                    st.invokes += 1;
                    let r = frame.invoke(io, handle).map_err(|e| e.context(&ctx()));
                    if self.pattern == Pattern::PerLaunch {
                        st.invokes += 1;
                        self.session.close_lib(&k.name, handle)?;
                    }
                    r?;
                    st.dsp_us += frame.timer_us();
                }
            }
        }
        Ok(st)
    }

    /// Close the libraries and free the buffers.
    pub fn unload(self) -> Result<(), FastRpcError> {
        let mut first = Ok(());
        for (k, h) in self.handles.iter().enumerate() {
            if let Some(h) = h {
                let r = self.session.close_lib(&self.plan.kernels[k].name, *h);
                if first.is_ok() {
                    first = r;
                }
            }
        }
        for b in &self.bufs {
            let r = self.session.io().ion_free(*b);
            if first.is_ok() {
                first = r;
            }
        }
        first
    }
}
