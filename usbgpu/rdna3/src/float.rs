//! Floating-point rules of the RDNA3 VALU as this interpreter models them (docs/hw/rdna3-isa.md §7 and
//! §8), for kernels in the mode every tinygrad kernel
//! requests: round-to-nearest-even, denormals preserved (FLOAT_DENORM_MODE 3), IEEE_MODE = 1,
//! DX10_CLAMP = 1. The dispatcher refuses other modes rather than pretend.
//!
//! - Basic arithmetic is the host's IEEE-754 binary32 arithmetic (RNE, denormals kept).
//! - `v_fma_f32`/`v_fmac_f32`/`v_fma_mix_f32` are fused: one rounding ([`fma`]).
//! - min/max in IEEE mode: a signalling NaN input gives a quiet NaN; one quiet NaN gives the other
//!   operand; −0 orders below +0 ([`max`], [`min`]).
//! - float→int conversions saturate, NaN → 0 ([`cvt_i32`], [`cvt_u32`]).
//! - Transcendentals (`v_exp/log/rcp/rsq/sqrt/sin/cos`): the hardware's algorithm is not public
//!   (the ISA promises ≈1 ULP). The reference here is the exact result rounded to f32, computed in
//!   f64 with the host's libm and rounded once: correct to ≤ 0.5 ULP except where the f64 value
//!   itself sits within an f64 ULP of an f32 rounding boundary (double rounding; rare).
//!   Special values follow the ISA tables: rcp(±0) = ±inf, rsq(+0) = +inf, rsq(−0) = −inf,
//!   rsq/sqrt/log of a negative = NaN, log(±0) = −inf, exp(−inf) = +0.

/// The canonical quiet NaN the VALU produces.
pub const QNAN: u32 = 0x7fc0_0000;

/// Whether bits `a` are a signalling f32 NaN.
pub fn is_snan(a: u32) -> bool {
    a & 0x7f80_0000 == 0x7f80_0000 && a & 0x007f_ffff != 0 && a & 0x0040_0000 == 0
}

fn is_nan(a: u32) -> bool {
    a & 0x7fff_ffff > 0x7f80_0000
}

fn quiet(a: u32) -> u32 {
    a | 0x0040_0000
}

/// IEEE-mode maximum of two f32 bit patterns.
pub fn max(a: u32, b: u32) -> u32 {
    minmax(a, b, true)
}

/// IEEE-mode minimum of two f32 bit patterns.
pub fn min(a: u32, b: u32) -> u32 {
    minmax(a, b, false)
}

fn minmax(a: u32, b: u32, want_max: bool) -> u32 {
    if is_snan(a) {
        return quiet(a);
    }
    if is_snan(b) {
        return quiet(b);
    }
    match (is_nan(a), is_nan(b)) {
        (true, true) => return a,
        (true, false) => return b,
        (false, true) => return a,
        _ => {}
    }
    let (fa, fb) = (f32::from_bits(a), f32::from_bits(b));
    if fa == fb {
        // ±0: −0 < +0.
        let a_neg = a >> 31 == 1;
        return if a_neg == want_max { b } else { a };
    }
    if (fa > fb) == want_max {
        a
    } else {
        b
    }
}

/// Median of three (`v_med3_f32`, IEEE mode: NaN inputs propagate through min/max).
pub fn med3(a: u32, b: u32, c: u32) -> u32 {
    max(min(a, b), min(max(a, b), c))
}

/// Fused multiply-add with a single rounding.
///
/// Fast path: the product of two f32 is exact in f64, and the f64 sum is correctly rounded to f64;
/// rounding that to f32 can only differ from a single rounding when the f64 sum sits exactly on a
/// midpoint between two f32 values (a second rounding then decides a tie the exact value may not
/// be on). Those rare cases go to the host's correctly rounded `mul_add`.
pub fn fma(a: u32, b: u32, c: u32) -> u32 {
    let (x, y, z) = (f32::from_bits(a), f32::from_bits(b), f32::from_bits(c));
    let s = f64::from(x) * f64::from(y) + f64::from(z);
    if is_f32_midpoint(s) {
        return x.mul_add(y, z).to_bits();
    }
    (s as f32).to_bits()
}

/// [`fma`] over a whole wave: the f64 path for every lane (branch-free, so it vectorises), and the
/// exact per-lane path only when some lane's f64 sum is a midpoint or in the f32 subnormal range.
pub fn fma_lanes(a: &[u32; 32], b: &[u32; 32], c: &[u32; 32]) -> [u32; 32] {
    let mut r = [0u32; 32];
    let mut slow = false;
    for l in 0..32 {
        let (x, y, z) = (
            f32::from_bits(a[l]),
            f32::from_bits(b[l]),
            f32::from_bits(c[l]),
        );
        let s = f64::from(x) * f64::from(y) + f64::from(z);
        let mid = s.to_bits() & 0x1fff_ffff == 0x1000_0000;
        let tiny = s.abs() < f64::from(f32::MIN_POSITIVE) && s != 0.0;
        slow |= mid | tiny;
        r[l] = (s as f32).to_bits();
    }
    if slow {
        for l in 0..32 {
            r[l] = fma(a[l], b[l], c[l]);
        }
    }
    r
}

/// Whether finite `s` lies exactly halfway between two adjacent f32 values.
fn is_f32_midpoint(s: f64) -> bool {
    let a = s.abs();
    if !a.is_finite() {
        return false;
    }
    if a >= f64::from(f32::MIN_POSITIVE) {
        // Normal f32 range: the 29 mantissa bits f32 drops are exactly "1000…0".
        s.to_bits() & 0x1fff_ffff == 0x1000_0000
    } else {
        // Subnormal f32 range: spacing 2^-149, so a midpoint is an odd multiple of 2^-150.
        let m = a * f64::from_bits((1023 + 150) << 52);
        (m as u64) as f64 == m && (m as u64) & 1 == 1
    }
}

/// f32 → i32, saturating, NaN → 0, truncating toward zero.
pub fn cvt_i32(a: u32) -> u32 {
    // Rust's `as` has exactly these semantics.
    (f32::from_bits(a) as i32) as u32
}

/// f32 → u32, saturating (negatives → 0), NaN → 0, truncating toward zero.
pub fn cvt_u32(a: u32) -> u32 {
    f32::from_bits(a) as u32
}

/// `v_ldexp_f32`: a × 2^n, rounded once (denormal results kept).
pub fn ldexp(a: u32, n: i32) -> u32 {
    let x = f32::from_bits(a);
    if x.is_nan() {
        return quiet(a);
    }
    let n = n.clamp(-600, 600);
    // Two normal f64 powers of two: both products are exact in f64, so the only rounding is the
    // final one to f32.
    let half = n / 2;
    let p = |e: i32| f64::from_bits(((e + 1023) as u64) << 52);
    (((f64::from(x) * p(half)) * p(n - half)) as f32).to_bits()
}

/// Clamp to [0, 1] with NaN → 0 (the VOP3 `clamp` bit under DX10_CLAMP).
pub fn clamp01(a: u32) -> u32 {
    let x = f32::from_bits(a);
    if x.is_nan() || x <= 0.0 {
        0
    } else if x >= 1.0 {
        0x3f80_0000
    } else {
        a
    }
}

fn via_f64(a: u32, f: impl Fn(f64) -> f64) -> u32 {
    (f(f64::from(f32::from_bits(a))) as f32).to_bits()
}

/// `v_exp_f32`: 2^a.
pub fn exp2(a: u32) -> u32 {
    via_f64(a, f64::exp2)
}

/// `v_log_f32`: log2(a); log2(±0) = −inf, negative → NaN.
pub fn log2(a: u32) -> u32 {
    if a & 0x7fff_ffff == 0 {
        return 0xff80_0000;
    }
    via_f64(a, f64::log2)
}

/// `v_rcp_f32` / `v_rcp_iflag_f32`: 1/a, correctly rounded.
pub fn rcp(a: u32) -> u32 {
    (1.0 / f32::from_bits(a)).to_bits()
}

/// `v_sqrt_f32`: correctly rounded square root (sqrt(−0) = −0).
pub fn sqrt(a: u32) -> u32 {
    f32::from_bits(a).sqrt().to_bits()
}

/// `v_rsq_f32`: 1/sqrt(a); rsq(+0) = +inf, rsq(−0) = −inf, negative → NaN.
pub fn rsq(a: u32) -> u32 {
    via_f64(a, |x| 1.0 / x.sqrt())
}

/// `v_sin_f32`: sin(2π·a) (the input is in revolutions).
pub fn sin(a: u32) -> u32 {
    via_f64(a, |x| (x * core::f64::consts::TAU).sin())
}

/// `v_cos_f32`: cos(2π·a).
pub fn cos(a: u32) -> u32 {
    via_f64(a, |x| (x * core::f64::consts::TAU).cos())
}

/// `v_fract_f32`: a − floor(a), kept below 1.0; NaN/inf → NaN.
pub fn fract(a: u32) -> u32 {
    let x = f32::from_bits(a);
    if !x.is_finite() {
        return QNAN;
    }
    (x - x.floor()).min(f32::from_bits(0x3f7f_ffff)).to_bits()
}

/// Apply the unary f32 rounding `f` to bits (NaN inputs come back quiet).
pub fn round_with(a: u32, f: fn(f32) -> f32) -> u32 {
    if is_nan(a) {
        return quiet(a);
    }
    f(f32::from_bits(a)).to_bits()
}
