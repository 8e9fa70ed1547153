//! Running a dispatch: the compute dispatch ABI, workgroups of waves, LDS, `s_barrier`, and the
//! per-kernel program cache ([`Rdna3`] is the [`ShaderExecutor`] the GPU model plugs in).
//!
//! Dispatch ABI (docs/hw/rdna3-isa.md §11):
//! `COMPUTE_USER_DATA_0..N-1` → s0…s(N−1) with N = USER_SGPR_COUNT (`PGM_RSRC2[5:1]`); then the
//! workgroup ids X, Y, Z whose `TGID_*_EN` bits are set, in that order; v0 = x | y << 10 | z << 20
//! (the components TIDIG_COMP_CNT enables); EXEC = the lanes that hold a thread. Wave32 only
//! (`CS_W32_EN`, initiator bit 15); float mode must be RNE with denormals kept and IEEE_MODE set
//! (what every tinygrad kernel asks for); TG_SIZE_EN and a non-zero COMPUTE_START are
//! refused — each refusal a [`ExecError::BadDispatch`] naming it.
//!
//! Workgroups ([`Group`]) run one after another (x fastest) with one thread, or spread over
//! several host threads ([`super::parallel`]) whose writes are applied in that same order
//! afterwards; either way the result is deterministic and, for kernels whose workgroups do not
//! read each other's output, the same byte for byte. Thread count: [`Rdna3::with_threads`], else
//! `$MODELRT_RDNA3_THREADS`, else the host's available parallelism.
use std::collections::HashMap;
use std::sync::Arc;

use super::group::{unsupported, Abi, Group};
use super::ops::Op;
use super::parallel;
use super::program::Program;
use crate::shader::{DispatchRequest, ExecError, GpuMemory, ShaderExecutor};

/// Instructions one wave may execute before the dispatch is declared hung.
pub const DEFAULT_BUDGET: u64 = 1 << 28;
/// Largest code object read from GPU memory.
const MAX_CODE: usize = 1 << 20;
/// Bytes of LDS per `PGM_RSRC2.LDS_SIZE` unit.
pub const LDS_GRANULE: usize = 512;
/// LDS per workgroup on gfx11.
pub const LDS_MAX: usize = 64 * 1024;

/// Counters for benchmarks and reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Dispatches completed.
    pub dispatches: u64,
    /// Wave instructions executed (a VOPD counts once).
    pub instructions: u64,
    /// Active lanes summed over executed VALU/VOPD/vector-memory instructions (a VOPD counts 2×).
    pub lane_ops: u64,
    /// Bytes written by more than one workgroup of a dispatch (counted by parallel dispatches
    /// only; the later workgroup's bytes win, as in a serial run).
    pub overlapping_writes: u64,
    /// Dispatches whose workgroups ran on more than one thread.
    pub parallel_dispatches: u64,
}

/// The RDNA3 interpreter as a GPU-model shader executor.
pub struct Rdna3 {
    cache: HashMap<u64, Arc<Program>>,
    budget: u64,
    threads: usize,
    stats: Stats,
    /// One workgroup runner per thread (the first also serves serial dispatches).
    groups: Vec<Group>,
}

impl Default for Rdna3 {
    fn default() -> Self {
        Self::new()
    }
}

impl Rdna3 {
    /// An interpreter with the default hang budget and [`parallel::default_threads`] threads.
    pub fn new() -> Self {
        Rdna3 {
            cache: HashMap::new(),
            budget: DEFAULT_BUDGET,
            threads: parallel::default_threads(),
            stats: Stats::default(),
            groups: Vec::new(),
        }
    }

    /// Set the per-wave instruction budget (a wave over it is [`ExecError::Hang`]).
    pub fn with_budget(mut self, budget: u64) -> Self {
        self.budget = budget;
        self
    }

    /// Run the workgroups of a dispatch on `threads` host threads (1, or 0, = serially).
    pub fn with_threads(mut self, threads: usize) -> Self {
        self.threads = threads.max(1);
        self
    }

    /// Host threads a dispatch may use.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Counters since creation.
    pub fn stats(&self) -> Stats {
        let mut s = self.stats;
        for g in &self.groups {
            s.instructions += g.instructions;
            s.lane_ops += g.lane_ops;
        }
        s
    }

    /// The program at `code_va`, decoded once; reused only while the code bytes are unchanged.
    fn program(
        &mut self,
        code_va: u64,
        mem: &mut dyn GpuMemory,
    ) -> Result<Arc<Program>, ExecError> {
        if let Some(p) = self.cache.get(&code_va) {
            let mut now = vec![0u8; p.code.len()];
            if mem.read(code_va, &mut now).is_ok() && now == p.code {
                return Ok(p.clone());
            }
        }
        let mut code = Vec::new();
        let mut chunk = [0u8; 4096];
        let prog = loop {
            let va = code_va.wrapping_add(code.len() as u64);
            if mem.read(va, &mut chunk).is_err() {
                // The mapping ends inside this chunk: take what is mapped, dword by dword.
                let mut d = [0u8; 4];
                while code.len() < MAX_CODE
                    && mem
                        .read(code_va.wrapping_add(code.len() as u64), &mut d)
                        .is_ok()
                {
                    code.extend_from_slice(&d);
                }
                break Program::decode(&code);
            }
            code.extend_from_slice(&chunk);
            let p = Program::decode(&code);
            let ended = p.insts.last().is_some_and(|i| i.op == Op::SCodeEnd);
            // A refusal well before the end of what was read is final (not a cut instruction).
            let refused = p
                .stop
                .as_ref()
                .is_some_and(|s| s.0 as usize + 12 < code.len());
            if ended || refused || code.len() >= MAX_CODE {
                break p;
            }
        };
        if prog.insts.is_empty() {
            return Err(unsupported(code_va, &prog, 0));
        }
        let prog = Arc::new(prog);
        self.cache.insert(code_va, prog.clone());
        Ok(prog)
    }
}

fn bad(code_va: u64, what: &'static str) -> ExecError {
    ExecError::BadDispatch { code_va, what }
}

/// The ABI fields of a dispatch, checked.
fn abi(req: &DispatchRequest) -> Result<Abi, ExecError> {
    let va = req.code_va;
    if req.initiator >> 15 & 1 == 0 {
        return Err(bad(
            va,
            "wave64 dispatch (CS_W32_EN clear) is not modelled; wave32 only",
        ));
    }
    let r1 = req.pgm_rsrc1;
    let (round, denorm32, denorm16) = (r1 >> 12 & 0xf, r1 >> 16 & 3, r1 >> 18 & 3);
    if round != 0 || denorm32 != 3 || denorm16 != 3 {
        return Err(bad(
            va,
            "float mode other than round-to-nearest-even with denormals preserved is not modelled",
        ));
    }
    if r1 >> 23 & 1 == 0 {
        return Err(bad(va, "IEEE_MODE = 0 is not modelled"));
    }
    let r2 = req.pgm_rsrc2;
    // Private memory per lane = TMPRING_SIZE.WAVESIZE (GC 11: bits 26–12, 15 bits; 256 bytes per
    // 64 lanes) × 4 (docs/hw/amd-driver.md §5.1).
    let scratch_lane = if r2 & 1 != 0 {
        let wavesize = (req.tmpring_size >> 12 & 0x7fff) as usize;
        if wavesize == 0 {
            return Err(bad(va, "SCRATCH_EN with COMPUTE_TMPRING_SIZE.WAVESIZE = 0"));
        }
        wavesize * 4
    } else {
        0
    };
    if r2 >> 10 & 1 != 0 {
        return Err(bad(va, "TG_SIZE_EN is not modelled"));
    }
    if req.start != [0; 3] {
        return Err(bad(va, "COMPUTE_START_X/Y/Z other than 0 is not modelled"));
    }
    if req.workgroup_size.contains(&0) {
        return Err(bad(va, "a zero workgroup size"));
    }
    let threads = req
        .workgroup_size
        .iter()
        .map(|&n| u64::from(n))
        .product::<u64>();
    if threads > 1024 {
        return Err(bad(va, "more than 1024 threads in a workgroup"));
    }
    let lds_bytes = (r2 >> 15 & 0x1ff) as usize * LDS_GRANULE;
    if lds_bytes > LDS_MAX {
        return Err(bad(va, "LDS_SIZE above 64 KiB"));
    }
    Ok(Abi {
        user_sgprs: (r2 >> 1 & 0x1f) as usize,
        tgid_en: [r2 >> 7 & 1 == 1, r2 >> 8 & 1 == 1, r2 >> 9 & 1 == 1],
        tidig: r2 >> 11 & 3,
        lds_bytes,
        scratch_lane,
    })
}

impl ShaderExecutor for Rdna3 {
    fn dispatch(
        &mut self,
        req: &DispatchRequest,
        mem: &mut dyn GpuMemory,
    ) -> Result<(), ExecError> {
        let abi = abi(req)?;
        if abi.user_sgprs > 16 {
            return Err(bad(req.code_va, "USER_SGPR_COUNT above 16"));
        }
        let prog = self.program(req.code_va, mem)?;
        let total = req
            .grid
            .iter()
            .try_fold(1u64, |a, &n| a.checked_mul(u64::from(n)));
        // A grid past 2^64 workgroups cannot finish either way; it runs (and hangs) serially.
        let threads = total.map_or(1, |t| (self.threads as u64).min(t).max(1) as usize);
        while self.groups.len() < threads {
            self.groups.push(Group::new(self.budget));
        }
        for g in self.groups.iter_mut() {
            g.budget = self.budget;
        }
        let result = if threads == 1 {
            serial(&mut self.groups[0], &prog, req, &abi, mem)
        } else {
            self.stats.parallel_dispatches += 1;
            parallel::dispatch(&mut self.groups[..threads], &prog, req, &abi, mem).map(|a| {
                self.stats.overlapping_writes += a.overlapping_bytes;
            })
        };
        self.stats.dispatches += u64::from(result.is_ok());
        result
    }
}

/// Every workgroup of `req` in order (x fastest) on one runner.
fn serial(
    g: &mut Group,
    prog: &Program,
    req: &DispatchRequest,
    abi: &Abi,
    mem: &mut dyn GpuMemory,
) -> Result<(), ExecError> {
    for gz in 0..req.grid[2] {
        for gy in 0..req.grid[1] {
            for gx in 0..req.grid[0] {
                g.run(prog, req, abi, [gx, gy, gz], mem)?;
            }
        }
    }
    Ok(())
}
