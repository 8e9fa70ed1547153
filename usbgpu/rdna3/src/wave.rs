//! One wave32's architectural state (docs/hw/rdna3-isa.md §5): the scalar file (SGPRs, VCC, TTMPs,
//! NULL, M0, EXEC in one array, see [`operand`](super::operand)), SCC, 256 VGPRs × 32 lanes, and
//! the program counter as an instruction index. Helpers fetch sources for all lanes and write
//! results to the active lanes only (lanes with EXEC = 0 keep their VGPRs, docs/hw/rdna3-isa.md §5).
use super::decode::Inst;
use super::operand::{Src, EXEC, NULL, VCC};
use super::ops::Ty;

/// Lanes in a wave (wave32 only).
pub const LANES: usize = 32;
/// One VGPR across the wave.
pub type Lanes = [u32; LANES];

/// A wave's registers and progress.
#[derive(Clone)]
pub struct Wave {
    /// Scalar file, indexed by the operand-field value (0–127).
    pub s: [u32; 128],
    pub scc: bool,
    /// VGPRs v0–v255.
    pub v: Vec<Lanes>,
    /// Index of the next instruction.
    pub pc: u32,
    /// Reached `s_endpgm`.
    pub done: bool,
    /// Parked at `s_barrier`.
    pub at_barrier: bool,
    /// Instructions executed.
    pub executed: u64,
    /// Private (scratch) memory, `scratch_lane` bytes per lane, lane-major.
    pub scratch: Vec<u8>,
    /// Private bytes per lane (0: the dispatch enabled no scratch).
    pub scratch_lane: usize,
}

impl Default for Wave {
    fn default() -> Self {
        Wave {
            s: [0; 128],
            scc: false,
            v: vec![[0; LANES]; 256],
            pc: 0,
            done: false,
            at_barrier: false,
            executed: 0,
            scratch: Vec::new(),
            scratch_lane: 0,
        }
    }
}

impl Wave {
    /// Clear everything for a new wave with `scratch_lane` private bytes per lane (registers and
    /// private memory zeroed: deterministic, unlike hardware).
    pub fn reset(&mut self, scratch_lane: usize) {
        self.scratch_lane = scratch_lane;
        self.scratch.clear();
        self.scratch.resize(scratch_lane * LANES, 0);
        self.s = [0; 128];
        self.scc = false;
        for r in self.v.iter_mut() {
            *r = [0; LANES];
        }
        self.pc = 0;
        self.done = false;
        self.at_barrier = false;
        self.executed = 0;
    }

    /// EXEC_LO (the wave32 execution mask).
    pub fn exec(&self) -> u32 {
        self.s[EXEC as usize]
    }

    /// VCC_LO.
    pub fn vcc(&self) -> u32 {
        self.s[VCC as usize]
    }

    /// Write one scalar-file entry (NULL drops the write).
    pub fn set_s(&mut self, i: u8, val: u32) {
        if i != NULL {
            self.s[usize::from(i) & 127] = val;
        }
    }

    /// Write a 64-bit scalar pair.
    pub fn set_s64(&mut self, i: u8, val: u64) {
        self.set_s(i, val as u32);
        if i != NULL {
            self.set_s(i.wrapping_add(1) & 127, (val >> 32) as u32);
        }
    }

    /// A scalar (wave-uniform) source as 32 bits.
    pub fn scalar(&self, s: Src) -> u32 {
        match s {
            Src::S(i) => self.s[usize::from(i) & 127],
            Src::Const { val, .. } => val as u32,
            Src::Scc => u32::from(self.scc),
            Src::VccZ => u32::from(self.vcc() == 0),
            Src::ExecZ => u32::from(self.exec() == 0),
            Src::V(r) => self.v[usize::from(r)][0],
        }
    }

    /// A scalar source as 64 bits (register pairs; constants already 64-bit).
    pub fn scalar64(&self, s: Src) -> u64 {
        match s {
            Src::S(i) => {
                let i = usize::from(i) & 127;
                u64::from(self.s[i]) | u64::from(self.s[(i + 1) & 127]) << 32
            }
            Src::Const { val, .. } => val,
            other => u64::from(self.scalar(other)),
        }
    }

    /// Source `k` of `i` for every lane, with VOP3 abs/neg applied for float types.
    pub fn fetch(&self, i: &Inst, k: usize) -> Lanes {
        let mut out = match i.src[k] {
            Src::V(r) => self.v[usize::from(r)],
            other => [self.scalar(other); LANES],
        };
        let (abs, neg) = (i.abs >> k & 1 == 1, i.neg >> k & 1 == 1);
        if abs || neg {
            let sign = if i.op.src_ty(k) == Ty::F16 {
                0x8000
            } else {
                0x8000_0000
            };
            for x in out.iter_mut() {
                if abs {
                    *x &= !sign;
                }
                if neg {
                    *x ^= sign;
                }
            }
        }
        out
    }

    /// A 64-bit source for every lane.
    pub fn fetch64(&self, s: Src) -> [u64; LANES] {
        match s {
            Src::V(r) => {
                let (lo, hi) = (&self.v[usize::from(r)], &self.v[(usize::from(r) + 1) & 255]);
                core::array::from_fn(|l| u64::from(lo[l]) | u64::from(hi[l]) << 32)
            }
            other => [self.scalar64(other); LANES],
        }
    }

    /// Write `vals` to VGPR `d` in the active lanes.
    pub fn write(&mut self, d: u8, vals: &Lanes) {
        let exec = self.exec();
        let dst = &mut self.v[usize::from(d)];
        if exec == u32::MAX {
            *dst = *vals;
        } else {
            for (l, (d, v)) in dst.iter_mut().zip(vals).enumerate() {
                if exec >> l & 1 == 1 {
                    *d = *v;
                }
            }
        }
    }

    /// Write 64-bit `vals` to the VGPR pair at `d` in the active lanes.
    pub fn write64(&mut self, d: u8, vals: &[u64; LANES]) {
        let lo: Lanes = core::array::from_fn(|l| vals[l] as u32);
        let hi: Lanes = core::array::from_fn(|l| (vals[l] >> 32) as u32);
        self.write(d, &lo);
        self.write(d.wrapping_add(1), &hi);
    }
}
