//! A whole model on the DSP with one FastRPC invoke per step. The bundle's model library (every kernel linked
//! with the schedule runner, qcom/hexagon/dsp/schedule_runner.c) is opened once; every plan buffer is placed at a 128-byte
//! aligned offset of one ION arena; the init and run phases are encoded once into schedule tables
//! ([`super::table`]); a step is then a single INVOKE_ATTRS {table in, 16-byte result out, the arena as a dma
//! handle} built on the stack — no allocation, no library open/close, no listener traffic. Inputs and outputs
//! move through the host mapping of the arena. Errors name the call, the phase and, when the runner stopped at a
//! kernel, the op and the kernel.
use super::abi::{FASTRPC_ATTR_NOVA, ION_ALIGN, ION_FLAG_CACHED, ION_SYSTEM_HEAP_MASK};
use super::engine::{Kernel, Op, StepStats, View};
use super::pack::BUFFER_ALIGN;
use super::session::Session;
use super::table::{self, ArenaView, RunResult, TableOp, RESULT_LEN};
use super::{Arg, FastRpcError, IonBuf};

/// What to load: the model library, the kernel names by dispatcher index, the buffers and both phases.
#[derive(Clone, Debug, Default)]
pub struct ModelPlan {
    pub library: Option<Kernel>,
    pub kernel_names: Vec<String>,
    pub buffers: Vec<u64>,
    /// Run once by [`ModelRun::init`] (after the initial bytes are written).
    pub init: Vec<Op>,
    /// Run by every [`ModelRun::step`].
    pub run: Vec<Op>,
}

/// One encoded phase: its table and, per op, the kernel it launches.
struct Phase {
    name: &'static str,
    table: Vec<u8>,
    kernel_of: Vec<Option<u32>>,
    launches: u32,
}

/// A model loaded on a session.
pub struct ModelRun {
    session: Session,
    name: String,
    kernel_names: Vec<String>,
    arena: IonBuf,
    base: Vec<u64>,
    sizes: Vec<u64>,
    handle: Option<u32>,
    init: Phase,
    run: Phase,
    result: [u8; RESULT_LEN],
    sc: u32,
    fds: [i32; 3],
    attrs: [u32; 3],
}

fn place(buffers: &[u64]) -> Result<(Vec<u64>, u64), FastRpcError> {
    let mut base = Vec::with_capacity(buffers.len());
    let mut at = 0u64;
    for &len in buffers {
        at = at.next_multiple_of(u64::from(BUFFER_ALIGN));
        base.push(at);
        at += len.max(1);
    }
    let total = at
        .next_multiple_of(u64::from(BUFFER_ALIGN))
        .max(u64::from(BUFFER_ALIGN));
    if total > i32::MAX as u64 {
        return Err(FastRpcError::invalid(
            "load",
            format!("the arena needs {total} bytes; the DSP maps at most 2 GiB"),
        ));
    }
    Ok((base, total))
}

fn encode_phase(
    name: &'static str,
    ops: &[Op],
    base: &[u64],
    sizes: &[u64],
    arena: u32,
    names: &[String],
) -> Result<Phase, FastRpcError> {
    let view = |i: usize, v: &View| -> Result<ArenaView, FastRpcError> {
        let size = sizes.get(v.buffer as usize).ok_or_else(|| {
            FastRpcError::invalid(
                "load",
                format!("{name} op {i}: buffer {} does not exist", v.buffer),
            )
        })?;
        if u64::from(v.offset) + u64::from(v.size) > *size {
            return Err(FastRpcError::invalid(
                "load",
                format!("{name} op {i}: view {v:?} lies outside the {size}-byte buffer"),
            ));
        }
        Ok(ArenaView {
            arena: 0,
            // the arena is below 2 GiB (checked by `place`)
            offset: (base[v.buffer as usize] + u64::from(v.offset)) as u32,
            size: v.size,
        })
    };
    let mut views: Vec<Vec<ArenaView>> = Vec::with_capacity(ops.len());
    let mut kernel_of = Vec::with_capacity(ops.len());
    for (i, op) in ops.iter().enumerate() {
        match op {
            Op::Launch { kernel, bufs, .. } => {
                if *kernel as usize >= names.len() {
                    return Err(FastRpcError::invalid(
                        "load",
                        format!("{name} op {i}: kernel {kernel} does not exist"),
                    ));
                }
                views.push(bufs.iter().map(|v| view(i, v)).collect::<Result<_, _>>()?);
                kernel_of.push(Some(*kernel));
            }
            Op::Copy { dst, src } => {
                views.push(vec![view(i, dst)?, view(i, src)?]);
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
    let table = table::encode(&[arena], &tops).map_err(|e| match e {
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
                reason: format!("{name} {reason}{kernel}"),
            }
        }
        e => e,
    })?;
    Ok(Phase {
        name,
        table,
        launches: kernel_of.iter().filter(|k| k.is_some()).count() as u32,
        kernel_of,
    })
}

impl ModelRun {
    /// Allocate the arena, encode both phases and open the model library (the DSP loader fetches it through the
    /// listener once). The session is closed if loading fails.
    pub fn load(session: Session, plan: &ModelPlan) -> Result<Self, FastRpcError> {
        let lib = plan.library.as_ref().ok_or_else(|| {
            FastRpcError::invalid("load", "the bundle has no DSP model library (recompile it)")
        })?;
        let (base, total) = place(&plan.buffers)?;
        let names = &plan.kernel_names;
        let init = encode_phase(
            "init",
            &plan.init,
            &base,
            &plan.buffers,
            total as u32,
            names,
        )?;
        let run = encode_phase("run", &plan.run, &base, &plan.buffers, total as u32, names)?;
        let sc = table::run_sc(1).unwrap_or(table::SC_RUN_BASE | 1);
        let arena =
            session
                .io()
                .ion_alloc(total, ION_ALIGN, ION_SYSTEM_HEAP_MASK, ION_FLAG_CACHED)?;
        let mut m = ModelRun {
            session,
            name: lib.name.clone(),
            kernel_names: plan.kernel_names.clone(),
            arena,
            base,
            sizes: plan.buffers.clone(),
            handle: None,
            init,
            run,
            result: [0; RESULT_LEN],
            sc,
            fds: [-1, -1, arena.fd],
            attrs: [0, 0, FASTRPC_ATTR_NOVA],
        };
        m.handle = Some(m.session.open_lib(&lib.name, lib.lib.clone())?);
        Ok(m)
    }

    /// The session (fault tests, counters).
    pub fn session(&self) -> &Session {
        &self.session
    }

    fn at(&self, i: u32, offset: u64, len: usize) -> Result<u64, FastRpcError> {
        let size = *self.sizes.get(i as usize).ok_or_else(|| {
            FastRpcError::invalid("buffer access", format!("buffer {i} does not exist"))
        })?;
        if offset.checked_add(len as u64).is_none_or(|end| end > size) {
            return Err(FastRpcError::invalid(
                "buffer access",
                format!("{len} bytes at {offset} outside the {size}-byte buffer {i}"),
            ));
        }
        Ok(self.base[i as usize] + offset)
    }

    /// Write bytes into plan buffer `i` (host mapping of the arena; no FastRPC call).
    pub fn write(&self, i: u32, offset: u64, data: &[u8]) -> Result<(), FastRpcError> {
        let at = self.at(i, offset, data.len())?;
        self.session.io().ion_write(self.arena.fd, at, data)
    }

    /// Read bytes of plan buffer `i`.
    pub fn read(&self, i: u32, offset: u64, out: &mut [u8]) -> Result<(), FastRpcError> {
        let at = self.at(i, offset, out.len())?;
        self.session.io().ion_read(self.arena.fd, at, out)
    }

    /// Run the init phase once (0 invokes when it is empty).
    pub fn init(&mut self) -> Result<StepStats, FastRpcError> {
        self.invoke(false)
    }

    /// Run one step: exactly one invoke (none for an empty run phase).
    pub fn step(&mut self) -> Result<StepStats, FastRpcError> {
        self.invoke(true)
    }

    /// Launches per step (what tinygrad's pattern would open, invoke and close).
    pub fn launches_per_step(&self) -> u32 {
        self.run.launches
    }

    fn invoke(&mut self, run: bool) -> Result<StepStats, FastRpcError> {
        let ModelRun {
            session,
            name,
            kernel_names,
            handle,
            init,
            run: run_phase,
            result,
            sc,
            fds,
            attrs,
            ..
        } = self;
        let phase = if run { &*run_phase } else { &*init };
        if phase.kernel_of.is_empty() {
            return Ok(StepStats::default());
        }
        let Some(handle) = *handle else {
            return Err(FastRpcError::invalid(
                "step",
                "the model library is not open",
            ));
        };
        *result = [0; RESULT_LEN];
        let mut args = [Arg::In(&phase.table), Arg::Out(result), Arg::Handle];
        session
            .io()
            .invoke_attrs(handle, *sc, &mut args, fds, attrs)
            .map_err(|e| e.context(&format!("model library {name}, {} phase", phase.name)))?;
        let r = RunResult::parse(result);
        if r.status != 0 || r.ops_done as usize != phase.kernel_of.len() {
            let at = phase.kernel_of.get(r.ops_done as usize).copied().flatten();
            let what = at.map_or("a copy".to_string(), |k| {
                format!("kernel {}", kernel_names[k as usize])
            });
            return Err(FastRpcError::Remote {
                call: format!("INVOKE_ATTRS run ({name}, {} phase)", phase.name),
                reason: format!(
                    "the schedule stopped at op {} of {} ({what}) with status {}",
                    r.ops_done,
                    phase.kernel_of.len(),
                    r.status
                ),
            });
        }
        Ok(StepStats {
            invokes: 1,
            dsp_us: r.dsp_us,
        })
    }

    /// Close the library, free the arena and close the session; the first error wins.
    pub fn close(mut self) -> Result<(), FastRpcError> {
        let mut first = Ok(());
        if let Some(h) = self.handle.take() {
            first = self.session.close_lib(&self.name, h);
        }
        let r = self.session.io().ion_free(self.arena);
        if first.is_ok() {
            first = r;
        }
        let r = self.session.close();
        if first.is_ok() {
            first = r;
        }
        first
    }
}
