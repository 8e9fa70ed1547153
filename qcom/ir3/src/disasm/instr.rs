//! Prints a decoded [`Instr`] the way Mesa's `ir3_isa_disasm` does (gpu 630, no branch labels), so the decoder can
//! be compared with Mesa's own disassembler instruction by instruction; a blob-compiler instruction ([`Op::Ext`])
//! prints from its raw word through `text`.
use super::text::describe;
use crate::float::f16_to_f32;
use crate::instr::*;
use core::fmt::{self, Display, Formatter, Write};

const COMP: [char; 4] = ['x', 'y', 'z', 'w'];
const ROUND: [&str; 4] = ["", "(even)", "(pos_infinity)", "(neg_infinity)"];
const FLUT: [&str; 12] = [
    "(0.0)",
    "(0.5)",
    "(1.0)",
    "(2.0)",
    "(e)",
    "(pi)",
    "(1/pi)",
    "(1/log2(e))",
    "(log2(e))",
    "(1/log2(10))",
    "(log2(10))",
    "(4.0)",
];

/// `r12.x`, `a0.y`, `p0.x` (GPR 61/62 print as a0/p0 in every `#reg-gpr` field).
struct Gpr(RegNum);

impl Display for Gpr {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let (n, c) = (self.0 >> 2, COMP[(self.0 & 3) as usize]);
        match n {
            61 => write!(f, "a0.{c}"),
            62 => write!(f, "p0.{c}"),
            _ => write!(f, "r{n}.{c}"),
        }
    }
}

/// `#cat6-src-const-or-gpr` (global-memory address registers): always `rN.c`, even for GPR 61/62.
struct PlainGpr(RegNum);

impl Display for PlainGpr {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "r{}.{}", self.0 >> 2, COMP[(self.0 & 3) as usize])
    }
}

fn h(half: bool) -> &'static str {
    if half {
        "h"
    } else {
        ""
    }
}

fn rflag(r: bool) -> &'static str {
    if r {
        "(r)"
    } else {
        ""
    }
}

fn absneg(m: Mods) -> &'static str {
    match (m.abs, m.neg) {
        (false, false) => "",
        (false, true) => "(neg)",
        (true, false) => "(abs)",
        (true, true) => "(absneg)",
    }
}

fn rel(f: &mut Formatter<'_>, file: char, off: i16) -> fmt::Result {
    if off == 0 {
        write!(f, "{file}<a0.x>")
    } else {
        write!(f, "{file}<a0.x + {off}>")
    }
}

/// A cat2/cat4 `#multisrc` (also used for cat3 sources, which never carry abs and print `(neg)` separately).
fn multisrc(f: &mut Formatter<'_>, s: &Src, m: Mods, show_r: bool) -> fmt::Result {
    let r = |r: bool| rflag(r && show_r);
    match *s {
        Src::Reg {
            num,
            half,
            r: rr,
            last,
        } => {
            if last {
                f.write_str("(last)")?;
            }
            write!(f, "{}{}{}{}", absneg(m), r(rr), h(half), Gpr(num))
        }
        Src::Const { num, half, r: rr } => write!(
            f,
            "{}{}{}c{}.{}",
            absneg(m),
            r(rr),
            h(half),
            num >> 2,
            COMP[(num & 3) as usize]
        ),
        Src::RelReg { off, half, r: rr } => {
            write!(f, "{}{}{}", absneg(m), r(rr), h(half))?;
            rel(f, 'r', off)
        }
        Src::RelConst { off, half, r: rr } => {
            write!(f, "{}{}{}", absneg(m), r(rr), h(half))?;
            rel(f, 'c', off)
        }
        Src::Imm { val, half, r: rr } => {
            if half {
                write!(f, "{}{}h({val})", absneg(m), r(rr))
            } else {
                write!(f, "{}{}{val}", absneg(m), r(rr))
            }
        }
        Src::Flut { idx, half, r: rr } => {
            write!(f, "{}{}{}{}", absneg(m), r(rr), h(half), FLUT[idx as usize])
        }
    }
}

/// The cat3 src1/src3 display (`#cat3-src`): no abs, relative always prints its offset.
fn cat3src(f: &mut Formatter<'_>, s: &Src) -> fmt::Result {
    match *s {
        Src::Reg {
            num, half, last, ..
        } => {
            if last {
                f.write_str("(last)")?;
            }
            write!(f, "{}{}", h(half), Gpr(num))
        }
        Src::Const { num, half, .. } => {
            write!(f, "{}c{}.{}", h(half), num >> 2, COMP[(num & 3) as usize])
        }
        Src::Imm { val, .. } => write!(f, "{val}"),
        Src::RelReg { off, half, .. } => write!(f, "{}r<a0.x + {off}>", h(half)),
        Src::RelConst { off, half, .. } => write!(f, "{}c<a0.x + {off}>", h(half)),
        Src::Flut { idx, .. } => f.write_str(FLUT[idx as usize]),
    }
}

fn alu_dst(f: &mut Formatter<'_>, d: &Dst) -> fmt::Result {
    match *d {
        Dst::Reg { num, half } => write!(f, "{}{}", h(half), Gpr(num)),
        Dst::Pred(c) => write!(f, "p0.{}", COMP[c as usize]),
        Dst::Addr(0) => f.write_str("a0.x"),
        Dst::Addr(_) => f.write_str("a1.x"),
        Dst::Rel { off, half } => {
            f.write_str(h(half))?;
            if off == 0 {
                f.write_str("r<a0.x>")
            } else {
                write!(f, "r<a0.x + {off}>")
            }
        }
    }
}

fn op2_name(op: Op2) -> String {
    use Op2::*;
    let s = match op {
        AddF => "add.f",
        MinF => "min.f",
        MaxF => "max.f",
        MulF => "mul.f",
        SignF => "sign.f",
        CmpsF(c) => return format!("cmps.f.{}", c.name()),
        AbsnegF => "absneg.f",
        CmpvF(c) => return format!("cmpv.f.{}", c.name()),
        FloorF => "floor.f",
        CeilF => "ceil.f",
        RndneF => "rndne.f",
        RndazF => "rndaz.f",
        TruncF => "trunc.f",
        AddU => "add.u",
        AddS => "add.s",
        SubU => "sub.u",
        SubS => "sub.s",
        CmpsU(c) => return format!("cmps.u.{}", c.name()),
        CmpsS(c) => return format!("cmps.s.{}", c.name()),
        MinU => "min.u",
        MinS => "min.s",
        MaxU => "max.u",
        MaxS => "max.s",
        AbsnegS => "absneg.s",
        AndB => "and.b",
        OrB => "or.b",
        NotB => "not.b",
        XorB => "xor.b",
        CmpvU(c) => return format!("cmpv.u.{}", c.name()),
        CmpvS(c) => return format!("cmpv.s.{}", c.name()),
        MulU24 => "mul.u24",
        MulS24 => "mul.s24",
        MullU => "mull.u",
        BfrevB => "bfrev.b",
        ClzS => "clz.s",
        ClzB => "clz.b",
        ShlB => "shl.b",
        ShrB => "shr.b",
        AshrB => "ashr.b",
        MgenB => "mgen.b",
        GetbitB => "getbit.b",
        CbitsB => "cbits.b",
    };
    s.to_string()
}

fn op3_name(op: Op3) -> &'static str {
    use Op3::*;
    match op {
        MadU16 => "mad.u16",
        MadshU16 => "madsh.u16",
        MadS16 => "mad.s16",
        MadshM16 => "madsh.m16",
        MadU24 => "mad.u24",
        MadS24 => "mad.s24",
        MadF16 => "mad.f16",
        MadF32 => "mad.f32",
        SelB16 => "sel.b16",
        SelB32 => "sel.b32",
        SelS16 => "sel.s16",
        SelS32 => "sel.s32",
        SelF16 => "sel.f16",
        SelF32 => "sel.f32",
        SadS16 => "sad.s16",
        SadS32 => "sad.s32",
        Shrm => "shrm",
        Shlm => "shlm",
        Shrg => "shrg",
        Shlg => "shlg",
        Andg => "andg",
    }
}

fn op4_name(op: Op4) -> &'static str {
    match op {
        Op4::Rcp => "rcp",
        Op4::Rsq => "rsq",
        Op4::Log2 => "log2",
        Op4::Exp2 => "exp2",
        Op4::Sin => "sin",
        Op4::Cos => "cos",
        Op4::Sqrt => "sqrt",
        Op4::Hrsq => "hrsq",
        Op4::Hlog2 => "hlog2",
        Op4::Hexp2 => "hexp2",
    }
}

fn pred(p: PredSrc) -> String {
    format!(
        "{}p0.{}",
        if p.inv { "!" } else { "" },
        COMP[p.comp as usize]
    )
}

fn offset(off: i32) -> String {
    if off == 0 {
        String::new()
    } else {
        format!("{off:+}")
    }
}

/// C's `%f` (what Mesa's decoder prints floats with): NaN as `nan`/`-nan`.
fn c_float(x: f32) -> String {
    match (x.is_nan(), x.is_sign_negative()) {
        (true, false) => "nan".into(),
        (true, true) => "-nan".into(),
        _ => format!("{x:.6}"),
    }
}

/// A cat1 immediate as Mesa prints it for the source type.
fn cat1_imm(ty: Ty, val: i32) -> String {
    let u = val as u32;
    match ty {
        Ty::F16 => format!("h({})", c_float(f16_to_f32(u as u16))),
        Ty::F32 => format!("({})", c_float(f32::from_bits(u))),
        Ty::U32 if u > 0x1000 => format!("0x{u:x}"),
        Ty::S16 => format!("{}", u as u16 as i16),
        Ty::S32 => format!("{val}"),
        _ => format!("{u}"),
    }
}

impl Display for Instr {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let flag =
            |f: &mut Formatter<'_>, on: bool, s: &str| if on { f.write_str(s) } else { Ok(()) };
        let rpt = |f: &mut Formatter<'_>, n: u8| if n > 0 { write!(f, "(rpt{n})") } else { Ok(()) };
        match &self.op {
            Op::Nop | Op::End | Op::Ret | Op::PredT | Op::PredF | Op::PredE => {
                self.flags(f, "ysej")?;
                rpt(f, self.repeat)?;
                f.write_str(match self.op {
                    Op::Nop => "nop",
                    Op::End => "end",
                    Op::Ret => "ret",
                    Op::PredT => "predt",
                    Op::PredF => "predf",
                    _ => "prede",
                })
            }
            Op::Jump(off) => {
                self.flags(f, "ysj")?;
                write!(f, "jump #{off}")
            }
            Op::Kill(p) => {
                self.flags(f, "ysej")?;
                write!(f, "kill {}", pred(*p))
            }
            Op::Br { kind, p1, p2, off } => {
                self.flags(f, "ysej")?;
                match kind {
                    BrKind::Br => write!(f, "br {}, #{off}", pred(*p1)),
                    BrKind::Any => write!(f, "bany {}, #{off}", pred(*p1)),
                    BrKind::All => write!(f, "ball {}, #{off}", pred(*p1)),
                    BrKind::Or => write!(f, "brao {}, {}, #{off}", pred(*p1), pred(*p2)),
                    BrKind::And => write!(f, "braa {}, {}, #{off}", pred(*p1), pred(*p2)),
                }
            }
            Op::Mov {
                src_ty,
                dst_ty,
                dst,
                src,
            } => {
                self.flags(f, "ysj")?;
                rpt(f, self.repeat)?;
                flag(f, self.ul, "(ul)")?;
                let round = ROUND[self.round as usize & 3];
                let sat = if self.sat { "(sat)" } else { "" };
                let src_txt = |show_r: bool| -> String {
                    let mut s = String::new();
                    match *src {
                        Src::Imm { val, r, .. } => {
                            if show_r && r {
                                s.push_str("(r)");
                            }
                            s.push_str(&cat1_imm(*src_ty, val));
                        }
                        Src::Reg { num, half, r, last } => {
                            let _ = write!(
                                s,
                                "{}{}{}{}",
                                if last { "(last)" } else { "" },
                                rflag(r),
                                h(half),
                                Gpr(num)
                            );
                        }
                        Src::Const { num, half, r } => {
                            let _ = write!(
                                s,
                                "{}{}c{}.{}",
                                rflag(r),
                                h(half),
                                num >> 2,
                                COMP[(num & 3) as usize]
                            );
                        }
                        Src::RelReg { off, half, r } | Src::RelConst { off, half, r } => {
                            let file = if matches!(*src, Src::RelReg { .. }) {
                                'r'
                            } else {
                                'c'
                            };
                            let _ = write!(s, "{}{}", rflag(r), h(half));
                            if off == 0 {
                                let _ = write!(s, "{file}<a0.x>");
                            } else {
                                let _ = write!(s, "{file}<a0.x + {off}>");
                            }
                        }
                        Src::Flut { .. } => s.push('?'),
                    }
                    s
                };
                match dst {
                    Dst::Addr(0) => write!(f, "mova {round}{sat}a0.x, {}", src_txt(true)),
                    Dst::Addr(_) => write!(f, "mova1 {round}{sat}a1.x, {}", src_txt(true)),
                    _ => {
                        let name = if src_ty == dst_ty { "mov" } else { "cov" };
                        write!(f, "{name}.{}{} {round}{sat}", src_ty.name(), dst_ty.name())?;
                        match *dst {
                            Dst::Reg { num, half } => write!(f, "{}{}", h(half), Gpr(num))?,
                            Dst::Pred(c) => {
                                write!(f, "{}p0.{}", h(dst_ty.is_half_cat1()), COMP[c as usize])?
                            }
                            _ => alu_dst(f, dst)?,
                        }
                        write!(f, ", {}", src_txt(false))
                    }
                }
            }
            Op::Swz {
                src_ty,
                dst_ty,
                dst,
                src,
            } => self.multi_move(f, "swz", *src_ty, *dst_ty, dst, src),
            Op::Gat {
                src_ty,
                dst_ty,
                dst,
                src,
            } => self.multi_move(f, "gat", *src_ty, *dst_ty, &[*dst], src),
            Op::Sct {
                src_ty,
                dst_ty,
                dst,
                src,
            } => self.multi_move(f, "sct", *src_ty, *dst_ty, dst, &[*src]),
            Op::Alu2 {
                op, dst, src, mods, ..
            } => {
                self.alu_prefix(f)?;
                write!(f, "{} ", op2_name(*op))?;
                flag(f, self.ei, "(ei)")?;
                alu_dst(f, dst)?;
                f.write_str(", ")?;
                let show_r = self.nop == 0;
                multisrc(f, &src[0], mods[0], show_r)?;
                if op.two_srcs() {
                    f.write_str(", ")?;
                    multisrc(f, &src[1], mods[1], show_r)?;
                }
                Ok(())
            }
            Op::Alu3 {
                op, dst, src, neg, ..
            } => {
                self.alu_prefix(f)?;
                write!(f, "{} ", op3_name(*op))?;
                alu_dst(f, dst)?;
                let show_r = self.nop == 0;
                for (k, s) in src.iter().enumerate() {
                    f.write_str(", ")?;
                    flag(f, neg[k], "(neg)")?;
                    flag(f, show_r && s.repeats(), "(r)")?;
                    if k == 1 {
                        if let Src::Reg { num, half, .. } = *s {
                            write!(f, "{}{}", h(half), Gpr(num))?;
                        }
                    } else {
                        cat3src(f, s)?;
                    }
                }
                Ok(())
            }
            Op::Sfu {
                op, dst, src, mods, ..
            } => {
                self.alu_prefix(f)?;
                write!(f, "{} ", op4_name(*op))?;
                alu_dst(f, dst)?;
                f.write_str(", ")?;
                multisrc(f, src, *mods, self.nop == 0)
            }
            Op::Isam {
                ty,
                wrmask,
                dst,
                coord,
                coord_half,
                samp,
                tex,
                inv_1d,
                s2en,
            } => {
                self.flags(f, "yj")?;
                f.write_str("isam")?;
                if let Some(s) = s2en {
                    f.write_str(if s.nonuniform {
                        ".s2en.nonuniform"
                    } else {
                        ".s2en.uniform"
                    })?;
                }
                flag(f, *inv_1d, ".1d")?;
                let mask: String = (0..4)
                    .filter(|c| wrmask >> c & 1 == 1)
                    .map(|c| COMP[c])
                    .collect();
                write!(
                    f,
                    " ({})({mask}){}{}, {}{}",
                    ty.name(),
                    h(ty.is_half()),
                    Gpr(*dst),
                    h(*coord_half),
                    Gpr(*coord)
                )?;
                match s2en {
                    Some(s) => write!(f, ", h{}", Gpr(s.reg)),
                    None => write!(f, ", s#{samp}, t#{tex}"),
                }
            }
            Op::Load { .. } | Op::Store { .. } => match self.op.access() {
                Some(m) => {
                    self.flags(f, "yj")?;
                    access(f, m)
                }
                None => Ok(()),
            },
            Op::Stib {
                ty,
                d,
                comps,
                src,
                coord,
                slot,
            } => {
                self.flags(f, "yj")?;
                write!(
                    f,
                    "stib.b.typed.{d}d.{}.{comps}.imm {}{}, {}, {slot}",
                    ty.name(),
                    h(ty.is_half()),
                    Gpr(*src),
                    Gpr(*coord)
                )
            }
            Op::Ext(e) => f.write_str(&describe(e.raw).unwrap_or_default()),
            Op::Bar { fence, g, l, r, w } => {
                self.flags(f, "ysj")?;
                f.write_str(if *fence { "fence" } else { "bar" })?;
                flag(f, *g, ".g")?;
                flag(f, *l, ".l")?;
                flag(f, *r, ".r")?;
                flag(f, *w, ".w")
            }
        }
    }
}

impl Instr {
    /// The flag prefixes named by `which` in that order: y (sy), s (ss), e (eq), j (jp), u (ul).
    fn flags(&self, f: &mut Formatter<'_>, which: &str) -> fmt::Result {
        for c in which.chars() {
            let (on, s) = match c {
                'y' => (self.sy, "(sy)"),
                's' => (self.ss, "(ss)"),
                'e' => (self.eq, "(eq)"),
                'j' => (self.jp, "(jp)"),
                _ => (self.ul, "(ul)"),
            };
            if on {
                f.write_str(s)?;
            }
        }
        Ok(())
    }

    /// cat1 `swz`/`gat`/`sct`: destinations, then sources.
    fn multi_move(
        &self,
        f: &mut Formatter<'_>,
        name: &str,
        src_ty: Ty,
        dst_ty: Ty,
        dst: &[RegNum],
        src: &[RegNum],
    ) -> fmt::Result {
        self.flags(f, "ysju")?;
        write!(
            f,
            "{name}.{}{} {}",
            src_ty.name(),
            dst_ty.name(),
            ROUND[self.round as usize & 3]
        )?;
        let regs = dst
            .iter()
            .map(|d| (h(dst_ty.is_half_cat1()), d))
            .chain(src.iter().map(|s| (h(src_ty.is_half_cat1()), s)));
        for (k, (hh, r)) in regs.enumerate() {
            if k > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{hh}{}", Gpr(*r))?;
        }
        Ok(())
    }

    /// `{SY}{SS}{JP}{SAT}{REPEAT|(nopN) }{UL}` of cat2/cat3/cat4.
    fn alu_prefix(&self, f: &mut Formatter<'_>) -> fmt::Result {
        for (on, s) in [
            (self.sy, "(sy)"),
            (self.ss, "(ss)"),
            (self.jp, "(jp)"),
            (self.sat, "(sat)"),
        ] {
            if on {
                f.write_str(s)?;
            }
        }
        if self.nop > 0 {
            write!(f, "(nop{}) ", self.nop)?;
        } else if self.repeat > 0 {
            write!(f, "(rpt{})", self.repeat)?;
        }
        if self.ul {
            f.write_str("(ul)")?;
        }
        Ok(())
    }
}

/// `ldg`/`ldl`/`ldp` and `stg`/`stl`/`stp` operands after the flags.
fn access(f: &mut Formatter<'_>, m: Access) -> fmt::Result {
    let (file, a) = match m.space {
        Space::Global => ('g', PlainGpr(m.addr).to_string()),
        Space::Local => ('l', Gpr(m.addr).to_string()),
        Space::Private => ('p', Gpr(m.addr).to_string()),
    };
    // Mesa prints the `h` of a half register for global accesses and private loads only.
    let th = match (m.space, m.store) {
        (Space::Global, _) | (Space::Private, false) => h(m.ty.is_half()),
        _ => "",
    };
    let name = format!("{}{file}", if m.store { "st" } else { "ld" });
    let (ty, reg, off, size) = (m.ty.name(), Gpr(m.reg), offset(m.off), m.size);
    if m.store {
        write!(f, "{name}.{ty} {file}[{a}{off}], {th}{reg}, {size}")
    } else {
        write!(f, "{name}.{ty} {th}{reg}, {file}[{a}{off}], {size}")
    }
}
