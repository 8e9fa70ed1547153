//! Column-wise ALU execution: each source is gathered once per instruction (and repeat step) for all issued
//! fibers, the operation runs over the columns, and the results are scattered to the destination — the fast
//! path of `exec` for cat2/cat3/cat4 (semantics in `alu`).
use super::alu::{self, Class, V};
use super::exec::{Group, Launch};
use super::float::{f16_to_f32, f32_to_f16};
use super::instr::*;

/// Scratch columns reused across instructions.
#[derive(Default)]
pub(super) struct Cols {
    src: [Vec<u32>; 3],
    out: Vec<V>,
}

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
                if num < 61 * 4 {
                    let base = num * self.n;
                    if half {
                        out.extend(lanes.iter().map(|&i| self.h[base + i as usize] as u32));
                    } else {
                        out.extend(lanes.iter().map(|&i| self.r[base + i as usize]));
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

    /// Write `vals` (one per fiber of `lanes`) to `d` in repeat step `k`.
    fn scatter(&mut self, d: &Dst, k: u8, lanes: &[u32], vals: &[V]) -> Result<(), String> {
        if let Dst::Reg { num, half } = *d {
            let num = num as usize + k as usize;
            if num < 61 * 4 {
                let base = num * self.n;
                for (&i, v) in lanes.iter().zip(vals) {
                    let idx = base + i as usize;
                    match (*v, half) {
                        (V::F(x), false) => self.r[idx] = alu::ftz(x).to_bits(),
                        (V::F(x), true) => self.h[idx] = f32_to_f16(x),
                        (V::I(u), false) => self.r[idx] = u,
                        (V::I(u), true) => self.h[idx] = u as u16,
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
            let [s0, s1, s2] = &mut c.src;
            c.out.clear();
            let (dst, full) = match ins.op {
                Op::Alu2 {
                    op,
                    dst,
                    src,
                    mods,
                    full,
                } => {
                    let two = super::disasm::op2_two_srcs(op);
                    self.gather(&src[0], k, l, !full, lanes, s0)?;
                    if two {
                        self.gather(&src[1], k, l, !full, lanes, s1)?;
                    } else {
                        s1.clear();
                        s1.resize(lanes.len(), 0);
                    }
                    match alu::class2(op) {
                        Class::Float => {
                            for (&a, &b) in s0.iter().zip(s1.iter()) {
                                let v = alu::op2_f(
                                    op,
                                    to_f(a, full, mods[0]),
                                    to_f(b, full, mods[1]),
                                    full,
                                )?;
                                c.out.push(fsat(v));
                            }
                        }
                        Class::Int { signed } => {
                            for (&a, &b) in s0.iter().zip(s1.iter()) {
                                let (a, b) = (
                                    to_i(a, full, signed, false, mods[0]),
                                    to_i(b, full, signed, false, mods[1]),
                                );
                                c.out.push(V::I(alu::op2_i(op, a, b)?));
                            }
                        }
                        Class::Bits => {
                            for (&a, &b) in s0.iter().zip(s1.iter()) {
                                let (a, b) = (
                                    to_i(a, full, false, true, mods[0]),
                                    to_i(b, full, false, true, mods[1]),
                                );
                                c.out.push(V::I(alu::op2_i(op, a, b)?));
                            }
                        }
                    }
                    (dst, full)
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
                    let (m0, m1, m2) = (m(0), m(1), m(2));
                    let it = s0.iter().zip(s1.iter()).zip(s2.iter());
                    match alu::class3(op) {
                        Class::Float => {
                            for ((&a, &b), &cc) in it {
                                let v = alu::op3_f(
                                    op,
                                    to_f(a, full, m0),
                                    to_f(b, full, m1),
                                    to_f(cc, full, m2),
                                    full,
                                )?;
                                c.out.push(fsat(v));
                            }
                        }
                        Class::Int { signed } => {
                            for ((&a, &b), &cc) in it {
                                let a = to_i(a, full, signed, false, m0);
                                let b = to_i(b, full, signed, false, m1);
                                let cc = to_i(cc, full, signed, false, m2);
                                c.out.push(V::I(alu::op3_i(op, a, b, cc)?));
                            }
                        }
                        Class::Bits => {
                            for ((&a, &b), &cc) in it {
                                let a = to_i(a, full, false, true, m0);
                                let b = to_i(b, full, false, true, m1);
                                let cc = to_i(cc, full, false, true, m2);
                                c.out.push(V::I(alu::op3_i(op, a, b, cc)?));
                            }
                        }
                    }
                    (dst, full)
                }
                Op::Sfu {
                    op,
                    dst,
                    src,
                    mods,
                    full,
                } => {
                    self.gather(&src, k, l, !full, lanes, s0)?;
                    for &a in s0.iter() {
                        c.out
                            .push(fsat(V::F(alu::op4(op, to_f(a, full, mods), full))));
                    }
                    (dst, full)
                }
                _ => return Err("not an ALU instruction".into()),
            };
            let _ = full;
            self.scatter(&dst, k, lanes, &c.out)?;
        }
        Ok(())
    }
}
