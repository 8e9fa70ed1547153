//! Executes a [`Program`] for one compute dispatch (docs/hw/adreno-kgsl-pm4.md §16.5). Small work groups are
//! batched (up to `BATCH_FIBERS` fibers, each group with its own shared memory) so one issue serves them all;
//! every fiber has its own program counter and the scheduler always issues the lowest pending PC for all fibers
//! waiting there ("min-PC" reconvergence), so divergent branches, loops and `bar` behave as on the hardware for
//! structured code without modelling the branch stack. Loads complete immediately, which makes `(sy)`/`(ss)`
//! ordering no-ops; `(rptN)` repeats the instruction with advancing registers; `predt/predf/prede` mask fibers per
//! their `p0.x`.
use super::instr::*;
use super::launch::{Dispatched, Launch, RunStats};
use super::memory::GpuMemory;
use super::program::Program;
use modelrt_core::half::f32_to_f16;

const DONE: u32 = u32::MAX;
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

#[derive(Clone, Copy, PartialEq, Eq)]
enum PMode {
    None,
    True,
    False,
}

/// Fibers batched into one [`Group`] when work groups are small: the per-issue cost is paid once for them all.
const BATCH_FIBERS: usize = 512;

/// The fibers of one or more work groups that execute together (a batch of independent work groups behaves as
/// one wider group: min-PC issue keeps each group's barriers and reconvergence, shared memory is per group).
pub(super) struct Group {
    /// Fibers in the batch.
    pub(super) n: usize,
    /// Fibers per work group.
    pub(super) wg_n: usize,
    pub(super) r: Vec<u32>,
    pub(super) h: Vec<u16>,
    p: Vec<u8>,
    a0: Vec<i32>,
    a1: Vec<i32>,
    pub(super) pc: Vec<u32>,
    pmode: Vec<PMode>,
    pmask: Vec<bool>,
    /// Shared memory of every work group of the batch, `shared_bytes` each.
    pub(super) shared: Vec<u8>,
    pub(super) shared_bytes: usize,
    /// Per-fiber private memory (`p[…]`: spills and scratch arrays), grown on first touch, cleared per work group.
    pub(super) private: Vec<Vec<u8>>,
    pub(super) cols: super::alu_exec::Cols,
    /// The batch's writable copy of the constant file, made at the first `stc`/`ldc.k`/`ldg.k`
    /// (docs/hw/adreno-kgsl-pm4.md §16.12); `None` while the dispatch's constants are unchanged.
    pub(super) kfile: Option<Vec<u32>>,
}

/// Execute `prog` for every work group of `launch` on the calling thread.
pub fn run(
    prog: &Program,
    launch: &Launch<'_>,
    mem: &mut dyn GpuMemory,
) -> Result<RunStats, String> {
    Ok(run_threads(prog, launch, mem, 1)?.stats)
}

/// Execute `prog` for every work group of `launch`, spreading the batches over up to `threads` threads when
/// `mem` has a [`GpuMemory::shared_view`] (docs/hw/adreno-kgsl-pm4.md §16.5). Memory, counters and errors are
/// those of the serial run for every kernel whose work groups do not read what other work groups of the same
/// dispatch write.
pub fn run_threads(
    prog: &Program,
    launch: &Launch<'_>,
    mem: &mut dyn GpuMemory,
    threads: usize,
) -> Result<Dispatched, String> {
    let batches = Batches::new(prog, launch)?;
    if threads > 1 && batches.count() > 1 && !super::blob_atomic::needs_serial(prog) {
        if let Some(out) = super::parallel::run(&batches, prog, launch, mem, threads) {
            return out;
        }
    }
    let mut stats = RunStats::default();
    let mut g = None;
    for b in 0..batches.count() {
        batches.run(b, &mut g, prog, launch, mem, &mut stats)?;
    }
    Ok(Dispatched {
        stats,
        overlapping_bytes: 0,
    })
}

/// How the work groups of a dispatch are cut into batches: batch `b` holds the `per_batch` work groups from
/// linear index (x fastest) `b * per_batch` on, the last one fewer. The serial and the parallel runs use the
/// same batches, so they issue the same instructions.
pub(super) struct Batches {
    /// Fibers per work group.
    n: usize,
    per_batch: usize,
    total: usize,
}

impl Batches {
    fn new(prog: &Program, launch: &Launch<'_>) -> Result<Batches, String> {
        let n = launch.local.iter().map(|&x| x as usize).product::<usize>();
        if n == 0 || n > 1024 {
            return Err(format!(
                "kernel {}: work-group size {:?} is not 1…1024 fibers",
                prog.name, launch.local
            ));
        }
        for (what, r) in [
            ("work-group id", launch.wgid_reg),
            ("local id", launch.lid_reg),
            ("work-group size", launch.wgsize_reg),
            ("work-group offset", launch.wgoffset_reg),
        ] {
            if r.is_some_and(|r| r > 253) {
                return Err(format!(
                    "kernel {}: {what} register {:#x} leaves no room for x, y, z",
                    prog.name,
                    r.unwrap_or(0)
                ));
            }
        }
        let total = launch.groups.iter().map(|&g| g as usize).product::<usize>();
        // `bany`/`ball` vote per wave, and waves never span work groups; batching is nevertheless left off for
        // shaders with them.
        let wave_branch = prog.instrs.iter().any(|i| {
            matches!(
                i.op,
                Op::Br {
                    kind: BrKind::Any | BrKind::All,
                    ..
                }
            )
        });
        let per_batch = if wave_branch {
            1
        } else {
            (BATCH_FIBERS / n).clamp(1, total.max(1))
        };
        Ok(Batches {
            n,
            per_batch,
            total,
        })
    }

    /// Number of batches.
    pub(super) fn count(&self) -> usize {
        self.total.div_ceil(self.per_batch)
    }

    /// Run batch `b` on `g` (kept between calls, rebuilt when the batch size changes), adding its counters to
    /// `stats`; an error names the kernel and the batch's work groups.
    pub(super) fn run(
        &self,
        b: usize,
        g: &mut Option<Group>,
        prog: &Program,
        launch: &Launch<'_>,
        mem: &mut dyn GpuMemory,
        stats: &mut RunStats,
    ) -> Result<(), String> {
        let first = b * self.per_batch;
        let count = self.per_batch.min(self.total - first);
        if g.as_ref().is_some_and(|g| g.n != count * self.n) {
            *g = None;
        }
        let g = g.get_or_insert_with(|| Group::new(self.n, count, launch.shared_bytes));
        g.reset(launch, first);
        g.run(prog, launch, mem, stats).map_err(|e| {
            let [gx, gy, _] = launch.groups.map(|g| g as usize);
            let id = |i: usize| (i % gx, (i / gx) % gy, i / (gx * gy));
            format!(
                "kernel {}: work groups {:?}…{:?}: {e}",
                prog.name,
                id(first),
                id(first + count - 1)
            )
        })
    }
}

impl Group {
    fn new(wg_n: usize, groups: usize, shared_bytes: usize) -> Group {
        let n = wg_n * groups;
        Group {
            n,
            wg_n,
            r: vec![0; 256 * n],
            h: vec![0; 256 * n],
            p: vec![0; n],
            a0: vec![0; n],
            a1: vec![0; n],
            pc: vec![0; n],
            pmode: vec![PMode::None; n],
            pmask: vec![false; n],
            shared: vec![0; shared_bytes * groups],
            shared_bytes,
            private: vec![Vec::new(); n],
            cols: Default::default(),
            kfile: None,
        }
    }

    /// Start the batch whose first work group has linear index `first` (x fastest).
    fn reset(&mut self, l: &Launch<'_>, first: usize) {
        self.r.fill(0);
        self.h.fill(0);
        self.p.fill(0);
        self.a0.fill(0);
        self.a1.fill(0);
        self.pc.fill(0);
        self.pmode.fill(PMode::None);
        self.pmask.fill(false);
        self.shared.fill(0);
        self.private.iter_mut().for_each(Vec::clear);
        self.kfile = None;
        let n = self.n;
        let [lx, ly, _] = l.local;
        let [gx, gy, _] = l.groups;
        for lane in 0..n {
            let (wg, local) = ((first + lane / self.wg_n) as u32, (lane % self.wg_n) as u32);
            let wg = [wg % gx, (wg / gx) % gy, wg / (gx * gy)];
            let id = [local % lx, (local / lx) % ly, local / (lx * ly)];
            for c in 0..3 {
                if let Some(w) = l.wgid_reg {
                    self.r[(w as usize + c) * n + lane] = wg[c];
                }
                if let Some(li) = l.lid_reg {
                    self.r[(li as usize + c) * n + lane] = id[c];
                }
                if let Some(s) = l.wgsize_reg {
                    self.r[(s as usize + c) * n + lane] = l.local[c];
                }
                if let Some(o) = l.wgoffset_reg {
                    self.r[(o as usize + c) * n + lane] = wg[c].wrapping_mul(l.local[c]);
                }
            }
        }
    }

    fn run(
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
        let mut next = Next::Converged(0);
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
            Op::Ext(e) if super::blob_wave::is_branch(&e) => self.wave_branch(&e, pc, lanes)?,
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
        if ins.round != 0 && !super::alu_qcom::round_executed(ins) {
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
            Op::Ext(e) => self.ext(&e, lanes, l, mem)?,
            Op::Isam { .. } | Op::Load { .. } | Op::Store { .. } | Op::Stib { .. } => {
                self.memory(ins, lanes, l, mem)?
            }
            _ => return Err("instruction not executed by the interpreter".into()),
        }
        Ok(())
    }

    pub(super) fn reg_raw(&self, num: RegNum, lane: u32, half: bool) -> u32 {
        let idx = (num as usize & 0xFF) * self.n + lane as usize;
        if half {
            self.h[idx] as u32
        } else {
            self.r[idx]
        }
    }

    /// The fiber's `a1.x`.
    pub(super) fn a1_of(&self, lane: u32) -> i32 {
        self.a1[lane as usize]
    }

    pub(super) fn set_reg_raw(&mut self, num: RegNum, lane: u32, v: u32, half: bool) {
        let idx = (num as usize & 0xFF) * self.n + lane as usize;
        if half {
            self.h[idx] = v as u16;
        } else {
            self.r[idx] = v;
        }
    }

    /// The raw bits of a source in iteration `k` of a repeat (16-bit values in the low half).
    pub(super) fn read_raw(
        &self,
        s: &Src,
        k: u8,
        lane: u32,
        l: &Launch<'_>,
        half: bool,
    ) -> Result<u32, String> {
        let step = |r: bool| if r { k as i32 } else { 0 };
        let li = lane as usize;
        let file = self.kfile.as_deref().unwrap_or(l.consts);
        let konst = |num: i32| -> Result<u32, String> {
            let c = usize::try_from(num)
                .ok()
                .and_then(|n| file.get(n))
                .ok_or_else(|| {
                    format!(
                        "constant c[{num}] outside the {}-dword constant file",
                        file.len()
                    )
                })?;
            Ok(if half {
                f32_to_f16(f32::from_bits(*c)) as u32
            } else {
                *c
            })
        };
        Ok(match *s {
            Src::Reg { num, r, .. } => {
                let num = num as i32 + step(r);
                match num >> 2 {
                    62 => ((self.p[li] >> (num & 3)) & 1) as u32,
                    61 if num & 3 == 0 => self.a0[li] as u32,
                    61 => self.a1[li] as u32,
                    _ if num > 255 => return Err(format!("register {num} past r63.w")),
                    _ => self.reg_raw(num as u16, lane, half),
                }
            }
            Src::Const { num, r, .. } => konst(num as i32 + step(r))?,
            Src::RelConst { off, r, .. } => konst(self.a0[li] + off as i32 + step(r))?,
            Src::RelReg { off, r, .. } => {
                let num = self.a0[li] + off as i32 + step(r);
                if !(0..192).contains(&num) {
                    return Err(format!(
                        "relative register r<a0.x + {off}> = {num} out of range"
                    ));
                }
                self.reg_raw(num as u16, lane, half)
            }
            Src::Imm { val, .. } => {
                if half {
                    val as u32 & 0xFFFF
                } else {
                    val as u32
                }
            }
            Src::Flut { idx, .. } => {
                let x = flut(idx);
                if half {
                    f32_to_f16(x) as u32
                } else {
                    x.to_bits()
                }
            }
        })
    }

    pub(super) fn write_raw(
        &mut self,
        d: &Dst,
        k: u8,
        lane: u32,
        v: u32,
        half: bool,
    ) -> Result<(), String> {
        let li = lane as usize;
        match *d {
            Dst::Reg { num, .. } => {
                let num = num as u32 + k as u32;
                match num >> 2 {
                    62 => self.set_pred(li, (num & 3) as u8, v != 0),
                    61 => self.a0[li] = v as i32,
                    _ if num > 255 => return Err(format!("register {num} past r63.w")),
                    _ => self.set_reg_raw(num as u16, lane, v, half),
                }
            }
            Dst::Pred(c) => self.set_pred(li, c + k, v != 0),
            Dst::Addr(0) => self.a0[li] = v as u16 as i16 as i32,
            Dst::Addr(_) => self.a1[li] = v as u16 as i32,
            Dst::Rel { off, .. } => {
                let num = self.a0[li] + off as i32 + k as i32;
                if !(0..192).contains(&num) {
                    return Err(format!("relative destination register {num} out of range"));
                }
                self.set_reg_raw(num as u16, lane, v, half);
            }
        }
        Ok(())
    }

    fn set_pred(&mut self, lane: usize, c: u8, on: bool) {
        let b = 1u8 << (c & 3);
        if on {
            self.p[lane] |= b;
        } else {
            self.p[lane] &= !b;
        }
    }
}
