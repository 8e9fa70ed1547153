//! An LLVM-compatible listing of decoded instructions: mnemonic and operands printed the way
//! `llvm-objdump-19 --mcpu=gfx1100 -d` prints them, so the decoder can be checked against LLVM
//! instruction by instruction (`tests/tests/amd/rdna3_models.rs`).
use super::decode::{is_vop3sd, Half, Inst};
use super::operand::{sreg_name, vreg_name, Src, NULL};
use super::ops::{Enc, Op};

/// `mnemonic operands` of one instruction, as LLVM prints it.
pub fn text(i: &Inst) -> String {
    let ops = operands(i);
    let name = mnemonic(i);
    if ops.is_empty() {
        name
    } else {
        format!("{name} {ops}")
    }
}

fn mnemonic(i: &Inst) -> String {
    let base = i.op.name();
    match i.enc {
        Enc::Vop1 | Enc::Vop2 | Enc::Vopc if i.op.has_e32() => format!("{base}_e32"),
        Enc::Vop3 if i.e64 => format!("{base}_e64"),
        Enc::Vopd => format!("v_dual_{}", &base[2..]),
        Enc::Scratch => format!("scratch_{}", &base["global_".len()..]),
        _ => base.into(),
    }
}

fn src_text(i: &Inst, k: usize) -> String {
    let s = i.src[k].text(i.op.src_ty(k).dwords());
    let s = if i.abs >> k & 1 == 1 {
        format!("|{s}|")
    } else {
        s
    };
    if i.neg >> k & 1 == 1 {
        format!("-{s}")
    } else {
        s
    }
}

fn join(parts: &[String]) -> String {
    parts.join(", ")
}

fn operands(i: &Inst) -> String {
    let op = i.op;
    let d = op.dst_dwords();
    let sdst = || sreg_name(i.dst, d);
    let vdst = || vreg_name(i.dst, d);
    let s = |k: usize| src_text(i, k);
    match i.enc {
        Enc::Sop1 | Enc::Sop2 => {
            let n = if i.enc == Enc::Sop1 { 1 } else { 2 };
            let mut v = vec![sdst()];
            v.extend((0..n).map(s));
            join(&v)
        }
        Enc::Sopc => join(&[s(0), s(1)]),
        Enc::Sopk => format!("{}, {:#x}", sdst(), i.imm as u16),
        Enc::Sopp => sopp(i),
        Enc::Smem => {
            let off = match i.src[1] {
                Src::S(NULL) if i.imm == 0 => "null".to_string(),
                Src::S(NULL) => format!("{:#x}", i.imm),
                Src::S(r) if i.imm == 0 => sreg_name(r, 1),
                Src::S(r) => format!("{} offset:{:#x}", sreg_name(r, 1), i.imm),
                other => other.text(1),
            };
            format!("{}, {}, {off}{}", sdst(), i.src[0].text(2), cache(i.cache))
        }
        Enc::Vop1 => match op {
            Op::VNop => String::new(),
            Op::VReadfirstlaneB32 => join(&[sreg_name(i.dst, 1), s(0)]),
            _ => join(&[vdst(), s(0)]),
        },
        Enc::Vop2 => match op {
            Op::VCndmaskB32 => join(&[vdst(), s(0), s(1), "vcc_lo".into()]),
            Op::VAddCoCiU32 | Op::VSubCoCiU32 | Op::VSubrevCoCiU32 => {
                join(&[vdst(), "vcc_lo".into(), s(0), s(1), "vcc_lo".into()])
            }
            Op::VFmamkF32 | Op::VFmamkF16 => join(&[vdst(), s(0), s(2), s(1)]),
            Op::VFmaakF32 | Op::VFmaakF16 => join(&[vdst(), s(0), s(1), s(2)]),
            _ => join(&[vdst(), s(0), s(1)]),
        },
        Enc::Vopc if op.is_cmpx() => join(&[s(0), s(1)]),
        Enc::Vopc => join(&["vcc_lo".into(), s(0), s(1)]),
        Enc::Vop3 => vop3(i),
        Enc::Vop3p if op.is_packed_f16() => {
            let n = if op == Op::VPkFmaF16 { 3 } else { 2 };
            let raw = |k: usize| i.src[k].text(1);
            let mut v = vec![vdst()];
            v.extend((0..n).map(raw));
            let mut t = join(&v);
            let list = |m: u8| {
                let b: Vec<String> = (0..n).map(|k| format!("{}", m >> k & 1)).collect();
                format!("[{}]", b.join(","))
            };
            let all = (1u8 << n) - 1;
            if i.op_sel & all != 0 {
                t += &format!(" op_sel:{}", list(i.op_sel));
            }
            if i.op_sel_hi & all != all {
                t += &format!(" op_sel_hi:{}", list(i.op_sel_hi));
            }
            if i.neg & all != 0 {
                t += &format!(" neg_lo:{}", list(i.neg));
            }
            if i.abs & all != 0 {
                t += &format!(" neg_hi:{}", list(i.abs));
            }
            if i.clamp {
                t += " clamp";
            }
            t
        }
        Enc::Vop3p if op.is_packed16() => {
            let mut t = join(&[vdst(), s(0), s(1)]);
            if i.clamp {
                t += " clamp";
            }
            t
        }
        Enc::Vop3p => {
            let mut t = join(&[vdst(), s(0), s(1), s(2)]);
            if i.op_sel_hi != 0 {
                let b = |k: u8| i.op_sel_hi >> k & 1;
                t += &format!(" op_sel_hi:[{},{},{}]", b(0), b(1), b(2));
            }
            if i.clamp {
                t += " clamp";
            }
            t
        }
        Enc::Vopd => {
            let x = Half {
                op,
                vdst: i.dst,
                src: i.src,
            };
            let y = i.y.expect("a VOPD instruction has its Y half");
            format!("{} :: v_dual_{} {}", half(&x), &y.op.name()[2..], half(&y))
        }
        Enc::Ds => ds(i),
        Enc::Global | Enc::Scratch => global(i),
    }
}

fn half(h: &Half) -> String {
    let t = |k: usize| h.src[k].text(1);
    let d = vreg_name(h.vdst, 1);
    match h.op {
        Op::VMovB32 => join(&[d, t(0)]),
        Op::VFmaakF32 => join(&[d, t(0), t(1), t(2)]),
        Op::VFmamkF32 => join(&[d, t(0), t(2), t(1)]),
        _ => join(&[d, t(0), t(1)]),
    }
}

fn vop3(i: &Inst) -> String {
    let op = i.op;
    let n = super::decode::vop3_sources(op);
    let mut v: Vec<String> = Vec::new();
    let is_vopc = super::ops::TABLE
        .iter()
        .any(|&(e, _, o)| o == op && e == Enc::Vopc);
    if is_vopc {
        if !op.is_cmpx() {
            v.push(sreg_name(i.dst, 1));
        }
    } else if op == Op::VReadlaneB32 {
        v.push(sreg_name(i.dst, 1));
    } else {
        v.push(vreg_name(i.dst, op.dst_dwords()));
    }
    if is_vop3sd(op) {
        v.push(sreg_name(i.sdst, 1));
    }
    for k in 0..n {
        // The third source of cndmask / add_co_ci is a lane mask (one SGPR in wave32).
        v.push(src_text(i, k));
    }
    let mut t = join(&v);
    if i.clamp {
        t += " clamp";
    }
    t
}

fn ds(i: &Inst) -> String {
    let op = i.op;
    let off = u32::from(i.imm as u8) | u32::from(i.imm1) << 8;
    let off = if off != 0 {
        format!(" offset:{off}")
    } else {
        String::new()
    };
    let addr = i.src[0].text(1);
    if op.is_store() {
        format!("{addr}, {}{off}", i.src[1].text(op.dst_dwords()))
    } else {
        format!("{}, {addr}{off}", vreg_name(i.dst, op.dst_dwords()))
    }
}

fn global(i: &Inst) -> String {
    let op = i.op;
    let off_saddr = matches!(i.src[2], Src::S(NULL));
    let scratch = i.enc == Enc::Scratch;
    let addr = match i.src[0] {
        Src::S(NULL) => "off".to_string(),
        a => a.text(if off_saddr && !scratch { 2 } else { 1 }),
    };
    let saddr = if off_saddr {
        "off".to_string()
    } else {
        i.src[2].text(if scratch { 1 } else { 2 })
    };
    let off = if i.imm != 0 {
        format!(" offset:{}", i.imm)
    } else {
        String::new()
    };
    let w = match op {
        Op::GlobalLoadU8
        | Op::GlobalLoadI8
        | Op::GlobalLoadU16
        | Op::GlobalLoadI16
        | Op::GlobalStoreB8
        | Op::GlobalStoreB16
        | Op::GlobalLoadD16B16
        | Op::GlobalLoadD16HiB16
        | Op::GlobalStoreD16HiB16 => 1,
        _ => op.dst_dwords(),
    };
    if op.is_store() {
        format!(
            "{addr}, {}, {saddr}{off}{}",
            i.src[1].text(w),
            cache(i.cache)
        )
    } else {
        format!(
            "{}, {addr}, {saddr}{off}{}",
            vreg_name(i.dst, w),
            cache(i.cache)
        )
    }
}

fn cache(bits: u8) -> String {
    let mut s = String::new();
    for (b, n) in [(1, " glc"), (2, " slc"), (4, " dlc")] {
        if bits & b != 0 {
            s += n;
        }
    }
    s
}

fn sopp(i: &Inst) -> String {
    let imm = i.imm as u16;
    match i.op {
        Op::SEndpgm | Op::SCodeEnd | Op::SBarrier => String::new(),
        Op::SNop => format!("{imm}"),
        op if super::program::is_branch(op) => format!("{imm}"),
        Op::SWaitcnt => waitcnt(imm),
        Op::SDelayAlu => delay_alu(imm),
        Op::SSendmsg if imm == 3 => "sendmsg(MSG_DEALLOC_VGPRS)".into(),
        Op::SSendmsg => format!("sendmsg({imm})"),
        _ => format!("{imm:#x}"),
    }
}

/// gfx11 `s_waitcnt` fields: vmcnt [15:10], lgkmcnt [9:4], expcnt [2:0]; LLVM omits counters
/// at their maximum.
fn waitcnt(imm: u16) -> String {
    let vm = imm >> 10 & 0x3f;
    let lgkm = imm >> 4 & 0x3f;
    let exp = imm & 7;
    let mut parts = Vec::new();
    if vm != 0x3f {
        parts.push(format!("vmcnt({vm})"));
    }
    if exp != 7 {
        parts.push(format!("expcnt({exp})"));
    }
    if lgkm != 0x3f {
        parts.push(format!("lgkmcnt({lgkm})"));
    }
    if parts.is_empty() {
        parts = vec![
            format!("vmcnt({vm})"),
            format!("expcnt({exp})"),
            format!("lgkmcnt({lgkm})"),
        ];
    }
    parts.join(" ")
}

/// `s_delay_alu` fields: instid0 [3:0], instskip [6:4], instid1 [10:7].
fn delay_alu(imm: u16) -> String {
    const ID: [&str; 12] = [
        "NO_DEP",
        "VALU_DEP_1",
        "VALU_DEP_2",
        "VALU_DEP_3",
        "VALU_DEP_4",
        "TRANS32_DEP_1",
        "TRANS32_DEP_2",
        "TRANS32_DEP_3",
        "FMA_ACCUM_CYCLE_1",
        "SALU_CYCLE_1",
        "SALU_CYCLE_2",
        "SALU_CYCLE_3",
    ];
    const SKIP: [&str; 6] = ["SAME", "NEXT", "SKIP_1", "SKIP_2", "SKIP_3", "SKIP_4"];
    let id0 = usize::from(imm & 0xf);
    let skip = usize::from(imm >> 4 & 7);
    let id1 = usize::from(imm >> 7 & 0xf);
    let mut parts = Vec::new();
    if id0 != 0 {
        parts.push(format!("instid0({})", ID.get(id0).unwrap_or(&"?")));
    }
    if skip != 0 {
        parts.push(format!("instskip({})", SKIP.get(skip).unwrap_or(&"?")));
    }
    if id1 != 0 {
        parts.push(format!("instid1({})", ID.get(id1).unwrap_or(&"?")));
    }
    parts.join(" | ")
}
