//! Bits → [`Ext`] for the blob-compiler cat6 forms the interpreter executes (field layouts in
//! docs/hw/adreno-kgsl-pm4.md §16.9): `ldg.a`/`stg.a`, `ldlw`/`stlw`, local atomics on registers, the typed
//! 2-D `ldib`, and `dp2acc`/`dp4acc` on registers. Anything
//! else goes to `blob_decode_wave`, and what that does not take either stays an unknown encoding for
//! [`crate::decode`] (and is named by `blob`).
use super::instr::*;

fn bits(w: u64, lo: u32, hi: u32) -> u64 {
    (w >> lo) & ((1u64 << (hi - lo + 1)) - 1)
}

fn bit(w: u64, b: u32) -> bool {
    (w >> b) & 1 == 1
}

fn sext13(v: u64) -> i32 {
    (((v << 51) as i64) >> 51) as i32
}

fn reg(v: u64) -> RegNum {
    (v & 0xFF) as RegNum
}

/// The executed operation of a cat6 word, if it is one of the forms above.
pub fn cat6(w: u64) -> Option<Ext> {
    let ty = Ty::from_bits(bits(w, 49, 51));
    if bit(w, 53) {
        return ldib(w, ty).map(|kind| Ext { raw: w, kind });
    }
    // ldg.a/stg.a scale their offset and index by the element size: 8-bit types 0, 16-bit 1, else 2.
    let ts = match ty {
        Ty::U8 | Ty::U8x32 => 0,
        t if t.is_half() => 1,
        _ => 2,
    };
    let acc = |store, space, addr, off, reg, size| Access {
        store,
        space,
        ty,
        addr,
        off,
        reg,
        size,
    };
    let kind = match bits(w, 54, 58) {
        0 if bit(w, 22)
            && bit(w, 23)
            && !bit(w, 52)
            && bit(w, 0)
            && !bit(w, 11)
            && bits(w, 30, 31) == 0 =>
        {
            ExtKind::Mem {
                m: acc(
                    false,
                    Space::Global,
                    reg(bits(w, 14, 21)),
                    (bits(w, 9, 10) << ts) as i32,
                    reg(bits(w, 32, 39)),
                    bits(w, 24, 26) as u8,
                ),
                index: Some((reg(bits(w, 1, 8)), (bits(w, 12, 13) + ts) as u8)),
            }
        }
        3 if bit(w, 52) && bit(w, 23) && !bit(w, 11) && bits(w, 30, 31) == 0 => ExtKind::Mem {
            m: acc(
                true,
                Space::Global,
                reg(bits(w, 41, 48)),
                (bits(w, 9, 10) << ts) as i32,
                reg(bits(w, 1, 8)),
                bits(w, 24, 26) as u8,
            ),
            index: Some((reg(bits(w, 32, 39)), (bits(w, 12, 13) + ts) as u8)),
        },
        10 if bit(w, 0) && bit(w, 23) => ExtKind::Mem {
            m: acc(
                false,
                Space::Local,
                reg(bits(w, 14, 21)),
                sext13(bits(w, 1, 13)),
                reg(bits(w, 32, 39)),
                bits(w, 24, 31) as u8,
            ),
            index: None,
        },
        11 if bit(w, 23) && bit(w, 40) => ExtKind::Mem {
            m: acc(
                true,
                Space::Local,
                reg(bits(w, 41, 48)),
                sext13(bits(w, 9, 13) << 8 | bits(w, 32, 39)),
                reg(bits(w, 1, 8)),
                bits(w, 24, 31) as u8,
            ),
            index: None,
        },
        o @ 16..=26 => {
            // Local form only (bit 52 clear), register operands, one 32-bit integer component, 1d untyped.
            if bit(w, 52) || !bit(w, 0) || bit(w, 22) || bit(w, 23) || bits(w, 9, 13) != 0 {
                return None;
            }
            if bits(w, 1, 8) != 0 || bits(w, 41, 48) != 0 || !matches!(ty, Ty::U32 | Ty::S32) {
                return None;
            }
            let op = match o {
                16 => AtomicOp::Add,
                17 => AtomicOp::Sub,
                18 => AtomicOp::Xchg,
                22 => AtomicOp::Min,
                23 => AtomicOp::Max,
                24 => AtomicOp::And,
                25 => AtomicOp::Or,
                26 => AtomicOp::Xor,
                _ => return None,
            };
            ExtKind::AtomicLocal {
                op,
                signed: ty == Ty::S32,
                dst: reg(bits(w, 32, 39)),
                addr: reg(bits(w, 14, 21)),
                src: reg(bits(w, 24, 31)),
            }
        }
        _ => return None,
    };
    Some(Ext { raw: w, kind })
}

/// `ldib.b.typed.2d.{f32,f16}.4.imm dst, coord, slot`: the a6xx UAV load of one RGBA texel from an image bound
/// by immediate slot (not bindless, no immediate offset, no `.rck`), the load twin of the executed `stib`.
fn ldib(w: u64, ty: Ty) -> Option<ExtKind> {
    let plain = bits(w, 14, 19) == 6 && bits(w, 20, 22) == 0b110 && !bit(w, 52) && bit(w, 11);
    let imm = bits(w, 6, 8) == 0
        && !bit(w, 23)
        && bits(w, 4, 5) == 0
        && bits(w, 54, 58) == 0
        && !bit(w, 40);
    let shape = bits(w, 9, 10) == 1 && bits(w, 12, 13) == 3 && matches!(ty, Ty::F32 | Ty::F16);
    (plain && imm && shape).then(|| ExtKind::Ldib {
        ty,
        dst: reg(bits(w, 32, 39)),
        coord: reg(bits(w, 24, 31)),
        slot: bits(w, 41, 48) as u8,
    })
}

/// `dp2acc`/`dp4acc` with register sources (cat3 alternative group, opcode 13; §16.9): REPEAT 0 only.
pub fn cat3(w: u64) -> Option<Ext> {
    if !bit(w, 13)
        || bits(w, 55, 58) != 13
        || bits(w, 40, 41) != 0
        || bits(w, 11, 12) != 0
        || bits(w, 27, 28) != 0
    {
        return None;
    }
    if bits(w, 8, 9) != 0 || bits(w, 24, 25) != 0 {
        return None;
    }
    Some(Ext {
        raw: w,
        kind: ExtKind::Dot {
            four: bit(w, 46),
            mixed: bit(w, 14),
            high: bit(w, 30),
            sat: bit(w, 42),
            neg3: bit(w, 31),
            dst: reg(bits(w, 32, 39)),
            src: [
                reg(bits(w, 0, 7)),
                reg(bits(w, 47, 54)),
                reg(bits(w, 16, 23)),
            ],
        },
    })
}
