/* modelrt Hexagon helper library: the few runtime routines a -nostdlib kernel needs (no compiler-rt or libc
 * exists for Hexagon here). Linked with hidden visibility into every kernel library and into the qemu harness,
 * so a kernel's only dynamic imports stay the HAP_* calls. Written from the C semantics (truncation toward zero,
 * IEEE-754 binary16 with round-to-nearest-even); see docs/hw/hexagon-dsp.md. Must be built with -fno-builtin so
 * clang does not turn these loops back into calls to themselves. */
#define HID __attribute__((visibility("hidden")))
typedef unsigned int u32;
typedef unsigned long long u64;
typedef long long i64;
typedef unsigned long usize; /* 32-bit on Hexagon */

HID void *memset(void *dst, int c, usize n) {
  unsigned char *d = dst;
  while (n--) *d++ = (unsigned char)c;
  return dst;
}

HID void *memcpy(void *dst, const void *src, usize n) {
  unsigned char *d = dst;
  const unsigned char *s = src;
  while (n--) *d++ = *s++;
  return dst;
}

HID void *memmove(void *dst, const void *src, usize n) {
  unsigned char *d = dst;
  const unsigned char *s = src;
  if (d < s) {
    while (n--) *d++ = *s++;
  } else {
    d += n;
    s += n;
    while (n--) *--d = *--s;
  }
  return dst;
}

/* Restoring shift-subtract division; a zero divisor gives quotient all-ones and remainder n (C leaves it undefined). */
static u64 udivmod64(u64 n, u64 d, u64 *rem) {
  u64 q = 0, r = 0;
  for (int i = 63; i >= 0; i--) {
    u64 carry = r >> 63;
    r = (r << 1) | ((n >> i) & 1);
    if (carry || r >= d) {
      r -= d;
      q |= 1ull << i;
    }
  }
  *rem = r;
  return q;
}

static u32 udivmod32(u32 n, u32 d, u32 *rem) {
  u64 r = 0;
  u32 q = 0;
  for (int i = 31; i >= 0; i--) {
    r = (r << 1) | ((n >> i) & 1);
    if (r >= d) {
      r -= d;
      q |= 1u << i;
    }
  }
  *rem = (u32)r;
  return q;
}

HID u32 __hexagon_udivsi3(u32 n, u32 d) { u32 r; return udivmod32(n, d, &r); }
HID u32 __hexagon_umodsi3(u32 n, u32 d) { u32 r; udivmod32(n, d, &r); return r; }
HID int __hexagon_divsi3(int n, int d) {
  u32 r, q = udivmod32(n < 0 ? -(u32)n : (u32)n, d < 0 ? -(u32)d : (u32)d, &r);
  return (int)(((n < 0) != (d < 0)) ? -q : q);
}
HID int __hexagon_modsi3(int n, int d) {
  u32 r;
  udivmod32(n < 0 ? -(u32)n : (u32)n, d < 0 ? -(u32)d : (u32)d, &r);
  return (int)(n < 0 ? -r : r);
}
HID u64 __hexagon_udivdi3(u64 n, u64 d) { u64 r; return udivmod64(n, d, &r); }
HID u64 __hexagon_umoddi3(u64 n, u64 d) { u64 r; udivmod64(n, d, &r); return r; }
HID i64 __hexagon_divdi3(i64 n, i64 d) {
  u64 r, q = udivmod64(n < 0 ? -(u64)n : (u64)n, d < 0 ? -(u64)d : (u64)d, &r);
  return (i64)(((n < 0) != (d < 0)) ? -q : q);
}
HID i64 __hexagon_moddi3(i64 n, i64 d) {
  u64 r;
  udivmod64(n < 0 ? -(u64)n : (u64)n, d < 0 ? -(u64)d : (u64)d, &r);
  return (i64)(n < 0 ? -r : r);
}

typedef union {
  float f;
  u32 u;
} fbits;

/* Round toward zero: clear the fraction bits below the binary point; NaN and infinities pass through. */
HID float truncf(float x) {
  fbits v = {x};
  int e = (int)((v.u >> 23) & 0xff) - 127;
  if (e >= 23) return x;
  if (e < 0) {
    v.u &= 0x80000000u;
    return v.f;
  }
  v.u &= ~((1u << (23 - e)) - 1);
  return v.f;
}

/* binary16 -> binary32 (exact). The half arrives in the low 16 bits of a register. */
HID float __extendhfsf2(u32 h) {
  u32 s = (h & 0x8000u) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff;
  fbits v;
  if (e == 0x1f) {
    v.u = s | 0x7f800000u | (m << 13);
  } else if (e == 0) {
    if (m == 0) {
      v.u = s;
    } else { /* subnormal: normalise */
      u32 k = 0;
      while (!(m & 0x400)) {
        m <<= 1;
        k++;
      }
      v.u = s | ((113u - k) << 23) | ((m & 0x3ff) << 13);
    }
  } else {
    v.u = s | ((e + 112) << 23) | (m << 13);
  }
  return v.f;
}

/* binary32 -> binary16, round to nearest, ties to even; NaN stays NaN (quiet), overflow gives infinity. */
HID u32 __truncsfhf2(float f) {
  fbits v = {f};
  u32 s = (v.u >> 16) & 0x8000u, e = (v.u >> 23) & 0xff, m = v.u & 0x7fffff;
  if (e == 0xff) return s | 0x7c00u | (m ? 0x200u | (m >> 13) : 0);
  int he = (int)e - 112; /* biased half exponent */
  if (he >= 0x1f) return s | 0x7c00u;
  u32 q, rem, half;
  if (he <= 0) { /* half subnormal (or zero): count units of 2^-24 */
    int shift = 14 - he;
    if (shift > 24) return s;
    u32 mm = m | 0x800000u;
    q = mm >> shift;
    rem = mm & ((1u << shift) - 1);
    half = 1u << (shift - 1);
  } else {
    q = ((u32)he << 10) | (m >> 13);
    rem = m & 0x1fff;
    half = 0x1000;
  }
  if (rem > half || (rem == half && (q & 1))) q++;
  return s | q;
}
