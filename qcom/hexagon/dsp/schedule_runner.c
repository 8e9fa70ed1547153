/* modelrt's DSP-side schedule runner: the `entry` of a hexagon bundle's model library (docs/hexagon.md, "One
 * invoke per step"). The exporter links every kernel of the bundle into one shared object with this file, the
 * helper library (dsp_helpers.c) and a generated dispatcher `mrt_call(k, handle, sc, pra)` that calls kernel k's FastRPC
 * wrapper (each kernel's `entry`, renamed). The host then runs a whole step with ONE invoke:
 *
 *   sc = 0x03010100 | narenas (method 3, 1 input buffer, 1 output buffer, narenas dma handles, narenas <= 15)
 *   pra[0]  in:  the schedule table (below)
 *   pra[1]  out: 16 bytes {u64 microseconds spent, u32 ops completed, i32 status (0 ok)}
 *   pra[2+i] handle: arena i as a dma-buf {fd, offset 0}
 *
 * Table, little-endian u32 words: "MRS1", nops, narenas, narenas x arena size; then per op
 *   kind 0 launch: kernel, nbufs (<= 15), nvals (<= 64), nbufs x {arena, offset, size}, nvals x u64 (two words)
 *   kind 1 copy:   dst arena, dst offset, src arena, src offset, size
 * A launch calls the kernel's wrapper exactly as FastRPC would for a single launch (sc 0x02020100 | nbufs), with
 * each buffer's dma handle = its arena's fd and its slot = offset + size: the wrapper maps `slot` bytes of the fd
 * from offset 0 and adds the offset, so the mapping covers the view. Copies memmove inside the mapped arenas.
 * Every reference is checked against the table's arena sizes before anything runs; any violation returns -1
 * before a kernel is called. A kernel returning non-zero stops the step: status = its return value, ops = its
 * index, entry returns 1. Other methods (the loader's calls) return 0 untouched. */
typedef unsigned int u32;
typedef unsigned long long u64;
typedef union {
  struct {
    void *pv;
    unsigned int len;
  } buf;
  struct {
    int fd;
    unsigned int offset;
  } dma;
} remote_arg;

void *HAP_mmap(void *addr, int len, int prot, int flags, int fd, long offset);
int HAP_munmap(void *addr, int len);
unsigned long long HAP_perf_get_time_us(void);
void *memmove(void *, const void *, unsigned long);
int mrt_call(u32 kernel, u64 handle, u32 sc, remote_arg *pra); /* generated: -1 for an unknown kernel */
extern const u32 mrt_nkernels;                                  /* generated */

#define MAX_ARENAS 15
#define MAX_BUFS 15
#define MAX_VALS 64
#define ALIGN 128

static u32 word(const u32 *t, u32 n, u32 *at, int *bad) {
  if (*at >= n) {
    *bad = 1;
    return 0;
  }
  return t[(*at)++];
}

/* One pass over the table; with run == 0 only checks it, with run != 0 executes it. Returns 0, -1 (bad table) or
 * 1 (a kernel failed; status and index in out). */
static int walk(const u32 *t, u32 n, remote_arg *pra, u32 narenas, unsigned char **base, int run, u32 *out) {
  u32 at = 0;
  int bad = 0;
  if (word(t, n, &at, &bad) != 0x3153524d) return -1;
  u32 nops = word(t, n, &at, &bad), na = word(t, n, &at, &bad), size[MAX_ARENAS];
  if (bad || na != narenas) return -1;
  for (u32 i = 0; i < na; i++) size[i] = word(t, n, &at, &bad);
  for (u32 op = 0; op < nops && !bad; op++) {
    u32 kind = word(t, n, &at, &bad);
    if (kind == 0) {
      u32 k = word(t, n, &at, &bad), nb = word(t, n, &at, &bad), nv = word(t, n, &at, &bad);
      u64 slots[MAX_BUFS + MAX_VALS], timer = 0;
      u32 offs[MAX_BUFS];
      remote_arg kpra[3 + MAX_BUFS];
      if (bad || k >= mrt_nkernels || nb > MAX_BUFS || nv > MAX_VALS) return -1;
      for (u32 i = 0; i < nb; i++) {
        u32 a = word(t, n, &at, &bad), off = word(t, n, &at, &bad), sz = word(t, n, &at, &bad);
        if (bad || a >= na || off % ALIGN || off > size[a] || sz > size[a] - off || off + sz > 0x7fffffffu) return -1;
        slots[i] = off + sz;
        offs[i] = off;
        kpra[3 + i].dma.fd = pra[2 + a].dma.fd;
        kpra[3 + i].dma.offset = 0;
      }
      for (u32 i = 0; i < nv; i++) {
        u32 lo = word(t, n, &at, &bad), hi = word(t, n, &at, &bad);
        slots[nb + i] = (u64)hi << 32 | lo;
      }
      if (bad) return -1;
      if (!run) continue;
      kpra[0].buf.pv = slots, kpra[0].buf.len = 8 * (nb + nv);
      kpra[1].buf.pv = offs, kpra[1].buf.len = 4 * nb;
      kpra[2].buf.pv = &timer, kpra[2].buf.len = 8;
      int r = mrt_call(k, 0, 0x02020100u | nb, kpra);
      if (r != 0) {
        out[0] = op;
        out[1] = (u32)r;
        return 1;
      }
    } else if (kind == 1) {
      u32 da = word(t, n, &at, &bad), doff = word(t, n, &at, &bad), sa = word(t, n, &at, &bad),
          soff = word(t, n, &at, &bad), sz = word(t, n, &at, &bad);
      if (bad || da >= na || sa >= na || doff > size[da] || sz > size[da] - doff || soff > size[sa] ||
          sz > size[sa] - soff)
        return -1;
      if (run) memmove(base[da] + doff, base[sa] + soff, sz);
    } else {
      return -1;
    }
    if (run) out[0] = op + 1;
  }
  if (bad || at != n) return -1;
  return 0;
}

__attribute__((visibility("default"))) int entry(unsigned long long handle, unsigned int sc, remote_arg *pra) {
  (void)handle;
  if ((sc >> 24) != 3) return 0;
  u32 narenas = sc & 0xf;
  if (((sc >> 16) & 0xff) != 1 || ((sc >> 8) & 0xff) != 1 || ((sc >> 4) & 0xf) != 0 || narenas == 0) return -1;
  if (pra[1].buf.len != 16 || pra[0].buf.len % 4) return -1;
  const u32 *t = pra[0].buf.pv;
  u32 n = pra[0].buf.len / 4, out[2] = {0, 0};
  unsigned char *base[MAX_ARENAS];
  if (walk(t, n, pra, narenas, base, 0, out) != 0) return -1;
  for (u32 i = 0; i < narenas; i++) {
    base[i] = HAP_mmap(0, (int)t[3 + i], 3, 0, pra[2 + i].dma.fd, 0);
    if (!base[i] || base[i] == (unsigned char *)-1) return -1;
  }
  u64 start = HAP_perf_get_time_us();
  int r = walk(t, n, pra, narenas, base, 1, out);
  u64 us = HAP_perf_get_time_us() - start;
  for (u32 i = 0; i < narenas; i++) HAP_munmap(base[i], (int)t[3 + i]);
  u32 *res = pra[1].buf.pv;
  res[0] = (u32)us, res[1] = (u32)(us >> 32), res[2] = out[0], res[3] = out[1];
  return r == 0 ? 0 : 1;
}
