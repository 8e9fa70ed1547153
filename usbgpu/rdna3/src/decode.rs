//! Decoding raw gfx1100 instruction dwords into a typed [`Inst`] (docs/hw/rdna3-isa.md §2: the
//! encoding is chosen by the top bits of the first dword).
//!
//! Anything this interpreter does not execute — an unknown opcode, DPP/SDWA operands, output
//! modifiers, op_sel outside the mixed-precision FMA and packed f16 math — is a [`DecodeError`],
//! never a silent no-op.
use super::operand::{source, Src, LITERAL, NULL};
use super::ops::{lookup, vopd_op, Enc, Op, Ty, VOP3_FROM_VOP1, VOP3_FROM_VOP2, VOP3_FROM_VOPC};

/// Why an instruction was refused, and how many dwords it was seen to have (≥ 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecodeError {
    pub what: &'static str,
    pub dwords: usize,
}

/// The second half of a VOPD dual instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Half {
    pub op: Op,
    pub vdst: u8,
    pub src: [Src; 3],
}

/// One decoded instruction. Field use depends on the encoding (see [`decode`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Inst {
    pub op: Op,
    pub enc: Enc,
    /// A VOP1/VOP2/VOPC operation in the VOP3 encoding (LLVM's `_e64`).
    pub e64: bool,
    /// Length in dwords, literal included.
    pub len: u8,
    /// Destination: VGPR for VALU/loads, scalar-file index for SALU, SMEM, `v_readlane` and VOPC-as-VOP3.
    pub dst: u8,
    /// VOP3SD carry-out scalar-file index.
    pub sdst: u8,
    /// Sources; memory operations: GLOBAL `[addr, data, saddr]`, DS `[addr, data0, data1]`,
    /// SMEM `[sbase, soffset]`.
    pub src: [Src; 3],
    /// VOP3/VOP3P per-source negate and absolute-value bits, op_sel/op_sel_hi, clamp.
    pub neg: u8,
    pub abs: u8,
    /// Packed f16 ops: which half of source k the low lane reads (bit k); `op_sel_hi` the high lane's.
    pub op_sel: u8,
    pub op_sel_hi: u8,
    pub clamp: bool,
    /// SOPP/SOPK simm16 (sign-extended), SMEM/GLOBAL/DS offset.
    pub imm: i32,
    /// DS offset1.
    pub imm1: u8,
    /// Memory cache-policy bits as LLVM prints them: bit 0 glc, bit 1 slc, bit 2 dlc.
    pub cache: u8,
    /// VOPD second half.
    pub y: Option<Half>,
}

const NO_SRC: Src = Src::S(NULL);

fn err(what: &'static str, dwords: usize) -> DecodeError {
    DecodeError { what, dwords }
}

fn bits(w: u32, lo: u32, n: u32) -> u32 {
    (w >> lo) & ((1u32 << n) - 1)
}

fn blank(op: Op, enc: Enc, len: u8) -> Inst {
    Inst {
        op,
        enc,
        e64: false,
        len,
        dst: 0,
        sdst: NULL,
        src: [NO_SRC; 3],
        neg: 0,
        abs: 0,
        op_sel: 0,
        op_sel_hi: 0,
        clamp: false,
        imm: 0,
        imm1: 0,
        cache: 0,
        y: None,
    }
}

/// Decode the instruction at the start of `words` (give at least 3 dwords when available).
pub fn decode(words: &[u32]) -> Result<Inst, DecodeError> {
    let w = *words.first().ok_or(err("no instruction dword", 1))?;
    let enc = match w {
        _ if w >> 23 == 0x17f => Enc::Sopp,
        _ if w >> 23 == 0x17e => Enc::Sopc,
        _ if w >> 23 == 0x17d => Enc::Sop1,
        _ if w >> 28 == 0xb => Enc::Sopk,
        _ if w >> 30 == 2 => Enc::Sop2,
        _ if w >> 26 == 0x3d => Enc::Smem,
        _ if w >> 25 == 0x3f => Enc::Vop1,
        _ if w >> 25 == 0x3e => Enc::Vopc,
        _ if w >> 31 == 0 => Enc::Vop2,
        _ if w >> 26 == 0x35 => Enc::Vop3,
        _ if w >> 24 == 0xcc => Enc::Vop3p,
        _ if w >> 26 == 0x32 => Enc::Vopd,
        _ if w >> 26 == 0x36 => Enc::Ds,
        _ if w >> 26 == 0x37 => Enc::Global,
        _ => return Err(err("unsupported encoding", 1)),
    };
    match enc {
        Enc::Sop1 | Enc::Sop2 | Enc::Sopc | Enc::Sopk | Enc::Sopp => scalar(enc, words),
        Enc::Smem => smem(words),
        Enc::Vop1 | Enc::Vop2 | Enc::Vopc => vop_short(enc, words),
        Enc::Vop3 => vop3(words),
        Enc::Vop3p => vop3p(words),
        Enc::Vopd => vopd(words),
        Enc::Ds => ds(words),
        Enc::Global | Enc::Scratch => global(words),
    }
}

fn word(words: &[u32], i: usize) -> Result<u32, DecodeError> {
    words
        .get(i)
        .copied()
        .ok_or(err("instruction runs past the end of the code", i))
}

/// Decode a source field; a literal takes the dword at `lit_at`.
fn src(words: &[u32], code: u32, ty: Ty, lit_at: usize, len: &mut u8) -> Result<Src, DecodeError> {
    let code = code as u16;
    let lit = if code == LITERAL {
        *len = (lit_at + 1) as u8;
        Some(word(words, lit_at)?)
    } else {
        None
    };
    source(code, ty, lit).map_err(|what| err(what, usize::from(*len)))
}

fn scalar(enc: Enc, words: &[u32]) -> Result<Inst, DecodeError> {
    let w = words[0];
    let opcode = match enc {
        Enc::Sop1 => bits(w, 8, 8),
        Enc::Sop2 => bits(w, 23, 7),
        Enc::Sopk => bits(w, 23, 5),
        _ => bits(w, 16, 7),
    } as u16;
    let op = lookup(enc, opcode).ok_or(err("unknown scalar opcode", 1))?;
    let mut i = blank(op, enc, 1);
    let mut len = 1u8;
    match enc {
        Enc::Sop1 => {
            i.dst = bits(w, 16, 7) as u8;
            i.src[0] = src(words, bits(w, 0, 8), op.src_ty(0), 1, &mut len)?;
        }
        Enc::Sop2 => {
            i.dst = bits(w, 16, 7) as u8;
            i.src[0] = src(words, bits(w, 0, 8), op.src_ty(0), 1, &mut len)?;
            i.src[1] = src(words, bits(w, 8, 8), op.src_ty(1), 1, &mut len)?;
        }
        Enc::Sopc => {
            i.src[0] = src(words, bits(w, 0, 8), op.src_ty(0), 1, &mut len)?;
            i.src[1] = src(words, bits(w, 8, 8), op.src_ty(1), 1, &mut len)?;
        }
        Enc::Sopk => {
            i.dst = bits(w, 16, 7) as u8;
            i.imm = i32::from(w as u16 as i16);
        }
        _ => i.imm = i32::from(w as u16 as i16),
    }
    i.len = len;
    Ok(i)
}

fn smem(words: &[u32]) -> Result<Inst, DecodeError> {
    let w = words[0];
    let w1 = word(words, 1)?;
    let op = lookup(Enc::Smem, bits(w, 18, 8) as u16).ok_or(err("unknown SMEM opcode", 2))?;
    let mut i = blank(op, Enc::Smem, 2);
    i.dst = bits(w, 6, 7) as u8;
    i.src[0] = Src::S((bits(w, 0, 6) * 2) as u8);
    i.src[1] = Src::S(bits(w1, 25, 7) as u8);
    i.cache = (bits(w, 14, 1) | bits(w, 13, 1) << 2) as u8;
    // 21-bit signed byte offset.
    i.imm = ((bits(w1, 0, 21) << 11) as i32) >> 11;
    Ok(i)
}

fn vop_short(enc: Enc, words: &[u32]) -> Result<Inst, DecodeError> {
    let w = words[0];
    let opcode = match enc {
        Enc::Vop1 => bits(w, 9, 8),
        Enc::Vopc => bits(w, 17, 8),
        _ => bits(w, 25, 6),
    } as u16;
    if enc == Enc::Vop1 && opcode == 0 {
        return Ok(blank(Op::VNop, enc, 1));
    }
    let op = lookup(enc, opcode).ok_or(err("unknown VOP1/VOP2/VOPC opcode", 1))?;
    let mut i = blank(op, enc, 1);
    let mut len = 1u8;
    i.src[0] = src(words, bits(w, 0, 9), op.src_ty(0), 1, &mut len)?;
    if enc != Enc::Vop1 {
        i.src[1] = Src::V(bits(w, 9, 8) as u8);
    }
    if enc != Enc::Vopc {
        i.dst = bits(w, 17, 8) as u8;
    }
    if op.has_k() {
        // The constant K is always a trailing literal (docs/hw/rdna3-isa.md §2).
        len = 2;
        i.src[2] = Src::Const {
            val: u64::from(word(words, 1)?),
            code: LITERAL,
        };
    }
    if enc == Enc::Vop1 && op == Op::VReadfirstlaneB32 {
        i.dst = bits(w, 17, 8) as u8; // an SGPR index in this one VOP1 op
    }
    i.len = len;
    Ok(i)
}

fn vop3(words: &[u32]) -> Result<Inst, DecodeError> {
    let w = words[0];
    let w1 = word(words, 1)?;
    let opcode = bits(w, 16, 10) as u16;
    let (op, e64) = if let Some(op) = lookup(Enc::Vop3, opcode) {
        (op, false)
    } else if opcode >= VOP3_FROM_VOP1 {
        let op = lookup(Enc::Vop1, opcode - VOP3_FROM_VOP1);
        (op.ok_or(err("unknown VOP3 opcode", 2))?, true)
    } else if opcode >= VOP3_FROM_VOP2 {
        let op = lookup(Enc::Vop2, opcode - VOP3_FROM_VOP2);
        (op.ok_or(err("unknown VOP3 opcode", 2))?, true)
    } else {
        let op = lookup(Enc::Vopc, opcode - VOP3_FROM_VOPC);
        (op.ok_or(err("unknown VOP3 opcode", 2))?, true)
    };
    if op.has_k() {
        return Err(err("v_fmamk/v_fmaak have no VOP3 form", 2));
    }
    let mut i = blank(op, Enc::Vop3, 2);
    i.e64 = e64;
    let sd = is_vop3sd(op);
    let mut len = 2u8;
    for k in 0..3 {
        i.src[k] = src(words, bits(w1, 9 * k as u32, 9), op.src_ty(k), 2, &mut len)?;
    }
    i.dst = bits(w, 0, 8) as u8;
    i.clamp = bits(w, 15, 1) == 1;
    i.neg = bits(w1, 29, 3) as u8;
    if sd {
        i.sdst = bits(w, 8, 7) as u8;
    } else {
        i.abs = bits(w, 8, 3) as u8;
        if bits(w, 11, 4) != 0 {
            return Err(err("VOP3 op_sel is not supported", usize::from(len)));
        }
    }
    if bits(w1, 27, 2) != 0 {
        return Err(err(
            "VOP3 output modifier (omod) is not supported",
            usize::from(len),
        ));
    }
    // Unused source fields: LLVM encodes them as inline 0; clear so printing and execution ignore them.
    let used = vop3_sources(op);
    for s in i.src.iter_mut().skip(used) {
        *s = NO_SRC;
    }
    i.len = len;
    Ok(i)
}

/// VOP3SD: the VOP3 layout with a scalar carry/condition destination instead of ABS/OP_SEL.
pub fn is_vop3sd(op: Op) -> bool {
    use Op::*;
    matches!(
        op,
        VAddCoCiU32
            | VSubCoCiU32
            | VSubrevCoCiU32
            | VAddCoU32
            | VSubCoU32
            | VSubrevCoU32
            | VMadU64U32
            | VMadI64I32
    )
}

/// Number of sources a VALU operation reads in the VOP3 form (VOPC: 2, VOP1: 1, VOP2: 2 plus
/// the carry/mask third source of `v_cndmask`/`v_add_co_ci`).
pub fn vop3_sources(op: Op) -> usize {
    use Op::*;
    match op {
        VCndmaskB32 | VAddCoCiU32 | VSubCoCiU32 | VSubrevCoCiU32 => 3,
        _ if super::ops::TABLE
            .iter()
            .any(|&(e, _, o)| o == op && e == Enc::Vop1) =>
        {
            1
        }
        _ if super::ops::TABLE
            .iter()
            .any(|&(e, _, o)| o == op && matches!(e, Enc::Vop2 | Enc::Vopc)) =>
        {
            2
        }
        VAddCoU32 | VSubCoU32 | VSubrevCoU32 | VLshlrevB64 | VLshrrevB64 | VAshrrevI64
        | VLdexpF32 | VBfmB32 | VBcntU32B32 | VMulLoU32 | VMulHiU32 | VMulHiI32 | VReadlaneB32
        | VWritelaneB32 | VAddNcU16 | VLshlrevB16 | VLshrrevB16 | VSubNcU16 | VMulLoU16
        | VMaxU16 | VMaxI16 | VMinU16 | VMinI16 | VPackB32F16 => 2,
        _ if op.is_packed16() => 2,
        _ => 3,
    }
}

fn vop3p(words: &[u32]) -> Result<Inst, DecodeError> {
    let w = words[0];
    let w1 = word(words, 1)?;
    let op = lookup(Enc::Vop3p, bits(w, 16, 7) as u16).ok_or(err("unknown VOP3P opcode", 2))?;
    let mut i = blank(op, Enc::Vop3p, 2);
    let mut len = 2u8;
    let op_sel = bits(w, 11, 3);
    let op_sel_hi = bits(w1, 27, 2) | bits(w, 14, 1) << 2;
    if op.is_packed16() {
        // Packed 16-bit integer ops: the low halves make the low result, the high halves the high
        // one — op_sel = 0 and op_sel_hi = all ones (LLVM's default, not printed) is the only form.
        if op_sel != 0 || op_sel_hi != 0b111 {
            return Err(err(
                "VOP3P op_sel/op_sel_hi on a packed operation is not supported",
                2,
            ));
        }
        for k in 0..2 {
            i.src[k] = src(words, bits(w1, 9 * k as u32, 9), Ty::B32, 2, &mut len)?;
            if !matches!(i.src[k], Src::V(_) | Src::S(_)) {
                return Err(err(
                    "a constant on a packed 16-bit operand is not supported",
                    usize::from(len),
                ));
            }
        }
        i.dst = bits(w, 0, 8) as u8;
        i.clamp = bits(w, 15, 1) == 1;
        i.neg = bits(w1, 29, 3) as u8;
        i.abs = bits(w, 8, 3) as u8;
        i.len = len;
        return Ok(i);
    }
    if op.is_packed_f16() {
        // Packed f16: the low lane reads half op_sel[k] of source k, the high lane half op_sel_hi[k];
        // NEG (dword 1) negates the low lane's inputs, NEG_HI (bits 10–8) the high lane's.
        let n = if op == Op::VPkFmaF16 { 3 } else { 2 };
        if n == 2 && (op_sel >> 2 & 1 != 0 || op_sel_hi >> 2 & 1 != 1) {
            return Err(err("VOP3P op_sel on an unused source", 2));
        }
        for k in 0..n {
            i.src[k] = src(words, bits(w1, 9 * k as u32, 9), Ty::F16, 2, &mut len)?;
            let high = (op_sel | op_sel_hi) >> k & 1 == 1;
            if high && matches!(i.src[k], Src::Const { .. }) {
                return Err(err(
                    "the high half of a constant on a packed f16 operand is not supported",
                    usize::from(len),
                ));
            }
        }
        i.dst = bits(w, 0, 8) as u8;
        i.clamp = bits(w, 15, 1) == 1;
        i.neg = bits(w1, 29, 3) as u8;
        i.abs = bits(w, 8, 3) as u8; // NEG_HI
        i.op_sel = op_sel as u8;
        i.op_sel_hi = op_sel_hi as u8;
        i.len = len;
        return Ok(i);
    }
    for k in 0..3 {
        // v_fma_mix*: op_sel_hi[k] = 1 makes source k an f16 (op_sel[k] picks its half).
        let ty = if op_sel_hi >> k & 1 == 1 {
            Ty::F16
        } else {
            Ty::F32
        };
        i.src[k] = src(words, bits(w1, 9 * k as u32, 9), ty, 2, &mut len)?;
    }
    if op_sel != 0 {
        return Err(err("VOP3P op_sel is not supported", usize::from(len)));
    }
    i.dst = bits(w, 0, 8) as u8;
    i.clamp = bits(w, 15, 1) == 1;
    i.neg = bits(w1, 29, 3) as u8;
    // For the mix ops, NEG_HI is the absolute-value modifier (docs/hw/rdna3-isa.md §7).
    i.abs = bits(w, 8, 3) as u8;
    i.op_sel_hi = op_sel_hi as u8;
    i.len = len;
    Ok(i)
}

fn vopd(words: &[u32]) -> Result<Inst, DecodeError> {
    let w = words[0];
    let w1 = word(words, 1)?;
    let opx = vopd_op(bits(w, 22, 4) as u8).ok_or(err("unknown VOPD X opcode", 2))?;
    let opy = vopd_op(bits(w, 17, 5) as u8).ok_or(err("unknown VOPD Y opcode", 2))?;
    if matches!(opx, Op::VAddNcU32 | Op::VLshlrevB32 | Op::VAndB32) {
        return Err(err("VOPD Y-only opcode in the X slot", 2));
    }
    let mut len = 2u8;
    let mut i = blank(opx, Enc::Vopd, 2);
    i.src[0] = src(words, bits(w, 0, 9), opx.src_ty(0), 2, &mut len)?;
    i.src[1] = Src::V(bits(w, 9, 8) as u8);
    i.dst = bits(w1, 24, 8) as u8;
    let mut y = Half {
        op: opy,
        vdst: ((bits(w1, 17, 7) << 1) | ((u32::from(i.dst) & 1) ^ 1)) as u8,
        src: [NO_SRC; 3],
    };
    y.src[0] = src(words, bits(w1, 0, 9), opy.src_ty(0), 2, &mut len)?;
    y.src[1] = Src::V(bits(w1, 9, 8) as u8);
    let lit = if len == 3 { word(words, 2)? } else { 0 };
    for (op, s) in [(opx, &mut i.src), (opy, &mut y.src)] {
        if matches!(op, Op::VFmamkF32 | Op::VFmaakF32) {
            len = 3;
            s[2] = Src::Const {
                val: u64::from(word(words, 2).unwrap_or(lit)),
                code: LITERAL,
            };
        }
    }
    i.len = len;
    i.y = Some(y);
    Ok(i)
}

fn ds(words: &[u32]) -> Result<Inst, DecodeError> {
    let w = words[0];
    let w1 = word(words, 1)?;
    let op = lookup(Enc::Ds, bits(w, 18, 8) as u16).ok_or(err("unknown DS opcode", 2))?;
    if bits(w, 17, 1) == 1 {
        return Err(err("GDS is not supported", 2));
    }
    let mut i = blank(op, Enc::Ds, 2);
    i.imm = bits(w, 0, 8) as i32;
    i.imm1 = bits(w, 8, 8) as u8;
    i.src[0] = Src::V(bits(w1, 0, 8) as u8);
    i.src[1] = Src::V(bits(w1, 8, 8) as u8);
    i.src[2] = Src::V(bits(w1, 16, 8) as u8);
    i.dst = bits(w1, 24, 8) as u8;
    Ok(i)
}

fn global(words: &[u32]) -> Result<Inst, DecodeError> {
    let w = words[0];
    let w1 = word(words, 1)?;
    // Segment 2 = GLOBAL; 1 = SCRATCH, the same operations on private memory with a 32-bit
    // address (VGPR only when SVE, dword 1 bit 23, is set).
    let enc = match bits(w, 16, 2) {
        2 => Enc::Global,
        1 => Enc::Scratch,
        _ => {
            return Err(err(
                "FLAT segment is not supported (GLOBAL and SCRATCH only)",
                2,
            ))
        }
    };
    let op = lookup(Enc::Global, bits(w, 18, 7) as u16)
        .ok_or(err("unknown GLOBAL/SCRATCH opcode", 2))?;
    let mut i = blank(op, enc, 2);
    i.imm = ((bits(w, 0, 13) << 19) as i32) >> 19;
    i.cache = (bits(w, 14, 1) | bits(w, 15, 1) << 1 | bits(w, 13, 1) << 2) as u8;
    let saddr = bits(w1, 16, 7) as u8;
    let addr = Src::V(bits(w1, 0, 8) as u8);
    i.src[0] = if enc == Enc::Scratch && bits(w1, 23, 1) == 0 {
        NO_SRC
    } else {
        addr
    };
    i.src[1] = Src::V(bits(w1, 8, 8) as u8);
    i.src[2] = Src::S(if saddr == 0x7f { NULL } else { saddr });
    i.dst = bits(w1, 24, 8) as u8;
    Ok(i)
}
