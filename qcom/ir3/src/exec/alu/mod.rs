//! cat1–cat4 execution (moves and ALU), column-wise over the issued fibers: each source is read once per
//! instruction (and repeat step) for all issued fibers — the register row itself when every fiber of the batch is
//! issued and the source is a full register without modifiers, else gathered and converted (half → f32, abs/neg)
//! in a pass of its own — one lane loop per operation (opcode and comparison condition resolved outside it)
//! computes the destination's raw bits, and the results are scattered to the destination. Per-fiber semantics
//! live in `value`, the operations only Qualcomm's compiler emits in `qcom`, the blob's cat3 dot products in
//! `dot`.
mod dot;
pub(in crate::exec) mod qcom;
pub mod value;

use self::value::{Class, V};
use crate::exec::group::{Cols, Group};
use crate::exec::launch::Launch;
use crate::float::f16_to_f32;
use crate::instr::*;
use modelrt_core::half::f32_to_f16;

/// Registers below this number are plain GPRs (r0.x … r60.w); higher numbers are a0/p0 and need the slow path.
const GPRS: usize = 61 * 4;

#[inline(always)]
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

#[inline(always)]
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

/// How an operation reads its sources: full or half registers, float or integer of `class`.
#[derive(Clone, Copy)]
struct Read {
    full: bool,
    class: Class,
}

/// Where computed values go: (sat), then the destination's precision ([`out_raw`]).
#[derive(Clone, Copy)]
struct Emit {
    sat: bool,
    half: bool,
    pred: bool,
}

impl Emit {
    #[inline(always)]
    fn raw(self, v: V) -> u32 {
        let v = match v {
            V::F(x) if self.sat => V::F(sat(x)),
            v => v,
        };
        out_raw(v, self.half, self.pred)
    }
}

/// Runs `$body` with `$o` bound to a constant for each listed operation (`CmpsF(Lt)`: with that condition), so
/// the per-element `match` inside the `value` functions folds away in the lane loop, and bound to the run-time value
/// for every other operation.
macro_rules! specialize {
    ($op:expr, $o:ident, $ty:ident [$($hot:ident $(($c:ident))?),* $(,)?], $body:expr) => {
        match $op {
            $( $ty::$hot $((Cond::$c))? => { let $o = $ty::$hot $((Cond::$c))?; $body } )*
            #[allow(unreachable_patterns)]
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

    /// Source `s` (repeat step `k`) for every fiber in `lanes`, read as `rd` says with modifiers `m` applied:
    /// f32 bits for float operations, 32-bit integers otherwise. The register row itself when every fiber of the
    /// batch is issued and `s` is a full GPR without modifiers; else gathered into `scratch` and converted there
    /// in a pass of its own.
    #[allow(clippy::too_many_arguments)]
    fn column<'a>(
        &'a self,
        s: &Src,
        k: u8,
        l: &Launch<'_>,
        lanes: &[u32],
        rd: Read,
        m: Mods,
        scratch: &'a mut Vec<u32>,
    ) -> Result<&'a [u32], String> {
        let plain = rd.full && m == Mods::default();
        if let Src::Reg { num, r, .. } = *s {
            let num = num as usize + if r { k as usize } else { 0 };
            if plain && num < GPRS && lanes.len() == self.n {
                let base = num * self.n;
                return Ok(&self.r[base..base + self.n]);
            }
        }
        self.gather(s, k, l, !rd.full, lanes, scratch)?;
        if !plain {
            let full = rd.full;
            match rd.class {
                Class::Float => scratch
                    .iter_mut()
                    .for_each(|x| *x = to_f(*x, full, m).to_bits()),
                Class::Int { signed } => scratch
                    .iter_mut()
                    .for_each(|x| *x = to_i(*x, full, signed, false, m)),
                Class::Bits => scratch
                    .iter_mut()
                    .for_each(|x| *x = to_i(*x, full, false, true, m)),
            }
        }
        Ok(scratch)
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

    /// cat1 `mov`/`cov` (with `(rptN)`) over the issued fibers.
    pub(in crate::exec) fn mov(
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
    pub(in crate::exec) fn parallel_copy(
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
    pub(in crate::exec) fn alu(
        &mut self,
        ins: &Instr,
        lanes: &[u32],
        l: &Launch<'_>,
    ) -> Result<(), String> {
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
        let dst = match ins.op {
            Op::Alu2 { dst, .. } | Op::Alu3 { dst, .. } | Op::Sfu { dst, .. } => dst,
            _ => return Err("not an ALU instruction".into()),
        };
        let half = matches!(
            dst,
            Dst::Reg { half: true, .. } | Dst::Rel { half: true, .. }
        );
        let pred = matches!(dst, Dst::Pred(_));
        let emit = Emit {
            sat: ins.sat,
            half,
            pred,
        };
        for k in 0..=ins.repeat {
            let [s0, s1, s2, out] = &mut c.raw;
            out.clear();
            match ins.op {
                Op::Alu2 {
                    op,
                    src,
                    mods,
                    full,
                    ..
                } => {
                    let class = value::class2(op);
                    let rd = Read { full, class };
                    let a = self.column(&src[0], k, l, lanes, rd, mods[0], s0)?;
                    let b = if op.two_srcs() {
                        self.column(&src[1], k, l, lanes, rd, mods[1], s1)?
                    } else {
                        s1.clear();
                        s1.resize(lanes.len(), 0);
                        s1
                    };
                    let it = a.iter().zip(b.iter());
                    match class {
                        Class::Float => {
                            // Refuse an operation `op2_f` does not execute before the lane loop (the loop's
                            // error arm is then dead).
                            value::op2_f(op, 0.0, 0.0, full)?;
                            specialize!(op, o, Op2[AddF, MulF, MaxF, MinF, SignF, AbsnegF, FloorF, CeilF, RndneF, RndazF, TruncF,
                                CmpsF(Lt), CmpsF(Le), CmpsF(Gt), CmpsF(Ge), CmpsF(Eq), CmpsF(Ne)], {
                                out.extend(it.map(|(&x, &y)| {
                                    let (x, y) = (f32::from_bits(x), f32::from_bits(y));
                                    emit.raw(value::op2_f(o, x, y, full).unwrap_or(V::I(0)))
                                }))
                            })
                        }
                        _ if ins.ei => {
                            // Qualcomm's `(ei)` on an integer add (docs/hw/adreno-kgsl-pm4.md §16.11).
                            let f = qcom::op2_ei(op)?;
                            out.extend(it.map(|(&x, &y)| emit.raw(V::I(f(x, y)))))
                        }
                        _ => {
                            value::op2_i(op, 0, 0)?;
                            specialize!(op, o, Op2[AddU, AddS, SubU, SubS, MulU24, MulS24, MullU, MinU, MaxU, MinS, MaxS,
                                AbsnegS, AndB, OrB, XorB, NotB, ShlB, ShrB, AshrB, GetbitB, CbitsB, ClzB, ClzS, BfrevB,
                                CmpsU(Lt), CmpsU(Le), CmpsU(Gt), CmpsU(Ge), CmpsU(Eq), CmpsU(Ne),
                                CmpsS(Lt), CmpsS(Le), CmpsS(Gt), CmpsS(Ge), CmpsS(Eq), CmpsS(Ne)], {
                                out.extend(it.map(|(&x, &y)| {
                                    emit.raw(V::I(value::op2_i(o, x, y).unwrap_or(0)))
                                }))
                            })
                        }
                    }
                }
                Op::Alu3 {
                    op, src, neg, full, ..
                } => {
                    let class = value::class3(op);
                    // A 16-bit multiply-add into a full register reads full registers (§16.11).
                    let full = full || qcom::widening_mad(op, half);
                    let rd = Read { full, class };
                    let m = |i: usize| Mods {
                        abs: false,
                        neg: neg[i],
                    };
                    let a = self.column(&src[0], k, l, lanes, rd, m(0), s0)?;
                    let b = self.column(&src[1], k, l, lanes, rd, m(1), s1)?;
                    let cc = self.column(&src[2], k, l, lanes, rd, m(2), s2)?;
                    let it = a.iter().zip(b.iter()).zip(cc.iter());
                    match class {
                        Class::Float => {
                            value::op3_f(op, 0.0, 0.0, 0.0, full)?;
                            specialize!(op, o, Op3[MadF32, MadF16], {
                                out.extend(it.map(|((&x, &y), &z)| {
                                    let (x, y) = (f32::from_bits(x), f32::from_bits(y));
                                    let z = f32::from_bits(z);
                                    emit.raw(value::op3_f(o, x, y, z, full).unwrap_or(V::I(0)))
                                }))
                            })
                        }
                        _ => {
                            value::op3_i(op, 0, 0, 0)?;
                            specialize!(op, o, Op3[MadU24, MadS24, MadU16, MadS16, MadshM16, SelB16, SelB32, SelS16,
                                SelS32, Shrm, Shlm, Shrg, Shlg, Andg], {
                                out.extend(it.map(|((&x, &y), &z)| {
                                    emit.raw(V::I(value::op3_i(o, x, y, z).unwrap_or(0)))
                                }))
                            })
                        }
                    }
                }
                Op::Sfu {
                    op,
                    src,
                    mods,
                    full,
                    ..
                } => {
                    let rd = Read {
                        full,
                        class: Class::Float,
                    };
                    let a = self.column(&src, k, l, lanes, rd, mods, s0)?;
                    specialize!(op, o, Op4[Rcp, Rsq, Log2, Exp2, Sin, Cos, Sqrt, Hrsq, Hlog2, Hexp2], {
                        out.extend(a.iter().map(|&x| emit.raw(V::F(value::op4(o, f32::from_bits(x), full)))))
                    })
                }
                _ => return Err("not an ALU instruction".into()),
            }
            self.scatter_raw(&dst, k, lanes, &c.raw[3], half)?;
        }
        Ok(())
    }
}

/// The raw bits value `v` leaves in a destination: f32 results flushed to zero when denormal (full registers)
/// or rounded to f16 (half registers), integers cut to 16 bits for half registers; a float written to a
/// predicate is `v != 0`.
#[inline(always)]
fn out_raw(v: V, half: bool, pred: bool) -> u32 {
    match (v, half) {
        (V::F(x), _) if pred => (x != 0.0) as u32,
        (V::F(x), false) => value::ftz(x).to_bits(),
        (V::F(x), true) => f32_to_f16(x) as u32,
        (V::I(u), false) => u,
        (V::I(u), true) => u & 0xFFFF,
    }
}

/// cat1 conversion of a column of raw values, in place (`sat` clamps f32 results to [0, 1]).
fn convert_col(src: Ty, dst: Ty, sat_f32: bool, col: &mut [u32]) {
    if src == dst && matches!(dst, Ty::F32 | Ty::U32 | Ty::S32) && !sat_f32 {
        return;
    }
    let sat_f32 = sat_f32 && dst == Ty::F32;
    // The type pairs tinygrad's kernels convert between get a loop of their own (`convert` folds to that pair).
    macro_rules! pairs {
        ($(($s:ident, $d:ident)),*) => {
            match (src, dst) {
                $( (Ty::$s, Ty::$d) => convert_loop(Ty::$s, Ty::$d, sat_f32, col), )*
                _ => convert_loop(src, dst, sat_f32, col),
            }
        };
    }
    pairs!(
        (F32, F16),
        (F16, F32),
        (F16, F16),
        (U32, F32),
        (S32, F32),
        (F32, U32),
        (F32, S32),
        (U16, U16),
        (S16, S16),
        (U16, U32),
        (S16, S32),
        (U32, U16),
        (S32, S16),
        (F32, F32)
    )
}

#[inline(always)]
fn convert_loop(src: Ty, dst: Ty, sat_f32: bool, col: &mut [u32]) {
    for v in col.iter_mut() {
        let x = value::convert(src, dst, *v);
        *v = if sat_f32 {
            sat(f32::from_bits(x)).to_bits()
        } else {
            x
        };
    }
}
