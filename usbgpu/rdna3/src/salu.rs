//! Scalar ALU semantics: SOP1, SOP2, SOPK, SOPC (docs/hw/rdna3-isa.md §6).
//! SCC rules: carries/borrows for the unsigned add/sub, signed overflow for the `_i32` add/sub,
//! "result ≠ 0" for bitwise ops and shifts, the comparison for min/max; multiplies and moves leave
//! SCC alone.
use super::decode::Inst;
use super::ops::Op;
use super::wave::Wave;

/// Execute a scalar ALU instruction; `Err` names what is not modelled.
pub fn exec(w: &mut Wave, i: &Inst) -> Result<(), &'static str> {
    use Op::*;
    let op = i.op;
    let a = || w.scalar(i.src[0]);
    let b = || w.scalar(i.src[1]);
    let (a64, b64) = (w.scalar64(i.src[0]), w.scalar64(i.src[1]));
    let scc_in = w.scc;
    let k = i.imm; // SOPK simm16, sign-extended
    let d_reg = || w.scalar(super::operand::Src::S(i.dst));
    // (value, new SCC) for 32-bit results; None keeps SCC.
    let r32: (u32, Option<bool>) = match op {
        SAddU32 => {
            let (r, c) = a().overflowing_add(b());
            (r, Some(c))
        }
        SSubU32 => {
            let (r, c) = a().overflowing_sub(b());
            (r, Some(c))
        }
        SAddI32 => {
            let (r, o) = (a() as i32).overflowing_add(b() as i32);
            (r as u32, Some(o))
        }
        SSubI32 => {
            let (r, o) = (a() as i32).overflowing_sub(b() as i32);
            (r as u32, Some(o))
        }
        SAddcU32 => {
            let s = u64::from(a()) + u64::from(b()) + u64::from(scc_in);
            (s as u32, Some(s >> 32 != 0))
        }
        SSubbU32 => {
            let (x, y) = (u64::from(a()), u64::from(b()) + u64::from(scc_in));
            (x.wrapping_sub(y) as u32, Some(y > x))
        }
        SLshlB32 => nz(a() << (b() & 31)),
        SLshrB32 => nz(a() >> (b() & 31)),
        SAshrI32 => nz(((a() as i32) >> (b() & 31)) as u32),
        SMinI32 => pick(a(), b(), (a() as i32) < (b() as i32)),
        SMinU32 => pick(a(), b(), a() < b()),
        SMaxI32 => pick(a(), b(), (a() as i32) > (b() as i32)),
        SMaxU32 => pick(a(), b(), a() > b()),
        SAndB32 => nz(a() & b()),
        SOrB32 => nz(a() | b()),
        SXorB32 => nz(a() ^ b()),
        SAndNot1B32 => nz(a() & !b()),
        SOrNot1B32 => nz(a() | !b()),
        SBfeU32 | SBfeI32 => {
            let (off, width) = (b() & 31, (b() >> 16) & 0x7f);
            let v = if width == 0 {
                0
            } else if op == SBfeU32 {
                let v = a() >> off;
                if width >= 32 {
                    v
                } else {
                    v & ((1 << width) - 1)
                }
            } else {
                let sh = 32u32.saturating_sub(width.min(32));
                (((a() >> off) << sh) as i32 >> sh) as u32
            };
            nz(v)
        }
        SMulI32 => (a().wrapping_mul(b()), None),
        SMulHiU32 => (((u64::from(a()) * u64::from(b())) >> 32) as u32, None),
        SMulHiI32 => (
            ((i64::from(a() as i32) * i64::from(b() as i32)) >> 32) as u32,
            None,
        ),
        SCselectB32 => (if scc_in { a() } else { b() }, None),
        SMovB32 => (a(), None),
        SCmovB32 => (if scc_in { a() } else { d_reg() }, None),
        SNotB32 => nz(!a()),
        // Sign-extend the low byte / half; SCC unchanged.
        SSextI32I8 => (a() as u8 as i8 as i32 as u32, None),
        SSextI32I16 => (a() as u16 as i16 as i32 as u32, None),
        SAndSaveexecB32 | SOrSaveexecB32 | SAndNot1SaveexecB32 => {
            let old = w.exec();
            let new = match op {
                SAndSaveexecB32 => a() & old,
                SOrSaveexecB32 => a() | old,
                _ => a() & !old,
            };
            w.set_s(super::operand::EXEC, new);
            w.scc = new != 0;
            w.set_s(i.dst, old);
            return Ok(());
        }
        SMovkI32 => (k as u32, None),
        SAddkI32 => {
            let (r, o) = (d_reg() as i32).overflowing_add(k);
            (r as u32, Some(o))
        }
        SMulkI32 => ((d_reg() as i32).wrapping_mul(k) as u32, None),
        SCmpkEqI32 | SCmpkLgI32 | SCmpkGtI32 | SCmpkGeI32 | SCmpkLtI32 | SCmpkLeI32 => {
            let (x, y) = (d_reg() as i32, k);
            w.scc = cmp(op, x.cmp(&y));
            return Ok(());
        }
        SCmpkEqU32 | SCmpkLgU32 | SCmpkGtU32 | SCmpkGeU32 | SCmpkLtU32 | SCmpkLeU32 => {
            let (x, y) = (d_reg(), u32::from(k as u16));
            w.scc = cmp(op, x.cmp(&y));
            return Ok(());
        }
        SCmpEqI32 | SCmpLgI32 | SCmpGtI32 | SCmpGeI32 | SCmpLtI32 | SCmpLeI32 => {
            w.scc = cmp(op, (a() as i32).cmp(&(b() as i32)));
            return Ok(());
        }
        SCmpEqU32 | SCmpLgU32 | SCmpGtU32 | SCmpGeU32 | SCmpLtU32 | SCmpLeU32 => {
            w.scc = cmp(op, a().cmp(&b()));
            return Ok(());
        }
        SCmpEqU64 | SCmpLgU64 => {
            w.scc = cmp(op, a64.cmp(&b64));
            return Ok(());
        }
        SBitcmp0B32 | SBitcmp1B32 => {
            let bit = a() >> (b() & 31) & 1;
            w.scc = bit == u32::from(op == SBitcmp1B32);
            return Ok(());
        }
        SMovB64 | SCselectB64 | SAndB64 | SOrB64 | SXorB64 | SLshlB64 | SLshrB64 => {
            let (v, scc) = match op {
                SMovB64 => (a64, None),
                SCselectB64 => (if scc_in { a64 } else { b64 }, None),
                SAndB64 => nz64(a64 & b64),
                SOrB64 => nz64(a64 | b64),
                SXorB64 => nz64(a64 ^ b64),
                SLshlB64 => nz64(a64 << (b() & 63)),
                _ => nz64(a64 >> (b() & 63)),
            };
            w.set_s64(i.dst, v);
            if let Some(s) = scc {
                w.scc = s;
            }
            return Ok(());
        }
        _ => return Err("scalar operation not modelled"),
    };
    w.set_s(i.dst, r32.0);
    if let Some(s) = r32.1 {
        w.scc = s;
    }
    Ok(())
}

fn nz(v: u32) -> (u32, Option<bool>) {
    (v, Some(v != 0))
}

fn nz64(v: u64) -> (u64, Option<bool>) {
    (v, Some(v != 0))
}

fn pick(a: u32, b: u32, first: bool) -> (u32, Option<bool>) {
    (if first { a } else { b }, Some(first))
}

/// The comparison an `s_cmp*`/`s_cmpk*` op asks for, applied to an ordering.
fn cmp(op: Op, o: core::cmp::Ordering) -> bool {
    use core::cmp::Ordering::*;
    use Op::*;
    match op {
        SCmpEqI32 | SCmpEqU32 | SCmpEqU64 | SCmpkEqI32 | SCmpkEqU32 => o == Equal,
        SCmpLgI32 | SCmpLgU32 | SCmpLgU64 | SCmpkLgI32 | SCmpkLgU32 => o != Equal,
        SCmpGtI32 | SCmpGtU32 | SCmpkGtI32 | SCmpkGtU32 => o == Greater,
        SCmpGeI32 | SCmpGeU32 | SCmpkGeI32 | SCmpkGeU32 => o != Less,
        SCmpLtI32 | SCmpLtU32 | SCmpkLtI32 | SCmpkLtU32 => o == Less,
        _ => o != Greater, // the `le` forms
    }
}
