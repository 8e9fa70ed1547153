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
//! Waves of a workgroup run one at a time until each ends or parks at `s_barrier`; when every
//! unfinished wave is parked they are all released. Workgroups run in order (x fastest); memory
//! is synchronous, so the result is deterministic.
use std::collections::HashMap;
use std::sync::Arc;

use super::super::shader::{DispatchRequest, ExecError, GpuMemory, ShaderExecutor};
use super::decode::Inst;
use super::ops::{Enc, Op};
use super::program::Program;
use super::wave::{Wave, LANES};
use super::{mem, salu, valu};

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
}

/// The RDNA3 interpreter as a GPU-model shader executor.
pub struct Rdna3 {
    cache: HashMap<u64, Arc<Program>>,
    budget: u64,
    stats: Stats,
    waves: Vec<Wave>,
    lds: Vec<u8>,
}

impl Default for Rdna3 {
    fn default() -> Self {
        Self::new()
    }
}

/// Whether a step let the wave continue, park at a barrier or end.
enum Flow {
    Next,
    Barrier,
    End,
}

impl Rdna3 {
    /// An interpreter with the default hang budget.
    pub fn new() -> Self {
        Rdna3 {
            cache: HashMap::new(),
            budget: DEFAULT_BUDGET,
            stats: Stats::default(),
            waves: Vec::new(),
            lds: Vec::new(),
        }
    }

    /// Set the per-wave instruction budget (a wave over it is [`ExecError::Hang`]).
    pub fn with_budget(mut self, budget: u64) -> Self {
        self.budget = budget;
        self
    }

    /// Counters since creation.
    pub fn stats(&self) -> Stats {
        self.stats
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

/// The error for reaching instruction `idx` where decoding stopped.
fn unsupported(code_va: u64, p: &Program, idx: usize) -> ExecError {
    let (offset, dwords, what) = match &p.stop {
        Some((off, raw, what)) => (u64::from(*off), raw.clone(), *what),
        None => (
            p.offsets
                .get(idx)
                .map_or(p.code.len() as u64, |&o| u64::from(o)),
            heapless::Vec::new(),
            "execution ran past the end of the decoded code",
        ),
    };
    ExecError::Unsupported {
        code_va,
        offset,
        dwords,
        what,
    }
}

/// The ABI fields of a dispatch, checked.
struct Abi {
    user_sgprs: usize,
    tgid_en: [bool; 3],
    tidig: u32,
    lds_bytes: usize,
    scratch_lane: usize,
}

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
        let [wx, wy, wz] = req.workgroup_size;
        let threads = (wx * wy * wz) as usize;
        let nwaves = threads.div_ceil(LANES);
        if self.waves.len() < nwaves {
            self.waves.resize_with(nwaves, Wave::default);
        }
        self.lds.resize(abi.lds_bytes, 0);
        let mut waves = std::mem::take(&mut self.waves);
        let result = (|| {
            for gz in 0..req.grid[2] {
                for gy in 0..req.grid[1] {
                    for gx in 0..req.grid[0] {
                        self.lds.fill(0);
                        for (k, w) in waves[..nwaves].iter_mut().enumerate() {
                            init_wave(w, req, &abi, [gx, gy, gz], k, threads);
                        }
                        self.run_group(&prog, req.code_va, &mut waves[..nwaves], mem)?;
                    }
                }
            }
            Ok(())
        })();
        self.waves = waves;
        self.stats.dispatches += u64::from(result.is_ok());
        result
    }
}

/// Set up wave `k` of the workgroup with id `group` (see the module doc for the ABI).
fn init_wave(
    w: &mut Wave,
    req: &DispatchRequest,
    abi: &Abi,
    group: [u32; 3],
    k: usize,
    threads: usize,
) {
    w.reset(abi.scratch_lane);
    w.s[..abi.user_sgprs].copy_from_slice(&req.user_data[..abi.user_sgprs]);
    let mut n = abi.user_sgprs;
    for (&on, &id) in abi.tgid_en.iter().zip(&group) {
        if on {
            w.s[n] = id;
            n += 1;
        }
    }
    let [wx, wy, _] = req.workgroup_size;
    let mut exec = 0u32;
    for l in 0..LANES {
        let t = k * LANES + l;
        if t >= threads {
            continue;
        }
        exec |= 1 << l;
        let t = t as u32;
        let (x, y, z) = (t % wx, t / wx % wy, t / (wx * wy));
        let mut id = x;
        if abi.tidig >= 1 {
            id |= y << 10;
        }
        if abi.tidig >= 2 {
            id |= z << 20;
        }
        w.v[0][l] = id;
    }
    w.s[usize::from(super::operand::EXEC)] = exec;
}

impl Rdna3 {
    fn run_group(
        &mut self,
        prog: &Program,
        code_va: u64,
        waves: &mut [Wave],
        mem: &mut dyn GpuMemory,
    ) -> Result<(), ExecError> {
        loop {
            let mut progressed = false;
            for w in waves.iter_mut() {
                if w.done || w.at_barrier {
                    continue;
                }
                progressed = true;
                loop {
                    match self.step(w, prog, code_va, mem)? {
                        Flow::Next => {}
                        Flow::Barrier => {
                            w.at_barrier = true;
                            break;
                        }
                        Flow::End => {
                            w.done = true;
                            break;
                        }
                    }
                }
            }
            if waves.iter().all(|w| w.done) {
                return Ok(());
            }
            // Every live wave is at the barrier: release them together.
            for w in waves.iter_mut() {
                w.at_barrier = false;
            }
            if !progressed {
                return Err(bad(code_va, "workgroup made no progress"));
            }
        }
    }

    fn step(
        &mut self,
        w: &mut Wave,
        prog: &Program,
        code_va: u64,
        mem: &mut dyn GpuMemory,
    ) -> Result<Flow, ExecError> {
        let idx = w.pc as usize;
        let Some(i) = prog.insts.get(idx) else {
            return Err(unsupported(code_va, prog, idx));
        };
        w.executed += 1;
        self.stats.instructions += 1;
        if w.executed > self.budget {
            return Err(ExecError::Hang {
                code_va,
                budget: self.budget,
            });
        }
        w.pc += 1;
        let refuse = |what: &'static str, i: &Inst| {
            let off = prog.offsets[idx];
            let start = off as usize;
            let raw = prog.code[start..start + usize::from(i.len) * 4]
                .chunks_exact(4)
                .take(3)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect();
            ExecError::Unsupported {
                code_va,
                offset: u64::from(off),
                dwords: raw,
                what,
            }
        };
        let fault = |fault| ExecError::PageFault { code_va, fault };
        match i.enc {
            Enc::Sopp => return self.sopp(w, i, prog, idx).map_err(|e| refuse(e, i)),
            Enc::Sop1 | Enc::Sop2 | Enc::Sopk | Enc::Sopc => {
                salu::exec(w, i).map_err(|e| refuse(e, i))?
            }
            Enc::Smem => mem::smem(w, i, mem).map_err(fault)?,
            Enc::Vopd => {
                self.stats.lane_ops += 2 * u64::from(w.exec().count_ones());
                valu::exec_vopd(w, i).map_err(|e| refuse(e, i))?
            }
            Enc::Vop1 | Enc::Vop2 | Enc::Vopc | Enc::Vop3 | Enc::Vop3p => {
                self.stats.lane_ops += u64::from(w.exec().count_ones());
                valu::exec(w, i).map_err(|e| refuse(e, i))?
            }
            Enc::Global => {
                self.stats.lane_ops += u64::from(w.exec().count_ones());
                mem::global(w, i, mem).map_err(fault)?
            }
            Enc::Scratch => {
                self.stats.lane_ops += u64::from(w.exec().count_ones());
                mem::scratch(w, i)
            }
            Enc::Ds => {
                self.stats.lane_ops += u64::from(w.exec().count_ones());
                mem::ds(w, i, &mut self.lds)
            }
        }
        Ok(Flow::Next)
    }

    /// Program control (ISA chapter 4): branches, end, barrier; the rest are hints here.
    fn sopp(
        &mut self,
        w: &mut Wave,
        i: &Inst,
        prog: &Program,
        idx: usize,
    ) -> Result<Flow, &'static str> {
        use Op::*;
        let take = match i.op {
            SEndpgm => return Ok(Flow::End),
            SBarrier => return Ok(Flow::Barrier),
            SCodeEnd => return Err("s_code_end reached (execution ran off the program)"),
            SBranch => true,
            SCbranchScc0 => !w.scc,
            SCbranchScc1 => w.scc,
            SCbranchVccz => w.vcc() == 0,
            SCbranchVccnz => w.vcc() != 0,
            SCbranchExecz => w.exec() == 0,
            SCbranchExecnz => w.exec() != 0,
            // s_nop, s_clause, s_delay_alu, s_waitcnt*, s_set_inst_prefetch_distance: timing
            // hints with no architectural effect when memory is synchronous. s_sendmsg: only
            // MSG_DEALLOC_VGPRS (before s_endpgm) appears; it has no visible effect.
            _ => false,
        };
        if take {
            let t = prog.targets[idx];
            if t == u32::MAX {
                return Err("branch target is not an instruction boundary of the decoded code");
            }
            w.pc = t;
        }
        Ok(Flow::Next)
    }
}
