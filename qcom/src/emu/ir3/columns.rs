//! Column-wise execution of register-to-register instructions (cat1 moves, cat2/cat3/cat4 ALU): each source is
//! gathered once per instruction (and repeat step) for all issued fibers — a plain slice copy when every fiber
//! of the group is issued — the operation runs over the columns with the opcode resolved outside the lane loop,
//! and the results are scattered to the destination. Per-fiber semantics live in `alu`.
use super::alu::{self, Class, V};
use super::exec::{Group, Launch};
use super::float::{f16_to_f32, f32_to_f16};
use super::instr::*;

/// Scratch columns reused across instructions (no allocation per issue once they have grown).
#[derive(Default)]
pub(super) struct Cols {
    raw: [Vec<u32>; 4],
    f: [Vec<f32>; 3],
    out: Vec<V>,
}

/// Registers below this number are plain GPRs (r0.x … r60.w); higher numbers are a0/p0 and need the slow path.
const GPRS: usize = 61 * 4;

fn to_f(raw: u32, full: bool, m: Mods) -> f32 {
    let x = if full {
        f32::from_bits(raw)
    } else {
        f16_to_f32(raw as u16)
    };
    let x = if m.abs { x.abs() } else { x };
    if m.neg {
        -x
    } else {
        x
    }
}

fn to_i(raw: u32, full: bool, signed: bool, bits: bool, m: Mods) -> u32 {
    let v = if full {
        raw
    } else if signed {
        raw as u16 as i16 as i32 as u32
    } else {
        raw & 0xFFFF
    };
    if bits {
        return if m.neg { !v } else { v };
    }
    let v = if m.abs {
        (v as i32).wrapping_abs() as u32
    } else {
        v
    };
    if m.neg {
        v.wrapping_neg()
    } else {
        v
    }
}

fn sat(x: f32) -> f32 {
    if x.is_nan() {
        0.0
    } else {
        x.clamp(0.0, 1.0)
    }
}

/// `raw` read as floats (with modifiers) into `out`.
fn floats(raw: &[u32], full: bool, m: Mods, out: &mut Vec<f32>) {
    out.clear();
    out.extend(raw.iter().map(|&r| to_f(r, full, m)));
}

/// `raw` read as integers of the operation's class (with modifiers), in place.
fn ints(raw: &mut [u32], full: bool, class: Class, m: Mods) {
    let (signed, bits) = match class {
        Class::Int { signed } => (signed, false),
        _ => (false, true),
    };
    raw.iter_mut()
        .for_each(|r| *r = to_i(*r, full, signed, bits, m));
}

/// Runs `$body` with `$o` bound to a constant for each listed hot operation (so the per-element `match` inside
/// the `alu` functions folds away in the lane loop), and bound to the run-time value for every other operation.
macro_rules! specialize {
    ($op:expr, $o:ident, $ty:ident [$($hot:ident),*], $body:expr) => {
        match $op {
            $( $ty::$hot => { let $o = $ty::$hot; $body } )*
            $o => $body,
        }
    };
}

impl Group {
    /// Raw bits of source `s` (repeat step `k`) for every fiber in `lanes`.
    fn gather(
        &self,
        s: &Src,
        k: u8,
        l: &Launch<'_>,
        half: bool,
        lanes: &[u32],
        out: &mut Vec<u32>,
    ) -> Result<(), String> {
        out.clear();
        match *s {
            Src::Reg { num, r, .. } => {
                let num = num as usize + if r { k as usize } else { 0 };
                if num < GPRS {
                    let base = num * self.n;
                    match (half, lanes.len() == self.n) {
                        (false, true) => out.extend_from_slice(&self.r[base..base + self.n]),
                        (true, true) => {
                            out.extend(self.h[base..base + self.n].iter().map(|&x| x as u32))
                        }
                        (false, false) => {
                            out.extend(lanes.iter().map(|&i| self.r[base + i as usize]))
                        }
                        (true, false) => {
                            out.extend(lanes.iter().map(|&i| self.h[base + i as usize] as u32))
                        }
                    }
                    return Ok(());
                }
            }
            Src::Const { .. } | Src::Imm { .. } | Src::Flut { .. } => {
                let v = self.read_raw(s, k, lanes[0], l, half)?;
                out.resize(lanes.len(), v);
                return Ok(());
            }
            _ => {}
        }
        for &i in lanes {
            out.push(self.read_raw(s, k, i, l, half)?);
        }
        Ok(())
    }

    /// Write raw `vals` (one per fiber of `lanes`; 16-bit values in the low half) to `d` in repeat step `k`.
    fn scatter_raw(
        &mut self,
        d: &Dst,
        k: u8,
        lanes: &[u32],
        vals: &[u32],
        half: bool,
    ) -> Result<(), String> {
        if let Dst::Reg { num, .. } = *d {
            let num = num as usize + k as usize;
            if num < GPRS {
                let (base, n) = (num * self.n, self.n);
                match (half, lanes.len() == n) {
                    (false, true) => self.r[base..base + n].copy_from_slice(vals),
                    (true, true) => self.h[base..base + n]
                        .iter_mut()
                        .zip(vals)
                        .for_each(|(h, &v)| *h = v as u16),
                    (false, false) => {
                        for (&i, &v) in lanes.iter().zip(vals) {
                            self.r[base + i as usize] = v;
                        }
                    }
                    (true, false) => {
                        for (&i, &v) in lanes.iter().zip(vals) {
                            self.h[base + i as usize] = v as u16;
                        }
                    }
                }
                return Ok(());
            }
        }
        for (&i, &v) in lanes.iter().zip(vals) {
            self.write_raw(d, k, i, v, half)?;
        }
        Ok(())
    }

    /// Write computed `vals` (one per fiber of `lanes`) to `d` in repeat step `k`, converted to its precision.
    fn scatter(&mut self, d: &Dst, k: u8, lanes: &[u32], vals: &[V]) -> Result<(), String> {
        if let Dst::Reg { num, half } = *d {
            let num = num as usize + k as usize;
            if num < GPRS {
                let raw = |v: &V| match (*v, half) {
                    (V::F(x), false) => alu::ftz(x).to_bits(),
                    (V::F(x), true) => f32_to_f16(x) as u32,
                    (V::I(u), false) => u,
                    (V::I(u), true) => u & 0xFFFF,
                };
                let base = num * self.n;
                if lanes.len() == self.n {
                    if half {
                        let h = &mut self.h[base..base + self.n];
                        h.iter_mut().zip(vals).for_each(|(o, v)| *o = raw(v) as u16);
                    } else {
                        let r = &mut self.r[base..base + self.n];
                        r.iter_mut().zip(vals).for_each(|(o, v)| *o = raw(v));
                    }
                } else {
                    for (&i, v) in lanes.iter().zip(vals) {
                        let idx = base + i as usize;
                        if half {
                            self.h[idx] = raw(v) as u16;
                        } else {
                            self.r[idx] = raw(v);
                        }
                    }
                }
                return Ok(());
            }
        }
        for (&i, v) in lanes.iter().zip(vals) {
            self.write_v(d, k, i, *v)?;
        }
        Ok(())
    }

    /// cat1 `mov`/`cov` (with `(rptN)`) over the issued fibers.
    pub(super) fn mov(
        &mut self,
        ins: &Instr,
        lanes: &[u32],
        l: &Launch<'_>,
        (src_ty, dst_ty, dst, src): (Ty, Ty, Dst, Src),
    ) -> Result<(), String> {
        let mut c = std::mem::take(&mut self.cols);
        let mut res = Ok(());
        for k in 0..=ins.repeat {
            let col = &mut c.raw[0];
            res = self.gather(&src, k, l, src_ty.is_half_cat1(), lanes, col);
            if res.is_err() {
                break;
            }
            convert_col(src_ty, dst_ty, ins.sat, col);
            res = self.scatter_raw(&dst, k, lanes, col, dst_ty.is_half_cat1());
            if res.is_err() {
                break;
            }
        }
        self.cols = c;
        res
    }

    /// cat1 `swz`/`gat`/`sct`: every source register is read for all issued fibers before any destination is
    /// written (the parallel-copy semantics the three share), converting `src_ty` → `dst_ty`.
    pub(super) fn parallel_copy(
        &mut self,
        lanes: &[u32],
        l: &Launch<'_>,
        (src_ty, dst_ty): (Ty, Ty),
        pairs: &[(RegNum, RegNum)],
    ) -> Result<(), String> {
        let mut c = std::mem::take(&mut self.cols);
        let res = self.parallel_copy_cols(lanes, l, (src_ty, dst_ty), pairs, &mut c);
        self.cols = c;
        res
    }

    fn parallel_copy_cols(
        &mut self,
        lanes: &[u32],
        l: &Launch<'_>,
        (src_ty, dst_ty): (Ty, Ty),
        pairs: &[(RegNum, RegNum)],
        c: &mut Cols,
    ) -> Result<(), String> {
        for (col, &(_, s)) in c.raw.iter_mut().zip(pairs) {
            let src = Src::Reg {
                num: s,
                half: src_ty.is_half_cat1(),
                r: false,
                last: false,
            };
            self.gather(&src, 0, l, src_ty.is_half_cat1(), lanes, col)?;
            convert_col(src_ty, dst_ty, false, col);
        }
        for (col, &(d, _)) in c.raw.iter().zip(pairs) {
            let dst = Dst::Reg {
                num: d,
                half: dst_ty.is_half_cat1(),
            };
            self.scatter_raw(&dst, 0, lanes, col, dst_ty.is_half_cat1())?;
        }
        Ok(())
    }

    /// cat2/cat3/cat4 over the issued fibers.
    pub(super) fn alu(&mut self, ins: &Instr, lanes: &[u32], l: &Launch<'_>) -> Result<(), String> {
        let mut c = std::mem::take(&mut self.cols);
        let r = self.alu_cols(ins, lanes, l, &mut c);
        self.cols = c;
        r
    }

    fn alu_cols(
        &mut self,
        ins: &Instr,
        lanes: &[u32],
        l: &Launch<'_>,
        c: &mut Cols,
    ) -> Result<(), String> {
        let fsat = |v: V| match v {
            V::F(x) if ins.sat => V::F(sat(x)),
            v => v,
        };
        for k in 0..=ins.repeat {
            let [s0, s1, s2, _] = &mut c.raw;
            let [f0, f1, f2] = &mut c.f;
            let out = &mut c.out;
            out.clear();
            let dst = match ins.op {
                Op::Alu2 {
                    op,
                    dst,
                    src,
                    mods,
                    full,
                } => {
                    self.gather(&src[0], k, l, !full, lanes, s0)?;
                    if super::disasm::op2_two_srcs(op) {
                        self.gather(&src[1], k, l, !full, lanes, s1)?;
                    } else {
                        s1.clear();
                        s1.resize(lanes.len(), 0);
                    }
                    match alu::class2(op) {
                        Class::Float => {
                            floats(s0, full, mods[0], f0);
                            floats(s1, full, mods[1], f1);
                            let it = f0.iter().zip(f1.iter());
                            specialize!(op, o, Op2[AddF, MulF, MaxF, MinF], {
                                for (&a, &b) in it {
                                    out.push(fsat(alu::op2_f(o, a, b, full)?));
                                }
                            })
                        }
                        class => {
                            ints(s0, full, class, mods[0]);
                            ints(s1, full, class, mods[1]);
                            let it = s0.iter().zip(s1.iter());
                            specialize!(
                                op,
                                o,
                                Op2[AddU, AddS, SubU, MulU24, MulS24, AndB, OrB, ShlB, ShrB],
                                {
                                    for (&a, &b) in it {
                                        out.push(V::I(alu::op2_i(o, a, b)?));
                                    }
                                }
                            )
                        }
                    }
                    dst
                }
                Op::Alu3 {
                    op,
                    dst,
                    src,
                    neg,
                    full,
                } => {
                    self.gather(&src[0], k, l, !full, lanes, s0)?;
                    self.gather(&src[1], k, l, !full, lanes, s1)?;
                    self.gather(&src[2], k, l, !full, lanes, s2)?;
                    let m = |i: usize| Mods {
                        abs: false,
                        neg: neg[i],
                    };
                    match alu::class3(op) {
                        Class::Float => {
                            floats(s0, full, m(0), f0);
                            floats(s1, full, m(1), f1);
                            floats(s2, full, m(2), f2);
                            let it = f0.iter().zip(f1.iter()).zip(f2.iter());
                            specialize!(op, o, Op3[MadF32, MadF16], {
                                for ((&a, &b), &cc) in it {
                                    out.push(fsat(alu::op3_f(o, a, b, cc, full)?));
                                }
                            })
                        }
                        class => {
                            ints(s0, full, class, m(0));
                            ints(s1, full, class, m(1));
                            ints(s2, full, class, m(2));
                            let it = s0.iter().zip(s1.iter()).zip(s2.iter());
                            specialize!(op, o, Op3[MadU24, MadS24, SelB32], {
                                for ((&a, &b), &cc) in it {
                                    out.push(V::I(alu::op3_i(o, a, b, cc)?));
                                }
                            })
                        }
                    }
                    dst
                }
                Op::Sfu {
                    op,
                    dst,
                    src,
                    mods,
                    full,
                } => {
                    self.gather(&src, k, l, !full, lanes, s0)?;
                    floats(s0, full, mods, f0);
                    out.extend(f0.iter().map(|&a| fsat(V::F(alu::op4(op, a, full)))));
                    dst
                }
                _ => return Err("not an ALU instruction".into()),
            };
            self.scatter(&dst, k, lanes, &c.out)?;
        }
        Ok(())
    }
}

/// cat1 conversion of a column of raw values, in place (`sat` clamps f32 results to [0, 1]).
fn convert_col(src: Ty, dst: Ty, sat_f32: bool, col: &mut [u32]) {
    if src == dst && matches!(dst, Ty::F32 | Ty::U32 | Ty::S32) && !sat_f32 {
        return;
    }
    for v in col.iter_mut() {
        let x = alu::convert(src, dst, *v);
        *v = if sat_f32 && dst == Ty::F32 {
            sat(f32::from_bits(x)).to_bits()
        } else {
            x
        };
    }
}
