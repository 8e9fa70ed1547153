//! The state of a batch of fibers ([`Group`]): the register file (full and half GPRs, `p0`, `a0.x`, `a1.x`, read
//! and written with `(rptN)` steps, relative addressing and constants), each fiber's PC and predication mode,
//! shared and private memory, and the batch's writable constant file. The scheduler (`schedule`) and the
//! per-category executors work on it.
use super::launch::Launch;
use crate::instr::*;
use modelrt_core::half::f32_to_f16;

/// Scratch columns of the ALU executor (`alu`), reused across instructions (no allocation per issue once they
/// have grown).
#[derive(Default)]
pub(in crate::exec) struct Cols {
    pub(in crate::exec) raw: [Vec<u32>; 4],
}

/// A fiber's predication mode after `predt` / `predf` (cleared by `prede`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(in crate::exec) enum PMode {
    None,
    True,
    False,
}

/// The fibers of one or more work groups that execute together (a batch of independent work groups behaves as
/// one wider group: min-PC issue keeps each group's barriers and reconvergence, shared memory is per group).
pub(in crate::exec) struct Group {
    /// Fibers in the batch.
    pub(in crate::exec) n: usize,
    /// Fibers per work group.
    pub(in crate::exec) wg_n: usize,
    pub(in crate::exec) r: Vec<u32>,
    pub(in crate::exec) h: Vec<u16>,
    pub(in crate::exec) p: Vec<u8>,
    pub(in crate::exec) a0: Vec<i32>,
    pub(in crate::exec) a1: Vec<i32>,
    pub(in crate::exec) pc: Vec<u32>,
    pub(in crate::exec) pmode: Vec<PMode>,
    pub(in crate::exec) pmask: Vec<bool>,
    /// Shared memory of every work group of the batch, `shared_bytes` each.
    pub(in crate::exec) shared: Vec<u8>,
    pub(in crate::exec) shared_bytes: usize,
    /// Per-fiber private memory (`p[…]`: spills and scratch arrays), grown on first touch, cleared per work group.
    pub(in crate::exec) private: Vec<Vec<u8>>,
    pub(in crate::exec) cols: Cols,
    /// The batch's writable copy of the constant file, made at the first `stc`/`ldc.k`/`ldg.k`
    /// (docs/hw/adreno-kgsl-pm4.md §16.12); `None` while the dispatch's constants are unchanged.
    pub(in crate::exec) kfile: Option<Vec<u32>>,
}

/// The program counter of a fiber that has ended (or, past a partial group's items, never starts).
pub(in crate::exec) const DONE: u32 = u32::MAX;

impl Group {
    pub(in crate::exec) fn new(wg_n: usize, groups: usize, shared_bytes: usize) -> Group {
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
    pub(in crate::exec) fn reset(&mut self, l: &Launch<'_>, first: usize) {
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
            if let Some(items) = l.items {
                if (0..3)
                    .any(|c| wg[c] as u64 * l.local[c] as u64 + id[c] as u64 >= items[c] as u64)
                {
                    self.pc[lane] = DONE;
                }
            }
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

    pub(in crate::exec) fn reg_raw(&self, num: RegNum, lane: u32, half: bool) -> u32 {
        let idx = (num as usize & 0xFF) * self.n + lane as usize;
        if half {
            self.h[idx] as u32
        } else {
            self.r[idx]
        }
    }

    /// The fiber's `a1.x`.
    pub(in crate::exec) fn a1_of(&self, lane: u32) -> i32 {
        self.a1[lane as usize]
    }

    pub(in crate::exec) fn set_reg_raw(&mut self, num: RegNum, lane: u32, v: u32, half: bool) {
        let idx = (num as usize & 0xFF) * self.n + lane as usize;
        if half {
            self.h[idx] = v as u16;
        } else {
            self.r[idx] = v;
        }
    }

    /// The raw bits of a source in iteration `k` of a repeat (16-bit values in the low half).
    pub(in crate::exec) fn read_raw(
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

    pub(in crate::exec) fn write_raw(
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

    pub(in crate::exec) fn set_pred(&mut self, lane: usize, c: u8, on: bool) {
        let b = 1u8 << (c & 3);
        if on {
            self.p[lane] |= b;
        } else {
            self.p[lane] &= !b;
        }
    }
}

/// A GPU fault of fiber `lane`, as every memory executor reports it.
pub(in crate::exec) fn fault(lane: u32, e: String) -> String {
    format!("GPU fault in fiber {lane}: {e}")
}
