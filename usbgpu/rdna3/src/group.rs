//! One workgroup at a time: its waves set up by the dispatch ABI, run in turn until each ends or
//! parks at `s_barrier` (all released together when every unfinished wave is parked), with the
//! workgroup's LDS (docs/hw/rdna3-isa.md §10, §11).
//!
//! A [`Group`] owns what one workgroup needs (waves, LDS, counters) and nothing shared, so the
//! serial dispatch uses one and the parallel one ([`super::parallel`]) gives each worker thread its
//! own. Only `core` + `alloc` APIs.
use super::decode::Inst;
use super::ops::{Enc, Op};
use super::program::Program;
use super::wave::{Wave, LANES};
use super::{mem, salu, valu};
use crate::shader::{DispatchRequest, ExecError, GpuMemory};

/// The dispatch ABI fields a workgroup needs, already checked (`dispatch::abi`).
#[derive(Clone, Copy, Debug)]
pub struct Abi {
    pub user_sgprs: usize,
    pub tgid_en: [bool; 3],
    pub tidig: u32,
    pub lds_bytes: usize,
    pub scratch_lane: usize,
}

/// The state of one workgroup runner: reusable from one workgroup to the next.
#[derive(Default)]
pub struct Group {
    waves: Vec<Wave>,
    lds: Vec<u8>,
    /// Per-wave instruction budget.
    pub budget: u64,
    /// Wave instructions executed since the counters were last taken.
    pub instructions: u64,
    /// Lane-operations executed since the counters were last taken.
    pub lane_ops: u64,
}

/// Whether a step let the wave continue, park at a barrier or end.
enum Flow {
    Next,
    Barrier,
    End,
}

/// The error for reaching instruction `idx` where decoding stopped.
pub fn unsupported(code_va: u64, p: &Program, idx: usize) -> ExecError {
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

impl Group {
    /// A runner with the per-wave instruction budget `budget`.
    pub fn new(budget: u64) -> Group {
        Group {
            budget,
            ..Group::default()
        }
    }

    /// Run workgroup `id` of `req` to completion over `mem`.
    pub fn run(
        &mut self,
        prog: &Program,
        req: &DispatchRequest,
        abi: &Abi,
        id: [u32; 3],
        mem: &mut dyn GpuMemory,
    ) -> Result<(), ExecError> {
        let threads = req.workgroup_size.iter().product::<u32>() as usize;
        let nwaves = threads.div_ceil(LANES);
        if self.waves.len() < nwaves {
            self.waves.resize_with(nwaves, Wave::default);
        }
        self.lds.clear();
        self.lds.resize(abi.lds_bytes, 0);
        let mut waves = core::mem::take(&mut self.waves);
        for (k, w) in waves[..nwaves].iter_mut().enumerate() {
            init_wave(w, req, abi, id, k, threads);
        }
        let result = self.run_waves(prog, req.code_va, &mut waves[..nwaves], mem);
        self.waves = waves;
        result
    }

    fn run_waves(
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
                return Err(ExecError::BadDispatch {
                    code_va,
                    what: "workgroup made no progress",
                });
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
        self.instructions += 1;
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
        let lanes = u64::from(w.exec().count_ones());
        match i.enc {
            Enc::Sopp => return sopp(w, i, prog, idx).map_err(|e| refuse(e, i)),
            Enc::Sop1 | Enc::Sop2 | Enc::Sopk | Enc::Sopc => {
                salu::exec(w, i).map_err(|e| refuse(e, i))?
            }
            Enc::Smem => mem::smem(w, i, mem).map_err(fault)?,
            Enc::Vopd => {
                self.lane_ops += 2 * lanes;
                valu::exec_vopd(w, i).map_err(|e| refuse(e, i))?
            }
            Enc::Vop1 | Enc::Vop2 | Enc::Vopc | Enc::Vop3 | Enc::Vop3p => {
                self.lane_ops += lanes;
                valu::exec(w, i).map_err(|e| refuse(e, i))?
            }
            Enc::Global => {
                self.lane_ops += lanes;
                mem::global(w, i, mem).map_err(fault)?
            }
            Enc::Scratch => {
                self.lane_ops += lanes;
                mem::scratch(w, i)
            }
            Enc::Ds => {
                self.lane_ops += lanes;
                mem::ds(w, i, &mut self.lds)
            }
        }
        Ok(Flow::Next)
    }
}

/// Set up wave `k` of the workgroup with id `group` (dispatch ABI, docs/hw/rdna3-isa.md §11).
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

/// Program control (ISA chapter 4): branches, end, barrier; the rest are hints here.
fn sopp(w: &mut Wave, i: &Inst, prog: &Program, idx: usize) -> Result<Flow, &'static str> {
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
