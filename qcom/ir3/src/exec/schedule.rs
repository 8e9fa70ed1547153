//! The min-PC scheduler (docs/hw/adreno-kgsl-pm4.md §16.5): every fiber has its own program counter and the
//! scheduler always issues the lowest pending PC for all fibers waiting there ("min-PC" reconvergence), so
//! divergent branches, loops and `bar` behave as on the hardware for structured code without modelling the branch
//! stack. Loads complete immediately, which makes `(sy)`/`(ss)` ordering no-ops; `(rptN)` repeats the instruction
//! with advancing registers; `predt/predf/prede` mask fibers per their `p0.x`. cat0 flow control is executed here;
//! every other instruction goes to the executor of its category.
use super::alu::qcom::round_executed;
use super::group::{Group, PMode, DONE};
use super::launch::{Launch, RunStats};
use super::memory::GpuMemory;
use super::wave::is_branch;
use crate::instr::*;
use crate::program::Program;

/// Upper bound on issues per batch of work groups, so a shader that never ends is an error instead of a hang.
const MAX_ISSUES: u64 = 1 << 28;

/// The scheduler's knowledge of the next issue.
#[derive(Clone, Copy)]
enum Next {
    /// Every live fiber waits at this PC (the issued set is all of them).
    Converged(u32),
    /// The fibers of the last issue wait at `pc`; every other live fiber waits at `rest_min` or later.
    Subset { pc: u32, rest_min: u32 },
    /// Find the lowest PC of the live fibers.
    Scan,
}

impl Group {
    pub(in crate::exec) fn run(
        &mut self,
        prog: &Program,
        l: &Launch<'_>,
        mem: &mut dyn GpuMemory,
        stats: &mut RunStats,
    ) -> Result<(), String> {
        let n = self.n;
        let mut lanes: Vec<u32> = Vec::with_capacity(n);
        let mut enabled: Vec<u32> = Vec::with_capacity(n);
        let mut issues = 0u64;
        // What is known about the next issue without scanning every fiber's PC.
        let mut next = if self.pc.contains(&DONE) {
            Next::Scan // fibers past a partial group's items never start
        } else {
            Next::Converged(0)
        };
        lanes.extend(0..n as u32);
        let mut all_pm_none = true;
        loop {
            let (pc, converged, rest_min) = match next {
                Next::Converged(pc) => (pc, true, DONE),
                Next::Subset { pc, rest_min } => (pc, false, rest_min),
                Next::Scan => {
                    // The lowest and second-lowest live PCs in one pass (DONE is u32::MAX, above every PC).
                    let (mut pc, mut rest_min) = (DONE, DONE);
                    for &p in &self.pc {
                        if p < pc {
                            rest_min = pc;
                            pc = p;
                        } else if p > pc && p < rest_min {
                            rest_min = p;
                        }
                    }
                    if pc == DONE {
                        break;
                    }
                    lanes.clear();
                    lanes.extend((0..n as u32).filter(|&i| self.pc[i as usize] == pc));
                    (pc, rest_min == DONE, rest_min)
                }
            };
            let Some(ins) = prog.instrs.get(pc as usize) else {
                return Err(format!(
                    "program counter {pc} ran past the end of the shader (no `end`)"
                ));
            };
            issues += 1;
            if issues > MAX_ISSUES {
                return Err(format!(
                    "more than {MAX_ISSUES} instructions issued: the shader does not terminate"
                ));
            }
            stats.issues += 1;
            let ctx =
                |e: String| format!("instruction {pc} (byte offset {:#x}) `{ins}`: {e}", pc * 8);
            if self.flow(ins, pc, &lanes).map_err(ctx)? {
                stats.fiber_instrs += lanes.len() as u64;
                if matches!(ins.op, Op::PredT | Op::PredF | Op::PredE) {
                    all_pm_none = self.pmode.iter().all(|&m| m == PMode::None);
                }
                // Still one group of fibers when every issued fiber went to the same place and none ended.
                let first = self.pc[lanes[0] as usize];
                let together = first != DONE && lanes.iter().all(|&i| self.pc[i as usize] == first);
                next = match (together, converged) {
                    (true, true) => Next::Converged(first),
                    (true, false) if first < rest_min => Next::Subset {
                        pc: first,
                        rest_min,
                    },
                    _ => Next::Scan,
                };
                continue;
            }
            let active: &[u32] =
                if all_pm_none {
                    &lanes
                } else {
                    enabled.clear();
                    enabled.extend(lanes.iter().copied().filter(|&i| {
                        match self.pmode[i as usize] {
                            PMode::None => true,
                            PMode::True => self.pmask[i as usize],
                            PMode::False => !self.pmask[i as usize],
                        }
                    }));
                    &enabled
                };
            stats.fiber_instrs += (active.len() * (ins.repeat as usize + 1)) as u64;
            self.exec(ins, active, l, mem).map_err(ctx)?;
            // The per-fiber PCs of the issued fibers are only written when other fibers must be compared with
            // them: every flow instruction writes the PC of each fiber it issues, and before a scan the issued
            // fibers' PC is set here.
            next = if converged {
                Next::Converged(pc + 1)
            } else if pc + 1 < rest_min {
                Next::Subset {
                    pc: pc + 1,
                    rest_min,
                }
            } else {
                for &i in &lanes {
                    self.pc[i as usize] = pc + 1;
                }
                Next::Scan
            };
        }
        Ok(())
    }

    /// cat0 flow control; returns false for every other instruction.
    fn flow(&mut self, ins: &Instr, pc: u32, lanes: &[u32]) -> Result<bool, String> {
        let target = |off: i32| -> Result<u32, String> {
            let t = pc as i64 + off as i64;
            if t < 0 {
                return Err(format!("branch target {t} before the start of the shader"));
            }
            Ok(t as u32)
        };
        let pbit = |p: &u8, s: PredSrc| ((p >> s.comp) & 1 == 1) != s.inv;
        match ins.op {
            Op::Nop => {
                for &i in lanes {
                    self.pc[i as usize] = pc + 1;
                }
            }
            Op::End => {
                for &i in lanes {
                    self.pc[i as usize] = DONE;
                }
            }
            Op::Kill(s) => {
                for &i in lanes {
                    let i = i as usize;
                    self.pc[i] = if pbit(&self.p[i], s) { DONE } else { pc + 1 };
                }
            }
            Op::PredT | Op::PredF | Op::PredE => {
                for &i in lanes {
                    let i = i as usize;
                    self.pmode[i] = match ins.op {
                        Op::PredT => PMode::True,
                        Op::PredF => PMode::False,
                        _ => PMode::None,
                    };
                    if ins.op != Op::PredE {
                        self.pmask[i] = self.p[i] & 1 == 1;
                    }
                    self.pc[i] = pc + 1;
                }
            }
            Op::Jump(off) => {
                let t = target(off)?;
                for &i in lanes {
                    self.pc[i as usize] = t;
                }
            }
            Op::Br { kind, p1, p2, off } => {
                let t = target(off)?;
                // bany/ball vote over the issued fibers of each wave (docs/hw/adreno-kgsl-pm4.md §16.10).
                let votes = matches!(kind, BrKind::Any | BrKind::All).then(|| {
                    self.wave_votes(
                        lanes,
                        |i| pbit(&self.p[i as usize], p1),
                        kind == BrKind::All,
                    )
                });
                for &i in lanes {
                    let p = &self.p[i as usize];
                    let take = match kind {
                        BrKind::Br => pbit(p, p1),
                        BrKind::Or => pbit(p, p1) || pbit(p, p2),
                        BrKind::And => pbit(p, p1) && pbit(p, p2),
                        _ => votes
                            .as_ref()
                            .is_some_and(|v| v.get(&self.wave_key(i)) == Some(&true)),
                    };
                    self.pc[i as usize] = if take { t } else { pc + 1 };
                }
            }
            Op::Ret => return Err("`ret` outside a subroutine is not supported".into()),
            Op::Ext(e) if is_branch(&e) => self.wave_branch(&e, pc, lanes)?,
            Op::Bar { .. } => {
                // Min-PC issue guarantees every live fiber of the group has reached (or passed) this PC.
                for &i in lanes {
                    self.pc[i as usize] = pc + 1;
                }
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn exec(
        &mut self,
        ins: &Instr,
        lanes: &[u32],
        l: &Launch<'_>,
        mem: &mut dyn GpuMemory,
    ) -> Result<(), String> {
        if lanes.is_empty() {
            return Ok(());
        }
        if ins.round != 0 && !round_executed(ins) {
            return Err("cat1 conversions with an explicit rounding mode are not executed".into());
        }
        match ins.op {
            Op::Mov {
                src_ty,
                dst_ty,
                dst,
                src,
                ..
            } => self.mov(ins, lanes, l, (src_ty, dst_ty, dst, src))?,
            Op::Swz {
                src_ty,
                dst_ty,
                dst,
                src,
            } => self.parallel_copy(
                lanes,
                l,
                (src_ty, dst_ty),
                &[(dst[0], src[0]), (dst[1], src[1])],
            )?,
            Op::Gat {
                src_ty,
                dst_ty,
                dst,
                src,
            } => {
                let pairs: [(RegNum, RegNum); 4] =
                    core::array::from_fn(|c| (dst + c as u16, src[c]));
                self.parallel_copy(lanes, l, (src_ty, dst_ty), &pairs)?
            }
            Op::Sct {
                src_ty,
                dst_ty,
                dst,
                src,
            } => {
                let pairs: [(RegNum, RegNum); 4] =
                    core::array::from_fn(|c| (dst[c], src + c as u16));
                self.parallel_copy(lanes, l, (src_ty, dst_ty), &pairs)?
            }
            Op::Alu2 { .. } | Op::Alu3 { .. } | Op::Sfu { .. } => self.alu(ins, lanes, l)?,
            Op::Isam { .. } => self.isam(ins, lanes, l, mem)?,
            Op::Load { .. } | Op::Store { .. } => match ins.op.access() {
                Some(m) if m.store => self.store(m, None, lanes, mem)?,
                Some(m) => self.load(m, None, lanes, mem)?,
                None => {}
            },
            Op::Stib { .. } => self.stib(ins, lanes, l, mem)?,
            Op::Ext(e) => self.ext(&e, lanes, l, mem)?,
            _ => return Err("instruction not executed by the interpreter".into()),
        }
        Ok(())
    }

    /// A blob-compiler instruction (docs/hw/adreno-kgsl-pm4.md §16.9), to the executor of its category.
    fn ext(
        &mut self,
        e: &Ext,
        lanes: &[u32],
        l: &Launch<'_>,
        mem: &mut dyn GpuMemory,
    ) -> Result<(), String> {
        match e.kind {
            ExtKind::Mem { m, index } if m.store => self.store(m, index, lanes, mem),
            ExtKind::Mem { m, index } => self.load(m, index, lanes, mem),
            ExtKind::Ldib { .. } | ExtKind::Resinfo { .. } | ExtKind::Ldib1d { .. } => {
                self.uav_ext(e.kind, lanes, l, mem)
            }
            ExtKind::Dot { .. } => {
                self.dot(e.kind, lanes);
                Ok(())
            }
            ExtKind::AtomicLocal { .. } => self.atomic_local(e.kind, lanes),
            ExtKind::Wave(op) => self.wave_op(op, lanes),
            ExtKind::Atomic { .. } => self.atomic_rmw(e.kind, lanes, mem),
            ExtKind::Sam(s) => self.sam(&s, lanes, l, mem),
            ExtKind::NoEffect => Ok(()),
            ExtKind::Ibo(_) | ExtKind::ResinfoB { .. } => self.bindless_ext(e.kind, lanes, l, mem),
            ExtKind::Ldc { .. }
            | ExtKind::LdcK { .. }
            | ExtKind::LdgK { .. }
            | ExtKind::Stc { .. } => self.ubo_ext(e.kind, lanes, l, mem),
        }
    }
}
