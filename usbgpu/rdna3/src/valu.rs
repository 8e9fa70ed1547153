//! Vector ALU semantics: VOP1, VOP2, VOPC, VOP3, VOP3SD, VOP3P (mixed-precision FMA) and VOPD
//! (docs/hw/rdna3-isa.md §5–§7).
//!
//! Rules carried here: results reach active lanes only; a lane mask a VALU op writes (VOPC
//! result, carry-out) has 0 for inactive lanes; `v_cmpx` writes EXEC only; VOPD reads every
//! source of both halves before either writes; 24-bit multiplies use the low 24 bits of each
//! source (sign-extended for `_i24`); `v_readlane`/`v_writelane` ignore EXEC.
use super::decode::{Half, Inst};
use super::float as fp;
use super::operand::{Src, EXEC, VCC};
use super::ops::{Enc, Op};
use super::wave::{Lanes, Wave, LANES};
use modelrt_core::half::{f16_bits_to_f32_bits, f32_bits_to_f16_bits};

fn map1(a: &Lanes, f: impl Fn(u32) -> u32) -> Lanes {
    core::array::from_fn(|l| f(a[l]))
}
fn map2(a: &Lanes, b: &Lanes, f: impl Fn(u32, u32) -> u32) -> Lanes {
    core::array::from_fn(|l| f(a[l], b[l]))
}
fn map3(a: &Lanes, b: &Lanes, c: &Lanes, f: impl Fn(u32, u32, u32) -> u32) -> Lanes {
    core::array::from_fn(|l| f(a[l], b[l], c[l]))
}

fn f(x: u32) -> f32 {
    f32::from_bits(x)
}
fn sext24(x: u32) -> i64 {
    i64::from(((x << 8) as i32) >> 8)
}
fn bits(x: f32) -> u32 {
    x.to_bits()
}

/// The lane mask an e32 form reads or writes (VCC), or the scalar operand of the e64 form.
fn mask_src(w: &Wave, i: &Inst) -> u32 {
    if i.enc == Enc::Vop3 {
        w.scalar(i.src[2])
    } else {
        w.vcc()
    }
}

/// Execute a VALU instruction (not VOPD); `Err` names what is not modelled.
pub fn exec(w: &mut Wave, i: &Inst) -> Result<(), &'static str> {
    use Op::*;
    let op = i.op;
    let exec = w.exec();
    // Comparisons → a lane mask. 16-bit compares widen their low halves and use the 32-bit test.
    let (cmp_op, widen) = cmp16(op).unwrap_or((op, |x| x));
    if op == VCmpClassF16 || compare(cmp_op).is_some() {
        let wide = op.src_ty(0) == super::ops::Ty::B64;
        let mut m = 0u32;
        if op == VCmpClassF16 {
            let (a, b) = (w.fetch(i, 0), w.fetch(i, 1));
            for l in 0..LANES {
                m |= u32::from(super::f16::class(a[l], b[l])) << l;
            }
        } else if wide {
            let test = compare(cmp_op).expect("a comparison");
            let (a, b) = (w.fetch64(i.src[0]), w.fetch64(i.src[1]));
            for l in 0..LANES {
                m |= u32::from(test(Cmp::U64(a[l], b[l]))) << l;
            }
        } else {
            let test = compare(cmp_op).expect("a comparison");
            let (a, b) = (w.fetch(i, 0), w.fetch(i, 1));
            for l in 0..LANES {
                m |= u32::from(test(Cmp::B32(widen(a[l]), widen(b[l])))) << l;
            }
        }
        m &= exec;
        if op.is_cmpx() {
            w.set_s(EXEC, m);
        } else if i.enc == Enc::Vop3 {
            w.set_s(i.dst, m);
        } else {
            w.set_s(VCC, m);
        }
        return Ok(());
    }
    match op {
        VNop => return Ok(()),
        VReadlaneB32 => {
            let lane = (w.scalar(i.src[1]) & 31) as usize;
            let Src::V(r) = i.src[0] else {
                return Err("v_readlane source must be a VGPR");
            };
            let v = w.v[usize::from(r)][lane];
            w.set_s(i.dst, v);
            return Ok(());
        }
        VReadfirstlaneB32 => {
            let a = w.fetch(i, 0);
            let lane = if exec == 0 { 0 } else { exec.trailing_zeros() };
            w.set_s(i.dst, a[lane as usize]);
            return Ok(());
        }
        VWritelaneB32 => {
            let lane = (w.scalar(i.src[1]) & 31) as usize;
            let v = w.scalar(i.src[0]);
            w.v[usize::from(i.dst)][lane] = v;
            return Ok(());
        }
        VAddCoU32 | VSubCoU32 | VSubrevCoU32 | VAddCoCiU32 | VSubCoCiU32 | VSubrevCoCiU32 => {
            let (a, b) = (w.fetch(i, 0), w.fetch(i, 1));
            let cin = match op {
                VAddCoCiU32 | VSubCoCiU32 | VSubrevCoCiU32 => mask_src(w, i),
                _ => 0,
            };
            let mut r = [0u32; LANES];
            let mut cout = 0u32;
            for l in 0..LANES {
                let c = u64::from(cin >> l & 1);
                let (x, y) = (u64::from(a[l]), u64::from(b[l]));
                let (v, carry) = match op {
                    VAddCoU32 | VAddCoCiU32 => {
                        let s = x + y + c;
                        (s as u32, s >> 32 != 0)
                    }
                    VSubCoU32 | VSubCoCiU32 => (x.wrapping_sub(y + c) as u32, y + c > x),
                    _ => (y.wrapping_sub(x + c) as u32, x + c > y),
                };
                r[l] = v;
                cout |= u32::from(carry) << l;
            }
            w.write(i.dst, &r);
            let cout = cout & exec;
            if i.enc == Enc::Vop3 {
                w.set_s(i.sdst, cout);
            } else {
                w.set_s(VCC, cout);
            }
            return Ok(());
        }
        VMadU64U32 | VMadI64I32 => {
            let (a, b) = (w.fetch(i, 0), w.fetch(i, 1));
            let c = w.fetch64(i.src[2]);
            let r: [u64; LANES] = core::array::from_fn(|l| {
                if op == VMadU64U32 {
                    (u64::from(a[l]) * u64::from(b[l])).wrapping_add(c[l])
                } else {
                    (i64::from(a[l] as i32) * i64::from(b[l] as i32)).wrapping_add(c[l] as i64)
                        as u64
                }
            });
            w.write64(i.dst, &r);
            // Carry-out of the 64-bit add (unsigned form) into SDST; inactive lanes 0.
            let mut cout = 0u32;
            if op == VMadU64U32 {
                for l in 0..LANES {
                    let wide = u128::from(a[l]) * u128::from(b[l]) + u128::from(c[l]);
                    cout |= u32::from(wide >> 64 != 0) << l;
                }
            }
            w.set_s(i.sdst, cout & exec);
            return Ok(());
        }
        VLshlrevB64 | VLshrrevB64 | VAshrrevI64 => {
            let s = w.fetch(i, 0);
            let x = w.fetch64(i.src[1]);
            let r: [u64; LANES] = core::array::from_fn(|l| {
                let sh = s[l] & 63;
                match op {
                    VLshlrevB64 => x[l] << sh,
                    VLshrrevB64 => x[l] >> sh,
                    _ => ((x[l] as i64) >> sh) as u64,
                }
            });
            w.write64(i.dst, &r);
            return Ok(());
        }
        VCvtF32F16 => {
            let a = w.fetch(i, 0);
            let r = map1(&a, |x| f16_bits_to_f32_bits(x as u16));
            return finish(w, i, r);
        }
        VCvtF16F32 => {
            // A 16-bit result fills the low half of the VGPR; the high half is kept (RDNA3's
            // 16-bit VALU results name one half of a VGPR, docs/hw/rdna3-isa.md §7).
            let a = w.fetch(i, 0);
            let old = w.v[usize::from(i.dst)];
            let r = core::array::from_fn(|l| {
                (old[l] & 0xffff_0000) | u32::from(f32_bits_to_f16_bits(a[l]))
            });
            w.write(i.dst, &r);
            return Ok(());
        }
        VCvtF64F32 => {
            // Exact widening; a NaN stays a NaN, quieted (the host conversion does the same).
            let a = w.fetch(i, 0);
            let r: [u64; LANES] = core::array::from_fn(|l| f64::from(f(a[l])).to_bits());
            w.write64(i.dst, &r);
            return Ok(());
        }
        _ if super::valu16::handles(op) => return super::valu16::exec(w, i),
        VFmaMixF32 | VFmaMixloF16 | VFmaMixhiF16 => return fma_mix(w, i),
        _ => {}
    }
    let a = w.fetch(i, 0);
    let r: Lanes = match op {
        VMovB32 => a,
        VCvtF32I32 => map1(&a, |x| bits(x as i32 as f32)),
        VCvtF32U32 => map1(&a, |x| bits(x as f32)),
        // D.f32 = u32_to_f32(S0[8k+7:8k]): byte k, zero-extended; every byte is exact in f32.
        VCvtF32Ubyte0 => map1(&a, |x| bits((x & 0xff) as f32)),
        VCvtF32Ubyte1 => map1(&a, |x| bits((x >> 8 & 0xff) as f32)),
        VCvtF32Ubyte2 => map1(&a, |x| bits((x >> 16 & 0xff) as f32)),
        VCvtF32Ubyte3 => map1(&a, |x| bits((x >> 24) as f32)),
        VCvtU32F32 => map1(&a, fp::cvt_u32),
        VCvtI32F32 => map1(&a, fp::cvt_i32),
        VFractF32 => map1(&a, fp::fract),
        VTruncF32 => map1(&a, |x| fp::round_with(x, f32::trunc)),
        VCeilF32 => map1(&a, |x| fp::round_with(x, f32::ceil)),
        VRndneF32 => map1(&a, |x| fp::round_with(x, f32::round_ties_even)),
        VFloorF32 => map1(&a, |x| fp::round_with(x, f32::floor)),
        VExpF32 => map1(&a, fp::exp2),
        VLogF32 => map1(&a, fp::log2),
        VRcpF32 | VRcpIflagF32 => map1(&a, fp::rcp),
        VRsqF32 => map1(&a, fp::rsq),
        VSqrtF32 => map1(&a, fp::sqrt),
        VSinF32 => map1(&a, fp::sin),
        VCosF32 => map1(&a, fp::cos),
        VNotB32 => map1(&a, |x| !x),
        VBfrevB32 => map1(&a, u32::reverse_bits),
        VClzI32U32 => map1(&a, |x| if x == 0 { u32::MAX } else { x.leading_zeros() }),
        VCtzI32B32 => map1(&a, |x| if x == 0 { u32::MAX } else { x.trailing_zeros() }),
        VClsI32 => map1(&a, |x| {
            let n = if (x as i32) < 0 { !x } else { x };
            if n == 0 {
                u32::MAX
            } else {
                n.leading_zeros()
            }
        }),
        _ => {
            let b = w.fetch(i, 1);
            match op {
                VCndmaskB32 => {
                    let m = mask_src(w, i);
                    core::array::from_fn(|l| if m >> l & 1 == 1 { b[l] } else { a[l] })
                }
                VAddF32 => map2(&a, &b, |x, y| bits(f(x) + f(y))),
                VSubF32 => map2(&a, &b, |x, y| bits(f(x) - f(y))),
                VSubrevF32 => map2(&a, &b, |x, y| bits(f(y) - f(x))),
                VMulF32 => map2(&a, &b, |x, y| bits(f(x) * f(y))),
                VMinF32 => map2(&a, &b, fp::min),
                VMaxF32 => map2(&a, &b, fp::max),
                VMulI32I24 => map2(&a, &b, |x, y| (sext24(x) * sext24(y)) as u32),
                VMulHiI32I24 => map2(&a, &b, |x, y| ((sext24(x) * sext24(y)) >> 32) as u32),
                VMulU32U24 => map2(&a, &b, |x, y| (x & 0xff_ffff).wrapping_mul(y & 0xff_ffff)),
                VMulHiU32U24 => map2(&a, &b, |x, y| {
                    ((u64::from(x & 0xff_ffff) * u64::from(y & 0xff_ffff)) >> 32) as u32
                }),
                VMinI32 => map2(&a, &b, |x, y| (x as i32).min(y as i32) as u32),
                VMaxI32 => map2(&a, &b, |x, y| (x as i32).max(y as i32) as u32),
                VMinU32 => map2(&a, &b, u32::min),
                VMaxU32 => map2(&a, &b, u32::max),
                VLshlrevB32 => map2(&a, &b, |x, y| y << (x & 31)),
                VLshrrevB32 => map2(&a, &b, |x, y| y >> (x & 31)),
                VAshrrevI32 => map2(&a, &b, |x, y| ((y as i32) >> (x & 31)) as u32),
                VAndB32 => map2(&a, &b, |x, y| x & y),
                VOrB32 => map2(&a, &b, |x, y| x | y),
                VXorB32 => map2(&a, &b, |x, y| x ^ y),
                VXnorB32 => map2(&a, &b, |x, y| !(x ^ y)),
                VAddNcU32 => map2(&a, &b, u32::wrapping_add),
                VSubNcU32 => map2(&a, &b, u32::wrapping_sub),
                VSubrevNcU32 => map2(&a, &b, |x, y| y.wrapping_sub(x)),
                VFmacF32 => {
                    let c = w.v[usize::from(i.dst)];
                    fp::fma_lanes(&a, &b, &c)
                }
                VFmamkF32 => fp::fma_lanes(&a, &[w.scalar(i.src[2]); LANES], &b),
                VFmaakF32 => fp::fma_lanes(&a, &b, &[w.scalar(i.src[2]); LANES]),
                VLdexpF32 => map2(&a, &b, |x, y| fp::ldexp(x, y as i32)),
                VBfmB32 => map2(&a, &b, |x, y| {
                    let m = if x & 31 == 0 {
                        0
                    } else {
                        u32::MAX >> (32 - (x & 31))
                    };
                    m << (y & 31)
                }),
                VBcntU32B32 => map2(&a, &b, |x, y| x.count_ones().wrapping_add(y)),
                VMulLoU32 => map2(&a, &b, u32::wrapping_mul),
                VMulHiU32 => map2(&a, &b, |x, y| ((u64::from(x) * u64::from(y)) >> 32) as u32),
                VMulHiI32 => map2(&a, &b, |x, y| {
                    ((i64::from(x as i32) * i64::from(y as i32)) >> 32) as u32
                }),
                _ => {
                    let c = w.fetch(i, 2);
                    three(op, &a, &b, &c)?
                }
            }
        }
    };
    finish(w, i, r)
}

fn three(op: Op, a: &Lanes, b: &Lanes, c: &Lanes) -> Result<Lanes, &'static str> {
    use Op::*;
    let bfe = |x: u32, off: u32, width: u32, signed: bool| -> u32 {
        let (off, width) = (off & 31, width & 31);
        if width == 0 {
            return 0;
        }
        let v = x >> off;
        if signed {
            (((v << (32 - width)) as i32) >> (32 - width)) as u32
        } else {
            v & ((1u32 << width) - 1)
        }
    };
    Ok(match op {
        VMadI32I24 => map3(a, b, c, |x, y, z| {
            (sext24(x) * sext24(y)).wrapping_add(i64::from(z as i32)) as u32
        }),
        VMadU32U24 => map3(a, b, c, |x, y, z| {
            (x & 0xff_ffff).wrapping_mul(y & 0xff_ffff).wrapping_add(z)
        }),
        VBfeU32 => map3(a, b, c, |x, y, z| bfe(x, y, z, false)),
        VBfeI32 => map3(a, b, c, |x, y, z| bfe(x, y, z, true)),
        VBfiB32 => map3(a, b, c, |x, y, z| (x & y) | (!x & z)),
        VFmaF32 => fp::fma_lanes(a, b, c),
        VAlignbitB32 => map3(a, b, c, |x, y, z| {
            ((u64::from(x) << 32 | u64::from(y)) >> (z & 31)) as u32
        }),
        VMin3F32 => map3(a, b, c, |x, y, z| fp::min(fp::min(x, y), z)),
        VMax3F32 => map3(a, b, c, |x, y, z| fp::max(fp::max(x, y), z)),
        VMed3F32 => map3(a, b, c, fp::med3),
        VMin3I32 => map3(a, b, c, |x, y, z| {
            (x as i32).min(y as i32).min(z as i32) as u32
        }),
        VMax3I32 => map3(a, b, c, |x, y, z| {
            (x as i32).max(y as i32).max(z as i32) as u32
        }),
        VMin3U32 => map3(a, b, c, |x, y, z| x.min(y).min(z)),
        VMax3U32 => map3(a, b, c, |x, y, z| x.max(y).max(z)),
        VMed3I32 => map3(a, b, c, |x, y, z| {
            let (x, y, z) = (x as i32, y as i32, z as i32);
            x.min(y).max(x.max(y).min(z)) as u32
        }),
        VMed3U32 => map3(a, b, c, |x, y, z| x.min(y).max(x.max(y).min(z))),
        VXadU32 => map3(a, b, c, |x, y, z| (x ^ y).wrapping_add(z)),
        VLshlAddU32 => map3(a, b, c, |x, y, z| (x << (y & 31)).wrapping_add(z)),
        VAddLshlU32 => map3(a, b, c, |x, y, z| x.wrapping_add(y) << (z & 31)),
        VAdd3U32 => map3(a, b, c, |x, y, z| x.wrapping_add(y).wrapping_add(z)),
        VLshlOrB32 => map3(a, b, c, |x, y, z| (x << (y & 31)) | z),
        VAndOrB32 => map3(a, b, c, |x, y, z| (x & y) | z),
        VOr3B32 => map3(a, b, c, |x, y, z| x | y | z),
        VPermB32 => map3(a, b, c, perm),
        _ => return Err("vector operation not modelled"),
    })
}

/// `v_perm_b32`: each result byte k is chosen by selector byte k of `sel` from the eight bytes of
/// {S0, S1} (S1 = bytes 0–3, S0 = bytes 4–7): 0–7 pick that byte; 8–11 replicate the sign bit of byte
/// 1, 3, 5, 7; 12 gives 0x00; 13–255 give 0xff (docs/hw/rdna3-isa.md §6).
fn perm(s0: u32, s1: u32, sel: u32) -> u32 {
    let v = u64::from(s0) << 32 | u64::from(s1);
    let byte = |k: u32| (v >> (8 * k) & 0xff) as u32;
    (0..4).fold(0, |r, k| {
        let s = sel >> (8 * k) & 0xff;
        let b = match s {
            0..=7 => byte(s),
            8..=11 => {
                if byte(2 * (s - 8) + 1) & 0x80 != 0 {
                    0xff
                } else {
                    0
                }
            }
            12 => 0,
            _ => 0xff,
        };
        r | b << (8 * k)
    })
}

/// Apply the VOP3 clamp bit (float results only) and write.
fn finish(w: &mut Wave, i: &Inst, mut r: Lanes) -> Result<(), &'static str> {
    if i.clamp {
        if i.op.src_ty(0) != super::ops::Ty::F32 && i.op != Op::VCvtF32F16 {
            return Err("clamp on an integer operation is not modelled");
        }
        for x in r.iter_mut() {
            *x = fp::clamp01(*x);
        }
    }
    w.write(i.dst, &r);
    Ok(())
}

/// `v_fma_mix_f32` / `v_fma_mixlo_f16` / `v_fma_mixhi_f16` (docs/hw/rdna3-isa.md §7): each source is an f32,
/// or (op_sel_hi bit set) the low f16 of its register converted to f32; abs (NEG_HI) then neg
/// apply to the converted value; one fused rounding to f32 (then to f16 for mixlo/mixhi).
fn fma_mix(w: &mut Wave, i: &Inst) -> Result<(), &'static str> {
    let mut s = [[0u32; LANES]; 3];
    for (k, out) in s.iter_mut().enumerate() {
        let raw = match i.src[k] {
            Src::V(r) => w.v[usize::from(r)],
            other => [w.scalar(other); LANES],
        };
        let half = i.op_sel_hi >> k & 1 == 1;
        for l in 0..LANES {
            let mut x = if half {
                f16_bits_to_f32_bits(raw[l] as u16)
            } else {
                raw[l]
            };
            if i.abs >> k & 1 == 1 {
                x &= 0x7fff_ffff;
            }
            if i.neg >> k & 1 == 1 {
                x ^= 0x8000_0000;
            }
            out[l] = x;
        }
    }
    let mut r = fp::fma_lanes(&s[0], &s[1], &s[2]);
    if i.clamp {
        for x in r.iter_mut() {
            *x = fp::clamp01(*x);
        }
    }
    match i.op {
        Op::VFmaMixF32 => {}
        Op::VFmaMixloF16 => {
            let old = w.v[usize::from(i.dst)];
            r = core::array::from_fn(|l| {
                (old[l] & 0xffff_0000) | u32::from(f32_bits_to_f16_bits(r[l]))
            });
        }
        _ => {
            let old = w.v[usize::from(i.dst)];
            r = core::array::from_fn(|l| {
                (old[l] & 0xffff) | u32::from(f32_bits_to_f16_bits(r[l])) << 16
            });
        }
    }
    w.write(i.dst, &r);
    Ok(())
}

/// A dual-issue VOPD instruction: both halves computed from the old registers, then written.
pub fn exec_vopd(w: &mut Wave, i: &Inst) -> Result<(), &'static str> {
    let x = Half {
        op: i.op,
        vdst: i.dst,
        src: i.src,
    };
    let y = i.y.ok_or("VOPD without its Y half")?;
    let rx = half(w, &x)?;
    let ry = half(w, &y)?;
    w.write(x.vdst, &rx);
    w.write(y.vdst, &ry);
    Ok(())
}

fn half(w: &Wave, h: &Half) -> Result<Lanes, &'static str> {
    use Op::*;
    let get = |s: Src| match s {
        Src::V(r) => w.v[usize::from(r)],
        other => [w.scalar(other); LANES],
    };
    let a = get(h.src[0]);
    if h.op == VMovB32 {
        return Ok(a);
    }
    let b = get(h.src[1]);
    Ok(match h.op {
        VFmacF32 => fp::fma_lanes(&a, &b, &w.v[usize::from(h.vdst)]),
        VFmaakF32 => fp::fma_lanes(&a, &b, &[w.scalar(h.src[2]); LANES]),
        VFmamkF32 => fp::fma_lanes(&a, &[w.scalar(h.src[2]); LANES], &b),
        VMulF32 => map2(&a, &b, |x, y| bits(f(x) * f(y))),
        VAddF32 => map2(&a, &b, |x, y| bits(f(x) + f(y))),
        VSubF32 => map2(&a, &b, |x, y| bits(f(x) - f(y))),
        VSubrevF32 => map2(&a, &b, |x, y| bits(f(y) - f(x))),
        VCndmaskB32 => {
            let m = w.vcc();
            core::array::from_fn(|l| if m >> l & 1 == 1 { b[l] } else { a[l] })
        }
        VMaxF32 => map2(&a, &b, fp::max),
        VMinF32 => map2(&a, &b, fp::min),
        VAddNcU32 => map2(&a, &b, u32::wrapping_add),
        VLshlrevB32 => map2(&a, &b, |x, y| y << (x & 31)),
        VAndB32 => map2(&a, &b, |x, y| x & y),
        _ => return Err("VOPD operation not modelled"),
    })
}

/// How a 16-bit comparison widens one operand to its 32-bit twin's type.
type Widen = fn(u32) -> u32;

/// A 16-bit comparison as its 32-bit twin and the widening of each operand's low half: f16 → f32
/// (exact), i16 sign-extended, u16 zero-extended.
fn cmp16(op: Op) -> Option<(Op, Widen)> {
    use Op::*;
    let f: Widen = |x| f16_bits_to_f32_bits(x as u16);
    let i: Widen = |x| x as u16 as i16 as i32 as u32;
    let u: Widen = |x| x & 0xffff;
    Some(match op {
        VCmpLtF16 => (VCmpLtF32, f),
        VCmpEqF16 => (VCmpEqF32, f),
        VCmpLeF16 => (VCmpLeF32, f),
        VCmpGtF16 => (VCmpGtF32, f),
        VCmpLgF16 => (VCmpLgF32, f),
        VCmpGeF16 => (VCmpGeF32, f),
        VCmpOF16 => (VCmpOF32, f),
        VCmpUF16 => (VCmpUF32, f),
        VCmpNgeF16 => (VCmpNgeF32, f),
        VCmpNlgF16 => (VCmpNlgF32, f),
        VCmpNgtF16 => (VCmpNgtF32, f),
        VCmpNleF16 => (VCmpNleF32, f),
        VCmpNeqF16 => (VCmpNeqF32, f),
        VCmpNltF16 => (VCmpNltF32, f),
        VCmpLtI16 => (VCmpLtI32, i),
        VCmpEqI16 => (VCmpEqI32, i),
        VCmpLeI16 => (VCmpLeI32, i),
        VCmpGtI16 => (VCmpGtI32, i),
        VCmpNeI16 => (VCmpNeI32, i),
        VCmpGeI16 => (VCmpGeI32, i),
        VCmpLtU16 => (VCmpLtU32, u),
        VCmpEqU16 => (VCmpEqU32, u),
        VCmpLeU16 => (VCmpLeU32, u),
        VCmpGtU16 => (VCmpGtU32, u),
        VCmpNeU16 => (VCmpNeU32, u),
        VCmpGeU16 => (VCmpGeU32, u),
        _ => return None,
    })
}

/// Operands of one lane's comparison.
enum Cmp {
    B32(u32, u32),
    U64(u64, u64),
}

/// The per-lane test of a VOPC operation (`None` for non-comparisons).
fn compare(op: Op) -> Option<fn(Cmp) -> bool> {
    use core::cmp::Ordering::{Equal, Greater, Less};
    use Op::*;
    fn fl(c: Cmp) -> (f32, f32) {
        match c {
            Cmp::B32(a, b) => (f(a), f(b)),
            Cmp::U64(..) => (f32::NAN, f32::NAN),
        }
    }
    fn i(c: Cmp) -> (i32, i32) {
        match c {
            Cmp::B32(a, b) => (a as i32, b as i32),
            Cmp::U64(a, b) => (a as i32, b as i32),
        }
    }
    fn u(c: Cmp) -> (u32, u32) {
        match c {
            Cmp::B32(a, b) => (a, b),
            Cmp::U64(a, b) => (a as u32, b as u32),
        }
    }
    fn q(c: Cmp) -> (u64, u64) {
        match c {
            Cmp::B32(a, b) => (u64::from(a), u64::from(b)),
            Cmp::U64(a, b) => (a, b),
        }
    }
    // Ordered float compares are false on NaN; the `n*` forms are their negations (true on NaN).
    Some(match op {
        VCmpLtF32 | VCmpxLtF32 => |c| {
            let (a, b) = fl(c);
            a < b
        },
        VCmpEqF32 => |c| {
            let (a, b) = fl(c);
            a == b
        },
        VCmpLeF32 => |c| {
            let (a, b) = fl(c);
            a <= b
        },
        VCmpGtF32 | VCmpxGtF32 => |c| {
            let (a, b) = fl(c);
            a > b
        },
        VCmpLgF32 => |c| {
            let (a, b) = fl(c);
            matches!(a.partial_cmp(&b), Some(Less | Greater))
        },
        VCmpGeF32 => |c| {
            let (a, b) = fl(c);
            a >= b
        },
        VCmpOF32 => |c| {
            let (a, b) = fl(c);
            !a.is_nan() && !b.is_nan()
        },
        VCmpUF32 => |c| {
            let (a, b) = fl(c);
            a.is_nan() || b.is_nan()
        },
        VCmpNgeF32 => |c| {
            let (a, b) = fl(c);
            !matches!(a.partial_cmp(&b), Some(Greater | Equal))
        },
        VCmpNlgF32 => |c| {
            let (a, b) = fl(c);
            !matches!(a.partial_cmp(&b), Some(Less | Greater))
        },
        VCmpNgtF32 => |c| {
            let (a, b) = fl(c);
            a.partial_cmp(&b) != Some(Greater)
        },
        VCmpNleF32 => |c| {
            let (a, b) = fl(c);
            !matches!(a.partial_cmp(&b), Some(Less | Equal))
        },
        VCmpNeqF32 => |c| {
            let (a, b) = fl(c);
            a != b
        },
        VCmpNltF32 => |c| {
            let (a, b) = fl(c);
            a.partial_cmp(&b) != Some(Less)
        },
        VCmpLtI32 | VCmpxLtI32 => |c| {
            let (a, b) = i(c);
            a < b
        },
        VCmpEqI32 => |c| {
            let (a, b) = i(c);
            a == b
        },
        VCmpLeI32 => |c| {
            let (a, b) = i(c);
            a <= b
        },
        VCmpGtI32 | VCmpxGtI32 => |c| {
            let (a, b) = i(c);
            a > b
        },
        VCmpNeI32 => |c| {
            let (a, b) = i(c);
            a != b
        },
        VCmpGeI32 => |c| {
            let (a, b) = i(c);
            a >= b
        },
        VCmpLtU32 | VCmpxLtU32 => |c| {
            let (a, b) = u(c);
            a < b
        },
        VCmpEqU32 | VCmpxEqU32 => |c| {
            let (a, b) = u(c);
            a == b
        },
        VCmpLeU32 => |c| {
            let (a, b) = u(c);
            a <= b
        },
        VCmpGtU32 | VCmpxGtU32 => |c| {
            let (a, b) = u(c);
            a > b
        },
        VCmpNeU32 | VCmpxNeU32 => |c| {
            let (a, b) = u(c);
            a != b
        },
        VCmpGeU32 | VCmpxGeU32 => |c| {
            let (a, b) = u(c);
            a >= b
        },
        VCmpLtU64 => |c| {
            let (a, b) = q(c);
            a < b
        },
        VCmpEqU64 => |c| {
            let (a, b) = q(c);
            a == b
        },
        VCmpLeU64 => |c| {
            let (a, b) = q(c);
            a <= b
        },
        VCmpGtU64 | VCmpxGtU64 => |c| {
            let (a, b) = q(c);
            a > b
        },
        VCmpNeU64 => |c| {
            let (a, b) = q(c);
            a != b
        },
        VCmpGeU64 | VCmpxGeU64 => |c| {
            let (a, b) = q(c);
            a >= b
        },
        _ => return None,
    })
}
