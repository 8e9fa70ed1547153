//! The typed form of one decoded a6xx IR3 instruction (docs/hw/adreno-kgsl-pm4.md §16): operands, the
//! per-category operation enums and the scheduling flags. Produced by [`crate::decode`], printed in Mesa's
//! syntax by `disasm`, executed by [`crate::exec`]; it depends on none of them.

/// Register number as the ISA encodes it: `4·n + component` (r0.x = 0, r0.y = 1, …, r63.w = 255).
pub type RegNum = u16;

/// Element types of cat1 moves/conversions and cat5/cat6 memory accesses (Mesa's `#type` enum).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    F16,
    F32,
    U16,
    U32,
    S16,
    S32,
    U8,
    /// cat1: s8 (Mesa prints `u8_32` in memory types, `s8` does not occur in a6xx kernels we run).
    U8x32,
}

impl Ty {
    pub fn from_bits(b: u64) -> Ty {
        match b & 7 {
            0 => Ty::F16,
            1 => Ty::F32,
            2 => Ty::U16,
            3 => Ty::U32,
            4 => Ty::S16,
            5 => Ty::S32,
            6 => Ty::U8,
            _ => Ty::U8x32,
        }
    }
    /// Whether values of this type live in half registers.
    pub fn is_half(self) -> bool {
        matches!(self, Ty::F16 | Ty::U16 | Ty::S16 | Ty::U8)
    }
    /// Whether a cat1 operand of this type is a half register (cat1 also counts type 7, its s8).
    pub fn is_half_cat1(self) -> bool {
        self.is_half() || self == Ty::U8x32
    }
    /// Whether an executed global/local/private load or store of this type moves half registers: the
    /// [`Ty::is_half`] types and also `u8_32`, which Mesa prints with full registers but Qualcomm's compiler
    /// uses with half ones (docs/hw/adreno-kgsl-pm4.md §16.11).
    pub fn is_half_mem(self) -> bool {
        self.is_half() || self == Ty::U8x32
    }
    pub fn name(self) -> &'static str {
        match self {
            Ty::F16 => "f16",
            Ty::F32 => "f32",
            Ty::U16 => "u16",
            Ty::U32 => "u32",
            Ty::S16 => "s16",
            Ty::S32 => "s32",
            Ty::U8 => "u8",
            Ty::U8x32 => "u8_32",
        }
    }
    /// Bytes of one element in memory.
    pub fn bytes(self) -> u32 {
        match self {
            Ty::F32 | Ty::U32 | Ty::S32 => 4,
            Ty::F16 | Ty::U16 | Ty::S16 => 2,
            Ty::U8 | Ty::U8x32 => 1,
        }
    }
}

/// Source modifiers of cat2/cat3/cat4 sources: float abs/neg for float opcodes, integer abs/neg for signed
/// integer opcodes, bitwise not (`neg`) for bitwise opcodes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Mods {
    pub abs: bool,
    pub neg: bool,
}

/// One ALU source operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Src {
    /// A register (full or half by `half`); `r` = advances with `(rptN)`; `last` = last-use hint (display only).
    Reg {
        num: RegNum,
        half: bool,
        r: bool,
        last: bool,
    },
    /// A constant-file component `c[num/4].xyzw[num%4]`.
    Const { num: u16, half: bool, r: bool },
    /// `r<a0.x + off>`.
    RelReg { off: i16, half: bool, r: bool },
    /// `c<a0.x + off>`.
    RelConst { off: i16, half: bool, r: bool },
    /// Integer immediate (sign-extended as encoded); `half` only affects printing (`h(…)`).
    Imm { val: i32, half: bool, r: bool },
    /// Index into the float lookup table (0.0, 0.5, 1.0, 2.0, e, π, 1/π, 1/log2(e), log2(e), 1/log2(10),
    /// log2(10), 4.0).
    Flut { idx: u8, half: bool, r: bool },
}

impl Src {
    /// Whether the source advances with `(rptN)`.
    pub fn repeats(&self) -> bool {
        match *self {
            Src::Reg { r, .. }
            | Src::Const { r, .. }
            | Src::RelReg { r, .. }
            | Src::RelConst { r, .. }
            | Src::Imm { r, .. }
            | Src::Flut { r, .. } => r,
        }
    }
}

/// An ALU destination.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dst {
    Reg {
        num: RegNum,
        half: bool,
    },
    /// `p0.{comp}` (cat2 dst encoded as GPR 62).
    Pred(u8),
    /// `a0.x` (mova) or `a1.x` (mova1).
    Addr(u8),
    /// `r<a0.x + off>` (cat1 only).
    Rel {
        off: u8,
        half: bool,
    },
}

/// Comparison conditions of `cmps`/`cmpv` (`#cond`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cond {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

impl Cond {
    pub fn name(self) -> &'static str {
        match self {
            Cond::Lt => "lt",
            Cond::Le => "le",
            Cond::Gt => "gt",
            Cond::Ge => "ge",
            Cond::Eq => "eq",
            Cond::Ne => "ne",
        }
    }
}

/// The indirect texture/sampler source of an `isam.s2en` (Mesa `ir3-cat5.xml`: SRC3 bits 21–28, DESC_MODE 29–31).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct S2en {
    /// Half register holding the sampler index; the texture index is in the next half register.
    pub reg: RegNum,
    pub nonuniform: bool,
}

/// cat2 operations (bits 53–58).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op2 {
    AddF,
    MinF,
    MaxF,
    MulF,
    SignF,
    CmpsF(Cond),
    AbsnegF,
    CmpvF(Cond),
    FloorF,
    CeilF,
    RndneF,
    RndazF,
    TruncF,
    AddU,
    AddS,
    SubU,
    SubS,
    CmpsU(Cond),
    CmpsS(Cond),
    MinU,
    MinS,
    MaxU,
    MaxS,
    AbsnegS,
    AndB,
    OrB,
    NotB,
    XorB,
    CmpvU(Cond),
    CmpvS(Cond),
    MulU24,
    MulS24,
    MullU,
    BfrevB,
    ClzS,
    ClzB,
    ShlB,
    ShrB,
    AshrB,
    MgenB,
    GetbitB,
    CbitsB,
}

impl Op2 {
    /// Whether the operation takes two sources (the others have no second `#multisrc`).
    pub fn two_srcs(self) -> bool {
        use Op2::*;
        !matches!(
            self,
            SignF
                | AbsnegF
                | FloorF
                | CeilF
                | RndneF
                | RndazF
                | TruncF
                | AbsnegS
                | NotB
                | BfrevB
                | ClzS
                | ClzB
                | CbitsB
        )
    }
}

/// cat3 operations (bits 55–58, bit 13 selects the "alt" shift group).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op3 {
    MadU16,
    MadshU16,
    MadS16,
    MadshM16,
    MadU24,
    MadS24,
    MadF16,
    MadF32,
    SelB16,
    SelB32,
    SelS16,
    SelS32,
    SelF16,
    SelF32,
    SadS16,
    SadS32,
    Shrm,
    Shlm,
    Shrg,
    Shlg,
    Andg,
}

/// cat4 (SFU) operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op4 {
    Rcp,
    Rsq,
    Log2,
    Exp2,
    Sin,
    Cos,
    Sqrt,
    Hrsq,
    Hlog2,
    Hexp2,
}

/// Branch kinds of cat0 `br*` (BRTYPE).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BrKind {
    /// `br`: per fiber on one predicate.
    Br,
    /// `brao`: either of two predicates.
    Or,
    /// `braa`: both predicates.
    And,
    /// `bany`: any fiber of the wave.
    Any,
    /// `ball`: all fibers of the wave.
    All,
}

/// A predicate operand `{!}p0.{comp}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PredSrc {
    pub inv: bool,
    pub comp: u8,
}

/// Memory address space of cat6 plain loads/stores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Space {
    /// `g[…]`: a 64-bit address in a register pair.
    Global,
    /// `l[…]`: the work group's shared memory.
    Local,
    /// `p[…]`: per-fiber private memory.
    Private,
}

/// The operation of one instruction.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Op {
    Nop,
    End,
    Ret,
    PredT,
    PredF,
    PredE,
    /// `jump #off` (relative in instructions).
    Jump(i32),
    Br {
        kind: BrKind,
        p1: PredSrc,
        p2: PredSrc,
        off: i32,
    },
    Kill(PredSrc),
    /// cat1 `mov`/`cov`/`mova`.
    Mov {
        src_ty: Ty,
        dst_ty: Ty,
        dst: Dst,
        src: Src,
    },
    /// cat1 `swz`: dst0 ← src0, dst1 ← src1 in parallel.
    Swz {
        src_ty: Ty,
        dst_ty: Ty,
        dst: [RegNum; 2],
        src: [RegNum; 2],
    },
    /// cat1 `gat`: dst+i ← src i.
    Gat {
        src_ty: Ty,
        dst_ty: Ty,
        dst: RegNum,
        src: [RegNum; 4],
    },
    /// cat1 `sct`: dst i ← src+i.
    Sct {
        src_ty: Ty,
        dst_ty: Ty,
        dst: [RegNum; 4],
        src: RegNum,
    },
    Alu2 {
        op: Op2,
        dst: Dst,
        src: [Src; 2],
        mods: [Mods; 2],
        full: bool,
    },
    /// `src_neg` are the three (neg) flags.
    Alu3 {
        op: Op3,
        dst: Dst,
        src: [Src; 3],
        neg: [bool; 3],
        full: bool,
    },
    Sfu {
        op: Op4,
        dst: Dst,
        src: Src,
        mods: Mods,
        full: bool,
    },
    /// `isam`: integer-coordinate texel fetch from texture `tex` (sampler `samp`), coordinates in `coord`,
    /// `coord+1`; writes the components of `wrmask` to consecutive registers from `dst`.
    Isam {
        ty: Ty,
        wrmask: u8,
        dst: RegNum,
        coord: RegNum,
        coord_half: bool,
        samp: u8,
        tex: u8,
        inv_1d: bool,
        /// `.s2en` (non-bindless indirect): per fiber, the sampler index is this half register and the texture index
        /// the next one (`samp`/`tex` are then 0); `nonuniform` is DESC_MODE 4 rather than 0.
        s2en: Option<S2en>,
    },
    /// `ldg`/`ldl`/`ldp`: `size` consecutive elements at `addr + off` (global: `addr` is the low half of a
    /// register pair; global offsets count bytes — see `exec::cat6`).
    Load {
        space: Space,
        ty: Ty,
        dst: RegNum,
        addr: RegNum,
        off: i32,
        size: u8,
    },
    /// `stg`/`stl`/`stp`.
    Store {
        space: Space,
        ty: Ty,
        addr: RegNum,
        off: i32,
        src: RegNum,
        size: u8,
    },
    /// `stib.b.typed.{d}d.{ty}.{comps}.imm`: store `comps` components from `src` at the `d`-dim coordinates
    /// in `coord` of UAV `slot`.
    Stib {
        ty: Ty,
        d: u8,
        comps: u8,
        src: RegNum,
        coord: RegNum,
        slot: u8,
    },
    /// An instruction from Qualcomm's compiler executed beyond Mesa's subset (§16.9); printed from its raw word.
    Ext(Ext),
    /// `bar` / `fence` with their `.g .l .r .w` bits.
    Bar {
        fence: bool,
        g: bool,
        l: bool,
        r: bool,
        w: bool,
    },
}

/// A blob-compiler instruction the interpreter executes (docs/hw/adreno-kgsl-pm4.md §16.9): the raw word (for
/// printing) and its operation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ext {
    pub raw: u64,
    pub kind: ExtKind,
}

/// Operations of [`Ext`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ExtKind {
    /// `ldg.a`/`stg.a` (global; the address adds `index << shift`, zero-extended to 64 bits, to `m.off`) and
    /// `ldlw`/`stlw` (local, `index` None): otherwise a plain access.
    Mem {
        m: Access,
        index: Option<(RegNum, u8)>,
    },
    /// `ldib.b.typed.2d.TY.4.imm`: the RGBA texel at the 2-D coordinates in `coord`, `coord+1` of UAV `slot` into
    /// four registers from `dst` (half registers for f16); outside the image it reads zeros.
    Ldib {
        ty: Ty,
        dst: RegNum,
        coord: RegNum,
        slot: u8,
    },
    /// `dp4acc` (`four`) / `dp2acc`: dst ← Σ src1.byte[k] · src2.byte[k] + (neg3 ? −src3 : src3) over bytes 0–3
    /// (dp2acc: bytes 0–1, or 2–3 when `high`); src1 bytes signed when `mixed`, src2 bytes unsigned; `sat`
    /// clamps to the 32-bit range (signed when `mixed`), else the sum wraps.
    Dot {
        four: bool,
        mixed: bool,
        high: bool,
        sat: bool,
        neg3: bool,
        dst: RegNum,
        src: [RegNum; 3],
    },
    /// `atomic.OP…l dst, l[addr], src` on 32-bit words of shared memory: dst ← old, l[addr] ← OP(old, src).
    AtomicLocal {
        op: AtomicOp,
        signed: bool,
        dst: RegNum,
        addr: RegNum,
        src: RegNum,
    },
    /// Wave-level instructions (`getfiberid`, `movmsk`, `getone`, `getlast`, `shfl`, `quad_shuffle`), executed
    /// over the fibers of one wave (docs/hw/adreno-kgsl-pm4.md §16.10).
    Wave(WaveOp),
    /// `atomic.{inc,dec,cmpxchg}…l` on shared memory and every `atomic.g.OP` on a global address pair: dst ←
    /// old, memory ← OP(old, src); `cmpxchg` takes the pair (src = new value, src+1 = compare value).
    Atomic {
        op: RmwOp,
        signed: bool,
        global: bool,
        dst: RegNum,
        addr: RegNum,
        src: RegNum,
    },
    /// `resinfo.b.*.imm dst, slot`: width, height and depth (1) of UAV `slot` into dst … dst+2.
    Resinfo { dst: RegNum, slot: u8 },
    /// `ldib.b.typed.1d.TY.4.imm dst, coord, slot`: the RGBA texel (x, 0) of UAV `slot` (zeros outside).
    Ldib1d {
        ty: Ty,
        dst: RegNum,
        coord: RegNum,
        slot: u8,
    },
    /// `sam (TY)(MASK)dst, coord, s#S, t#T` (2-D, no flags): the texture sampled at the float coordinates in
    /// `coord`, `coord+1` as sampler S says (docs/hw/adreno-kgsl-pm4.md §16.10).
    Sam(SamArgs),
    /// `ldc[.u].offsetK.N.MODE[.baseB] dst, off, slot`: dst+i ← dword 4·off + K + i of UBO `slot`,
    /// i < N; `off` counts vec4s (docs/hw/adreno-kgsl-pm4.md §16.12).
    Ldc {
        dst: RegNum,
        off: Opnd,
        slot: Desc,
        comp: u8,
        n: u8,
    },
    /// `ldc.N.k.MODE[.baseB] c[a1.x], off, slot`: N vec4s of UBO `slot` from vec4 `off` into the
    /// constant file from dword a1.x.
    LdcK { off: Opnd, slot: Desc, vec4s: u16 },
    /// `ldg.k.TY c[dst], g[addr+off], size`: `size` dwords from the 64-bit address in `addr`, `addr+1` plus the
    /// byte offset `off` into the constant file at `dst`.
    LdgK {
        dst: ConstDst,
        addr: RegNum,
        off: i32,
        size: u8,
    },
    /// `stc.TY c[dst], src, size`: registers src … src+size−1 into the constant file at `dst`.
    Stc {
        dst: ConstDst,
        src: RegNum,
        size: u8,
    },
    /// Untyped `ldib.b`/`stib.b` and `atomic.b.OP` (docs/hw/adreno-kgsl-pm4.md §16.13).
    Ibo(IboArgs),
    /// Bindless `resinfo.b…baseB dst, index`: the descriptor's width, height and depth into dst … dst+2.
    ResinfoB { dst: RegNum, desc: Desc },
    /// `sleep`, `dccln`, `dcflu`: nothing a coherent memory model can see (docs/hw/adreno-kgsl-pm4.md §16.14).
    NoEffect,
}

/// Where a UAV/UBO descriptor comes from: slot `index` of the dispatch's loaded table (`base` None), or
/// descriptor `index` of bindless descriptor set `base` (docs/hw/adreno-kgsl-pm4.md §16.13).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Desc {
    pub base: Option<u8>,
    pub index: Opnd,
}

/// What an [`IboArgs`] access does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IboOp {
    Load,
    Store,
    Atomic(AtomicOp),
}

/// `ldib.b`/`stib.b` (untyped 1-D) and `atomic.b.OP` on a buffer or image descriptor (§16.13): `val` is the
/// loaded/stored register (and an atomic's operand and result), `coord` the element (x[, y]) coordinate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IboArgs {
    pub op: IboOp,
    pub ty: Ty,
    pub n: u8,
    pub dims: u8,
    pub typed: bool,
    pub val: RegNum,
    pub coord: RegNum,
    pub desc: Desc,
}

/// A cat6 operand that is a full register or an 8-bit immediate (`ldc`'s offset and UBO slot).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Opnd {
    Imm(u8),
    Reg(RegNum),
}

/// A constant-file destination in dwords: `off`, or a1.x + `off` when `a1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConstDst {
    pub a1: bool,
    pub off: u16,
}

/// The operands of [`ExtKind::Sam`]: those of `isam` (same fields, same `.s2en` rule).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SamArgs {
    pub ty: Ty,
    pub wrmask: u8,
    pub dst: RegNum,
    pub coord: RegNum,
    pub coord_half: bool,
    pub samp: u8,
    pub tex: u8,
    pub s2en: Option<S2en>,
    /// Bindless (`.baseN`, docs/hw/adreno-kgsl-pm4.md §16.13): texture and sampler descriptors from set N.
    pub bindless: Option<SamBindless>,
}

/// Where a bindless `sam` finds its descriptors in set `base`: sampler `samp`, texture `tex` (DESC_MODE 6,
/// immediate) or the texture index in a1.x (DESC_MODE 7, `tex_a1`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SamBindless {
    pub base: u8,
    pub tex_a1: bool,
}

/// The wave-level operations of [`ExtKind::Wave`] (docs/hw/adreno-kgsl-pm4.md §16.10).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaveOp {
    /// `getfiberid.u32 dst`: the fiber's index in its wave.
    FiberId { dst: RegNum },
    /// `movmsk.wW dst`: the mask of the wave's executing fibers, 32 bits per register, `regs` = W / 32 registers.
    MovMsk { dst: RegNum, regs: u8 },
    /// `getone #off`: every issued fiber of a wave but its lowest jumps by `off`; that one falls through.
    GetOne { off: i32 },
    /// `getlast.wN #off`: in the first cluster of 8 fibers with an issued fiber, every issued fiber but the
    /// highest jumps by `off`; all other fibers fall through.
    GetLast { off: i32 },
    /// `shfl.MODE.TY dst, src, lane`: dst ← src of the fiber MODE selects with `lane` (register or immediate).
    Shfl {
        mode: ShflMode,
        half: bool,
        dst: RegNum,
        src: RegNum,
        lane: Lane,
    },
    /// `quad_shuffle.MODE (TY)(x)dst, src[, idx]`: dst ← src of a fiber of the same quad (4 consecutive
    /// fibers): the one `idx` names (`brcst`), or the fiber's index XOR 1 / 2 / 3 (`horiz` / `vert` / `diag`).
    Quad {
        mode: u8,
        half: bool,
        dst: RegNum,
        src: RegNum,
        idx: RegNum,
    },
}

/// `shfl` modes (Mesa's `#cat6-shfl-mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShflMode {
    Xor,
    Up,
    Down,
    RotUp,
    RotDown,
}

/// The lane operand of `shfl`: an immediate or a full register.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lane {
    Imm(u32),
    Reg(RegNum),
}

/// Read-modify-write operations of [`ExtKind::Atomic`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RmwOp {
    Basic(AtomicOp),
    Inc,
    Dec,
    CmpXchg,
}

/// Read-modify-write operations of the executed atomics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtomicOp {
    Add,
    Sub,
    Xchg,
    Min,
    Max,
    And,
    Or,
    Xor,
}

/// The operands cat6 plain loads and stores share ([`Op::access`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    /// `st*` (true) or `ld*`.
    pub store: bool,
    pub space: Space,
    pub ty: Ty,
    /// The address register (global: the low half of a register pair).
    pub addr: RegNum,
    /// Byte offset added to the address.
    pub off: i32,
    /// The first destination (load) or source (store) register.
    pub reg: RegNum,
    /// Consecutive elements accessed.
    pub size: u8,
}

impl Op {
    /// The operands of a plain load or store; None for every other operation.
    pub fn access(&self) -> Option<Access> {
        let (store, space, ty, addr, off, reg, size) = match *self {
            Op::Load {
                space,
                ty,
                dst,
                addr,
                off,
                size,
            } => (false, space, ty, addr, off, dst, size),
            Op::Store {
                space,
                ty,
                addr,
                off,
                src,
                size,
            } => (true, space, ty, addr, off, src, size),
            _ => return None,
        };
        Some(Access {
            store,
            space,
            ty,
            addr,
            off,
            reg,
            size,
        })
    }
}

/// One decoded instruction: its operation plus the flags every category may carry.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Instr {
    pub op: Op,
    /// `(sy)`: wait for outstanding texture/global loads.
    pub sy: bool,
    /// `(ss)`: wait for outstanding SFU results / local memory.
    pub ss: bool,
    /// `(jp)`: a join point (reconvergence after divergence).
    pub jp: bool,
    /// `(ul)`: last use of a0.x (display only).
    pub ul: bool,
    /// `(sat)`.
    pub sat: bool,
    /// `(ei)` end-input (display only).
    pub ei: bool,
    /// `(eq)` (cat0 only; display only).
    pub eq: bool,
    /// cat1 ROUND field (0 = default; 1 even, 2 +∞, 3 −∞ — not executed by the interpreter).
    pub round: u8,
    /// `(rptN)`: the instruction runs `repeat + 1` times.
    pub repeat: u8,
    /// `(nopN)`: N delay slots after the instruction (timing only).
    pub nop: u8,
}

impl Instr {
    pub fn new(op: Op) -> Instr {
        Instr {
            op,
            sy: false,
            ss: false,
            jp: false,
            ul: false,
            sat: false,
            ei: false,
            eq: false,
            round: 0,
            repeat: 0,
            nop: 0,
        }
    }
}

/// The float lookup table of `#flut` immediates.
pub fn flut(idx: u8) -> f32 {
    use core::f32::consts::*;
    match idx {
        0 => 0.0,
        1 => 0.5,
        2 => 1.0,
        3 => 2.0,
        4 => E,
        5 => PI,
        6 => FRAC_1_PI,
        7 => LN_2,
        8 => LOG2_E,
        9 => LOG10_2,
        10 => LOG2_10,
        _ => 4.0,
    }
}
