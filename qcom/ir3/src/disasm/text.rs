//! Mesa's text straight from the word for the a6xx encodings the decoder does not take (graphics-only instructions
//! and compute forms not yet modelled; field layouts in docs/hw/adreno-kgsl-pm4.md §16.9), and for the
//! blob-compiler forms it does take ([`Op::Ext`](crate::instr::Op::Ext) prints through here): [`describe`] names
//! every instruction of a listing, and the program loader refuses the non-executed ones by that name. This module
//! never feeds the interpreter.
use crate::bits::{bit, bits, sext};
use crate::decode::decode;
use core::fmt::Write;

const COMP: [char; 4] = ['x', 'y', 'z', 'w'];
const TYPES: [&str; 8] = ["f16", "f32", "u16", "u32", "s16", "s32", "u8", "u8_32"];

/// A `#reg-gpr` field: `rN.c`, with GPR 61/62 printed as a0/p0.
fn gpr(v: u64) -> String {
    let c = COMP[(v & 3) as usize];
    match (v & 0xFF) >> 2 {
        61 => format!("a0.{c}"),
        62 => format!("p0.{c}"),
        n => format!("r{n}.{c}"),
    }
}

/// A `#cat6-src` field: an 8-bit immediate when `imm`, else a plain `rN.c`.
fn src6(v: u64, imm: bool) -> String {
    if imm {
        format!("{}", v & 0xFF)
    } else {
        format!("r{}.{}", (v & 0xFF) >> 2, COMP[(v & 3) as usize])
    }
}

fn flag(on: bool, s: &str) -> &str {
    if on {
        s
    } else {
        ""
    }
}

fn ty(w: u64, lo: u32) -> usize {
    bits(w, lo, lo + 2) as usize
}

/// Whether a `#type` value lives in half registers (f16, u16, s16, u8; `u8_32` is an 8-bit memory type held
/// in a full register).
fn ty_half(t: usize) -> bool {
    matches!(t, 0 | 2 | 4 | 6)
}

/// `+N` / `-N` / nothing, as Mesa prints an `offset`/`uoffset` field.
fn off(v: i64) -> String {
    if v == 0 {
        String::new()
    } else if v > 0 {
        format!("+{v}")
    } else {
        format!("{v}")
    }
}

/// Whether a described instruction only makes sense in a graphics stage (varying interpolation, screen-space
/// derivatives, geometry output, varying storage, LOD queries), judged by its printed name.
pub fn graphics_only(text: &str) -> bool {
    let mut t = text.trim_start();
    // Skip the flag groups: (sy)(ss)(jp)(sat)(nopN) (rptN)(ul)…
    while let Some(rest) = t.strip_prefix('(') {
        t = rest.split_once(')').map_or("", |(_, r)| r).trim_start();
    }
    let op = t.split(' ').next().unwrap_or("");
    [
        "bary.", "flat.", "dsx", "dsy", "emit", "cut", "chmask", "chsh", "ldlv.", "ldlw.", "stlw.",
        "getpos", "rgetpos", "getlod", "samgq", "samgp", "kill",
    ]
    .iter()
    .any(|p| op.starts_with(p))
}

/// Mesa's text for an encoding [`crate::decode::decode`] rejects (or takes as a blob-compiler form), when it is a
/// known instruction.
pub fn describe(w: u64) -> Option<String> {
    match bits(w, 61, 63) {
        0 => cat0(w),
        1 => cat1(w),
        2 => cat2(w),
        3 => cat3(w),
        5 => cat5(w),
        6 => cat6(w),
        7 => cat7(w),
        _ => None,
    }
}

fn cat0(w: u64) -> Option<String> {
    let (sy, ss, eq, jp) = (
        flag(bit(w, 60), "(sy)"),
        flag(bit(w, 44), "(ss)"),
        flag(bit(w, 48), "(eq)"),
        flag(bit(w, 59), "(jp)"),
    );
    let imm = w as u32 as i32;
    let rpt = bits(w, 40, 42);
    let rpt = if rpt > 0 {
        format!("(rpt{rpt})")
    } else {
        String::new()
    };
    let eolm = flag(bit(w, 32), "(eolm)");
    let eogm = flag(bit(w, 33), "(eogm)");
    let zero = |name: &str| format!("{sy}{ss}{eq}{jp}{eolm}{eogm}{rpt}{name}");
    // Zero-source forms have no branch type or predicate sources.
    let zero_ok = bits(w, 34, 39) == 0 && bits(w, 45, 47) == 0 && bits(w, 52, 54) == 0;
    let immed = |name: &str| format!("{sy}{ss}{jp}{name} #{imm}");
    Some(match (bit(w, 49), bits(w, 55, 58)) {
        (false, 3) => immed("call"),
        (false, 7) if zero_ok => zero("emit"),
        (false, 8) if zero_ok => zero("cut"),
        (false, 9) if zero_ok => zero("chmask"),
        (false, 10) if zero_ok => zero("chsh"),
        (false, 11) if zero_ok => zero("flow_rev"),
        (true, 0) => immed("bkt"),
        (true, 4) => format!("{sy}{ss}{jp}getlast.w{} #{imm}", 2u64 << bits(w, 52, 54)),
        (true, 5) => immed("getone"),
        (true, 7) => immed("shps"),
        (true, 8) if zero_ok => zero("shpe"),
        (false, 1) if bits(w, 37, 39) == 0b011 => {
            format!("{sy}{ss}{eq}{jp}brac.{} #{imm}", bits(w, 32, 36))
        }
        _ => return None,
    })
}

fn cat1(w: u64) -> Option<String> {
    // movmsk: u32 → u32, no source, no relative/immediate bits.
    if bits(w, 57, 58) != 0b11 || w as u32 != 0 || bits(w, 46, 56) != 0x033 {
        return None;
    }
    // movmsk: the active-fiber mask of (REPEAT+1)·32 fibers, one bit per fiber, into consecutive registers.
    Some(format!(
        "{}{}{}{}movmsk.w{} {}",
        flag(bit(w, 60), "(sy)"),
        flag(bit(w, 44), "(ss)"),
        flag(bit(w, 59), "(jp)"),
        flag(bit(w, 45), "(ul)"),
        (bits(w, 40, 41) + 1) * 32,
        gpr(bits(w, 32, 39))
    ))
}

/// Prints `w` with its opcode field replaced by `as_opc` (an instruction with the same operand layout that
/// [`decode`] knows) and the name swapped for `name`.
fn same_layout(w: u64, mask: u64, as_opc: u64, known: &str, name: &str) -> Option<String> {
    let i = decode((w & !mask) | as_opc).ok()?;
    Some(i.to_string().replacen(known, name, 1))
}

fn cat2(w: u64) -> Option<String> {
    // bary.f / flat.b: cat2 opcode 57 (bits 53-58), bit 50 selects flat; operands as any two-source cat2.
    if bits(w, 53, 58) != 57 {
        return None;
    }
    let name = if bit(w, 50) { "flat.b " } else { "bary.f " };
    same_layout(w, 0x3F << 53 | 7 << 48, 0, "add.f ", name)
}

fn cat3(w: u64) -> Option<String> {
    if !bit(w, 13) {
        return None;
    }
    let opc = bits(w, 55, 58);
    let (sy, ss, jp, ul) = (
        flag(bit(w, 60), "(sy)"),
        flag(bit(w, 44), "(ss)"),
        flag(bit(w, 59), "(jp)"),
        flag(bit(w, 45), "(ul)"),
    );
    let (r1, r2) = (bit(w, 43), bit(w, 15));
    let rpt = bits(w, 40, 41);
    // (nopN) replaces (rptN) and the two (r) flags when REPEAT is 0.
    let nop = if rpt == 0 && (r1 || r2) {
        format!("(nop{}) ", r1 as u8 | (r2 as u8) << 1)
    } else if rpt > 0 {
        format!("(rpt{rpt})")
    } else {
        String::new()
    };
    let show_r = rpt > 0;
    let r = |on: bool| flag(on && show_r, "(r)");
    let src = |v: u64, half: bool, immed: bool| -> Option<String> {
        let h = if half { "h" } else { "" };
        Some(match bits(v, 11, 12) {
            0 => format!("{}{h}{}", flag(bit(v, 10), "(last)"), gpr(v)),
            0b10 | 0b11 if immed => format!("{}", bits(v, 0, 11)),
            0b10 => format!("{h}c{}.{}", bits(v, 2, 10), COMP[(v & 3) as usize]),
            _ => {
                let o = sext(bits(v, 0, 9), 10);
                let f = if bit(v, 10) { 'c' } else { 'r' };
                format!("{h}{f}<a0.x + {o}>")
            }
        })
    };
    let neg = |b: u32| flag(bit(w, b), "(neg)");
    // Only register src1 (and, for the dot products, register src3) print as Mesa does.
    let gpr_src = |v: u64| bits(v, 11, 12) == 0 && bits(v, 8, 9) == 0;
    if !gpr_src(bits(w, 0, 12)) || (opc == 0b1101 && !gpr_src(bits(w, 16, 28))) {
        return None;
    }
    match opc {
        0b1101 => {
            // dp2acc / dp4acc: full registers; bit 14 signedness, bit 30 packing, bit 46 selects dp4acc.
            let name = if bit(w, 46) { "dp4acc" } else { "dp2acc" };
            let sign = if bit(w, 14) { ".mixed" } else { ".unsigned" };
            let pack = if bit(w, 30) { ".high" } else { ".low" };
            // The dot-product display never prints (rptN); its src3 (r) flag shows even in the (nopN) form.
            let nop_mode = rpt == 0 && (r1 || r2);
            let nop = if nop_mode { nop.as_str() } else { "" };
            let rr = |on: bool| flag(on && !nop_mode, "(r)");
            Some(format!(
                "{sy}{ss}{jp}{}{nop}{ul}{name}{sign}{pack} {}, {}{}, {}{}, {}{}{}",
                flag(bit(w, 42), "(sat)"),
                gpr(bits(w, 32, 39)),
                rr(r1),
                src(bits(w, 0, 12), false, false)?,
                rr(r2),
                gpr(bits(w, 47, 54)),
                neg(31),
                flag(bit(w, 29), "(r)"),
                src(bits(w, 16, 28), false, false)?
            ))
        }
        0b1110 => {
            // wmm / wmm.accu (bit 42): bit 31 full sources, bit 46 full destination, src3 an immediate.
            let name = if bit(w, 42) { "wmm.accu" } else { "wmm" };
            let half = !bit(w, 31);
            let h = if half { "h" } else { "" };
            let dh = if bit(w, 46) { "" } else { "h" };
            Some(format!(
                "{sy}{ss}{jp}{nop}{ul}{name} {dh}{}, {}{}{}, {}{}{h}{}, {}{}",
                gpr(bits(w, 32, 39)),
                neg(14),
                r(r1),
                src(bits(w, 0, 12), half, false)?,
                neg(30),
                r(r2),
                gpr(bits(w, 47, 54)),
                r(bit(w, 29)),
                src(bits(w, 16, 28), half, true)?
            ))
        }
        _ => None,
    }
}

/// cat5 opcode table: name, source count, has a sampler, has a texture, prints a type.
fn cat5_op(opc: u64) -> Option<(&'static str, u8, bool, bool, bool)> {
    Some(match opc {
        0 => ("isam", 1, true, true, true),
        1 => ("isaml", 2, true, true, true),
        2 => ("isamm", 1, true, true, true),
        3 => ("sam", 1, true, true, true),
        4 => ("samb", 2, true, true, true),
        5 => ("saml", 2, true, true, true),
        6 => ("samgq", 1, true, true, true),
        7 => ("getlod", 1, true, true, true),
        8 => ("conv", 2, true, true, true),
        9 => ("convm", 2, true, true, true),
        10 => ("getsize", 1, false, true, true),
        11 => ("getbuf", 0, false, true, true),
        12 => ("getpos", 1, false, true, true),
        13 => ("getinfo", 0, false, true, true),
        14 => ("dsx", 1, false, false, true),
        15 => ("dsy", 1, false, false, true),
        16 => ("gather4r", 1, true, true, true),
        17 => ("gather4g", 1, true, true, true),
        18 => ("gather4b", 1, true, true, true),
        19 => ("gather4a", 1, true, true, true),
        20 => ("samgp0", 1, true, true, true),
        21 => ("samgp1", 1, true, true, true),
        22 => ("samgp2", 1, true, true, true),
        23 => ("samgp3", 1, true, true, true),
        24 => ("dsxpp.1", 1, false, false, false),
        25 => ("dsypp.1", 1, false, false, false),
        26 => ("rgetpos", 1, false, false, true),
        27 => ("rgetinfo", 0, false, false, true),
        _ => return None,
    })
}

fn cat5(w: u64) -> Option<String> {
    let opc = bits(w, 54, 58);
    let (sy, jp) = (flag(bit(w, 60), "(sy)"), flag(bit(w, 59), "(jp)"));
    let t = ty(w, 44);
    let wrmask: String = (0..4)
        .filter(|c| bit(w, 40 + c))
        .map(|c| COMP[c as usize])
        .collect();
    let dst = format!(
        "{}{}",
        if ty_half(t) { "h" } else { "" },
        gpr(bits(w, 32, 39))
    );
    let sh = if bit(w, 0) { "" } else { "h" };
    match opc {
        28 => return Some(format!("{sy}{jp}tcinv")),
        31 => {
            let src1 = format!("{sh}{}", gpr(bits(w, 1, 8)));
            return Some(if bit(w, 53) {
                let mode = ["brcst", "horiz", "vert", "diag"][bits(w, 19, 20) as usize];
                let src2 = if mode == "brcst" {
                    format!(", {sh}{}", gpr(bits(w, 9, 16)))
                } else {
                    String::new()
                };
                format!(
                    "{sy}{jp}quad_shuffle.{mode} ({})({wrmask}){dst}, {src1}{src2}",
                    TYPES[t]
                )
            } else {
                format!(
                    "{sy}{jp}brcst.active.w{} ({})({wrmask}){dst}, {src1}",
                    2u64 << bits(w, 19, 20),
                    TYPES[t]
                )
            });
        }
        _ => {}
    }
    let (name, nsrc, has_samp, has_tex, has_type) = cat5_op(opc)?;
    let isam = opc == 0;
    let src2_used = nsrc > 1 || bit(w, 52) || (isam && bit(w, 53));
    if !src2_used && bits(w, 9, 16) != 0 || nsrc == 0 && bits(w, 1, 8) != 0 {
        return None;
    }
    let mut s = format!("{sy}{jp}{name}");
    s += flag(bit(w, 48), ".3d");
    s += flag(bit(w, 49), ".a");
    s += flag(bit(w, 52), ".o");
    if !isam {
        s += flag(bit(w, 53), ".p");
    }
    s += flag(bit(w, 50), if isam { ".v" } else { ".s" });
    let s2en_b = bit(w, 51);
    let mode = bits(w, 29, 31);
    // Without the indirect/bindless bit the descriptor-base bits must be clear.
    if !s2en_b && (bit(w, 47) || bits(w, 19, 20) != 0) {
        return None;
    }
    // DESC_MODE: 0 uniform / 4 nonuniform indirect (non-bindless); the others are bindless: 1 a1+uniform,
    // 2 nonuniform, 3 a1+nonuniform, 5 uniform, 6 immediate, 7 a1+immediate.
    let bindless = s2en_b && !matches!(mode, 0 | 4);
    if s2en_b {
        if !matches!(mode, 6 | 7) {
            s += ".s2en";
        }
        s += match mode {
            0 | 1 | 5 => ".uniform",
            2..=4 => ".nonuniform",
            _ => "",
        };
        if bindless {
            let _ = write!(s, ".base{}", (bits(w, 19, 20) * 2) | bits(w, 47, 47));
        }
    }
    if isam && !bit(w, 18) {
        s += ".1d";
    }
    s.push(' ');
    if has_type {
        let _ = write!(s, "({})", TYPES[t]);
    }
    let _ = write!(s, "({wrmask}){dst}");
    if nsrc > 0 {
        let _ = write!(s, ", {sh}{}", gpr(bits(w, 1, 8)));
    }
    if src2_used {
        let _ = write!(s, ", {sh}{}", gpr(bits(w, 9, 16)));
    }
    if !s2en_b {
        if has_samp {
            let _ = write!(s, ", s#{}", bits(w, 21, 24));
        }
        if has_tex {
            let _ = write!(s, ", t#{}", bits(w, 25, 31));
        }
        return Some(s);
    }
    let src3 = bits(w, 21, 28);
    match mode {
        6 => {
            if has_samp {
                let _ = write!(s, ", s#{}", src3 & 15);
            }
            if has_tex {
                let _ = write!(s, ", t#{}", src3 >> 4);
            }
        }
        7 => {
            if has_samp {
                let _ = write!(s, ", s#{src3}");
            }
            s += ", a1.x";
        }
        0 | 4 => {
            let _ = write!(s, ", h{}", gpr(src3));
        }
        _ => {
            let _ = write!(s, ", {}", gpr(src3));
            if matches!(mode, 1 | 3) {
                s += ", a1.x";
            }
        }
    }
    Some(s)
}

const ATOMIC: [&str; 11] = [
    "add", "sub", "xchg", "inc", "dec", "cmpxchg", "min", "max", "and", "or", "xor",
];

fn cat6(w: u64) -> Option<String> {
    let (sy, jp) = (flag(bit(w, 60), "(sy)"), flag(bit(w, 59), "(jp)"));
    let pre = format!("{sy}{jp}");
    let t = ty(w, 49);
    let tn = TYPES[t];
    let th = if ty_half(t) { "h" } else { "" };
    let opc = bits(w, 54, 58);
    let typed = if bit(w, 11) { "typed" } else { "untyped" };
    let d = bits(w, 9, 10) + 1;
    let tsize = bits(w, 12, 13) + 1;
    let mode6 = bits(w, 6, 7);
    let mode_name = ["imm", "uniform", "nonuniform", "mode3"][mode6 as usize];
    let base = if bit(w, 8) {
        format!(".base{}", bits(w, 1, 3))
    } else {
        String::new()
    };
    let a6 = bits(w, 14, 19);
    if bit(w, 53)
        && bits(w, 20, 22) == 0b110
        && matches!(a6, 6 | 29)
        && !bit(w, 52)
        && !bit(w, 40)
        && mode6 < 3
        && (bit(w, 23) || bits(w, 4, 5) == 0 && opc == 0)
        && !(a6 == 29 && bit(w, 0))
    {
        // ldib.b / stib.b: SRC1 (value) 32-39, SRC2 (coordinate) 24-31, SSBO 41-48 (immediate in mode 0),
        // optional immediate offset (bit 23) in bits 4-5 (high) and 54-58 (low).
        let name = if a6 == 6 { "ldib.b" } else { "stib.b" };
        let o = if bit(w, 23) {
            off((bits(w, 4, 5) << 5 | opc) as i64)
        } else {
            String::new()
        };
        return Some(format!(
            "{pre}{name}.{typed}.{d}d.{tn}{}.{tsize}.{mode_name}{base} {th}{}, {}{o}, {}",
            flag(bit(w, 40), ".rck"),
            gpr(bits(w, 32, 39)),
            gpr(bits(w, 24, 31)),
            src6(bits(w, 41, 48), mode6 == 0)
        ));
    }
    if bit(w, 53) && !bit(w, 52) && opc == 27 && !bit(w, 0) && bits(w, 9, 22) == 0 {
        let mode = match bits(w, 45, 47) {
            1 => "xor",
            2 => "up",
            3 => "down",
            6 => "rup",
            7 => "rdown",
            _ => return None,
        };
        return Some(format!(
            "{pre}shfl.{mode}.{tn} {th}{}, {th}{}, {}",
            gpr(bits(w, 32, 39)),
            gpr(bits(w, 1, 8)),
            src6(bits(w, 24, 31), bit(w, 23))
        ));
    }
    // The other a6xx forms: no offset bits, no .rck, a valid descriptor mode.
    if bit(w, 53) && opc == 0 && bits(w, 4, 5) == 0 && !bit(w, 40) && mode6 < 3 {
        let dst = gpr(bits(w, 32, 39));
        let id_ok = !bit(w, 0) && bit(w, 22) && bits(w, 20, 21) != 4;
        return Some(match a6 {
            30 if bit(w, 22) && bits(w, 49, 50) == 0b11 => {
                let s1 = src6(bits(w, 24, 31), bit(w, 23));
                let s2 = src6(bits(w, 41, 48), mode6 == 0);
                if bit(w, 52) {
                    format!(
                        "{pre}ldc.{}.k.{mode_name}{base} c[a1.x], {s1}, {s2}",
                        bits(w, 32, 39) + 1
                    )
                } else {
                    format!(
                        "{pre}ldc{}.offset{}.{tsize}.{mode_name}{base} {dst}, {s1}, {s2}",
                        flag(bit(w, 11), ".u"),
                        bits(w, 9, 10)
                    )
                }
            }
            36 if id_ok => format!("{pre}getspid.{tn} {dst}"),
            37 if id_ok => format!("{pre}getwid.{tn} {dst}"),
            38 if id_ok && bit(w, 23) => format!("{pre}getfiberid.{tn} {dst}"),
            12 | 15 if !bit(w, 0) && bits(w, 20, 23) == 0b0110 => format!(
                "{pre}{}.{typed}.{d}d.{tn}.{tsize}.{mode_name}{base} {dst}, {}",
                if a6 == 15 { "resinfo.b" } else { "resbase" },
                src6(bits(w, 41, 48), mode6 == 0)
            ),
            16..=26 if bit(w, 52) && bits(w, 20, 23) == 0b0110 && !matches!(a6, 19 | 20) => {
                format!(
                    "{pre}atomic.b.{}.{typed}.{d}d.{tn}.{tsize}.{mode_name}{base} {dst}, {}, {}",
                    ATOMIC[(a6 - 16) as usize],
                    gpr(bits(w, 24, 31)),
                    src6(bits(w, 41, 48), mode6 == 0)
                )
            }
            _ => return None,
        });
    }
    let dst = gpr(bits(w, 32, 39));
    let const_dst = || {
        let v = bits(w, 32, 40);
        if v & 0x100 != 0 {
            format!("a1.x{}", off((v & 0xFF) as i64))
        } else {
            format!("{}", v & 0xFF)
        }
    };
    // ldg.a / stg.a (a6xx): base + ((SRC2 << SRC2_SHIFT) + OFF) << type shift.
    let addr_a = |src1: String, src2: String| {
        let shift = if t >= 6 {
            0
        } else if ty_half(t) {
            1
        } else {
            2
        };
        let (o, s2s) = (bits(w, 9, 10), bits(w, 12, 13));
        let o = off(o as i64);
        if shift == 0 {
            format!("{src1}+{src2}{o}")
        } else if o.is_empty() {
            format!("{src1}+({src2}<<{})", shift + s2s)
        } else if s2s == 0 {
            format!("{src1}+(({src2}{o})<<{shift})")
        } else {
            format!("{src1}+((({src2}<<{s2s}){o})<<{shift})")
        }
    };
    let plain = |v: u64| format!("r{}.{}", (v & 0xFF) >> 2, COMP[(v & 3) as usize]);
    let a3xx_atomic = bit(w, 0) && bits(w, 1, 8) == 0 && bits(w, 41, 48) == 0 && !bit(w, 53);
    Some(match opc {
        0 if bit(w, 52) && !bit(w, 53) && bit(w, 0) && !bit(w, 22) && bits(w, 30, 31) == 0 => {
            format!(
                "{pre}ldg.k.{tn} c[{}], g[{}{}], {}",
                const_dst(),
                plain(bits(w, 14, 21)),
                off(sext(bits(w, 1, 13), 13)),
                bits(w, 23, 26)
            )
        }
        0 if bit(w, 0)
            && bit(w, 22)
            && bit(w, 23)
            && !bit(w, 11)
            && bits(w, 30, 31) == 0
            && bits(w, 52, 53) == 0 =>
        {
            format!(
                "{pre}ldg.a.{tn} {th}{dst}, g[{}], {}",
                addr_a(plain(bits(w, 14, 21)), gpr(bits(w, 1, 8))),
                bits(w, 24, 26)
            )
        }
        3 if bit(w, 52) && !bit(w, 53) && bit(w, 23) && !bit(w, 11) && bits(w, 30, 31) == 0 => {
            format!(
                "{pre}stg.a.{tn} g[{}], {th}{}, {}",
                addr_a(plain(bits(w, 41, 48)), gpr(bits(w, 32, 39))),
                gpr(bits(w, 1, 8)),
                bits(w, 24, 26)
            )
        }
        10 if bit(w, 0) && bit(w, 23) => format!(
            "{pre}ldlw.{tn} {dst}, l[{}{}], {}",
            gpr(bits(w, 14, 21)),
            off(sext(bits(w, 1, 13), 13)),
            bits(w, 24, 31)
        ),
        11 if bit(w, 23) && bit(w, 40) => format!(
            "{pre}stlw.{tn} l[{}{}], {}, {}",
            gpr(bits(w, 41, 48)),
            off(sext(bits(w, 9, 13) << 8 | bits(w, 32, 39), 13)),
            gpr(bits(w, 1, 8)),
            bits(w, 24, 31)
        ),
        31 if !bit(w, 0) && bits(w, 14, 21) == 0 && bits(w, 22, 23) == 0b11 => format!(
            "{pre}ldlv.{tn} {dst}, l[{}], {}",
            bits(w, 1, 13),
            bits(w, 24, 31)
        ),
        28 if bits(w, 14, 22) == 0 && bit(w, 23) => format!(
            "{pre}stc.{tn} c[{}], {}, {}",
            const_dst(),
            gpr(bits(w, 1, 8)),
            bits(w, 24, 26)
        ),
        16..=26 if a3xx_atomic && bit(w, 52) => format!(
            "{pre}atomic.g.{}.{typed}.{d}d.{tn}.{tsize}.g {dst}, {}, {}",
            ATOMIC[(opc - 16) as usize],
            src6(bits(w, 14, 21), bit(w, 22)),
            src6(bits(w, 24, 31), bit(w, 23))
        ),
        16..=26 if a3xx_atomic && !bit(w, 52) => format!(
            "{pre}atomic.{}.{typed}.{d}d.{tn}.{tsize}.l {dst}, l[{}], {}",
            ATOMIC[(opc - 16) as usize],
            src6(bits(w, 14, 21), bit(w, 22)),
            src6(bits(w, 24, 31), bit(w, 23))
        ),
        _ => return None,
    })
}

fn cat7(w: u64) -> Option<String> {
    let pre = format!(
        "{}{}{}",
        flag(bit(w, 60), "(sy)"),
        flag(bit(w, 44), "(ss)"),
        flag(bit(w, 59), "(jp)")
    );
    let all = bit(w, 51);
    // The cache operations carry no operands: only the flags, opcode and bit 51.
    if w & 0xFFF_FFFF_FFFF != 0 || bits(w, 45, 50) != 0 || bits(w, 52, 54) != 0 {
        return None;
    }
    Some(match bits(w, 55, 58) {
        2 => format!("{pre}sleep.{}", if all { "l" } else { "s" }),
        3 => format!("{pre}icinv"),
        4 => format!("{pre}dccln.{}", if all { "all" } else { "shr" }),
        5 => format!("{pre}dcinv.{}", if all { "all" } else { "shr" }),
        6 => format!("{pre}dcflu.{}", if all { "all" } else { "shr" }),
        _ => return None,
    })
}
