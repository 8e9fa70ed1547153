/* qemu_harness: modelrt's qemu-hexagon harness. A static freestanding Hexagon Linux program that loads kernel libraries
 * (the ELF shared objects a hexagon bundle stores), binds their HAP_* imports to stubs, and runs a schedule of
 * launches and copies over a set of buffers exactly as the DSP-side FastRPC skeleton would call each library's
 * `entry` (docs/hw/hexagon-dsp.md). Built with dsp_helpers.c; driven by qcom/hexagon/src/emu/harness over stdin/stdout.
 *
 * stdin (little-endian u32 unless noted):
 *   "MRH1"; nlibs; per library: len, bytes (padded to 4);
 *   nbufs; size per buffer;
 *   nsteps; per step: kind (0 launch, 1 copy);
 *     launch: lib, nargs, nvals, nargs x {buffer, offset, size}, nvals x u64 slot
 *     copy:   dst buffer, dst offset, src buffer, src offset, size
 *     invoke: lib, sc, input length, input bytes (padded to 4), nhandles, nhandles x buffer
 *             (a raw FastRPC invoke: pra[0] = the input, pra[1] = a 16-byte output whose first 8 bytes are
 *             reported as the timer, pra[2..] = the buffers as dma handles; the model library's schedule runner)
 *   then every buffer's contents in order; nout; nout buffer ids to send back.
 * stdout: "MRR1"; nsteps; per step: i32 entry return, u32 instructions, u32 HAP_power_set calls, u32 ops completed
 *   (invoke only), u64 timer written by entry, i32 status (invoke only), u32 0; then the requested buffers' contents.
 * "MRF1" instead runs one dsp_helpers.c helper on vectors (helper_check below), so the helpers are tested where they run.
 * Exit codes: 0 ok; 2 bad input; 3 bad ELF or unsupported relocation; 4 unresolved import (named on stderr);
 *   5 bad HAP_mmap; 6 out of memory. */
typedef unsigned int u32;
typedef unsigned long long u64;
typedef unsigned char u8;

void *memcpy(void *, const void *, unsigned long);
void *memmove(void *, const void *, unsigned long);
void *memset(void *, int, unsigned long);

static long sys6(long a, long b, long c, long d, long e, long f, long nr) {
  long ret;
  __asm__ volatile("r0 = %1; r1 = %2; r2 = %3; r3 = %4; r4 = %5; r5 = %6; r6 = %7; trap0(#1); %0 = r0"
                   : "=r"(ret)
                   : "r"(a), "r"(b), "r"(c), "r"(d), "r"(e), "r"(f), "r"(nr)
                   : "r0", "r1", "r2", "r3", "r4", "r5", "r6", "memory");
  return ret;
}
enum { SYS_READ = 63, SYS_WRITE = 64, SYS_EXIT_GROUP = 94, SYS_MMAP2 = 222 };

static void quit(int code) {
  for (;;) sys6(code, 0, 0, 0, 0, 0, SYS_EXIT_GROUP);
}
static void put(int fd, const void *p, u32 n) {
  const u8 *b = p;
  while (n) {
    long w = sys6(fd, (long)b, n, 0, 0, 0, SYS_WRITE);
    if (w <= 0) quit(2);
    b += w;
    n -= (u32)w;
  }
}
static u32 slen(const char *s) {
  u32 n = 0;
  while (s[n]) n++;
  return n;
}
static void die(int code, const char *what, const char *name) {
  put(2, "qemu_harness: ", 14);
  put(2, what, slen(what));
  if (name) put(2, name, slen(name));
  put(2, "\n", 1);
  quit(code);
}
static u8 *script_pos, *script_end; /* when set, get() reads the in-memory schedule instead of stdin */
static void get(void *p, u32 n) {
  u8 *b = p;
  if (script_pos) {
    if ((u32)(script_end - script_pos) < n) die(2, "truncated schedule", 0);
    memcpy(b, script_pos, n);
    script_pos += n;
    return;
  }
  while (n) {
    long r = sys6(0, (long)b, n, 0, 0, 0, SYS_READ);
    if (r <= 0) die(2, "truncated input", 0);
    b += r;
    n -= (u32)r;
  }
}
static u32 get32(void) {
  u32 v;
  get(&v, 4);
  return v;
}
static void *alloc(u32 n, int exec) {
  if (n == 0) n = 1;
  long p = sys6(0, (n + 0xffff) & ~0xffffu, exec ? 7 : 3, 0x22 /* MAP_PRIVATE|MAP_ANONYMOUS */, -1, 0, SYS_MMAP2);
  if (p < 0 && p > -4096) die(6, "out of memory", 0);
  return (void *)p;
}
static u32 insns(void) { /* control register 21: qemu's instruction counter ("r0 = c21") */
  u32 v;
  __asm__ volatile(".word 0x6a15c000; %0 = r0" : "=r"(v) : : "r0");
  return v;
}

/* ---- buffers and the HAP_* stubs the kernel libraries import ---- */
#define MAX_BUFS 4096
#define FD_BASE 100
static u8 *buf_ptr[MAX_BUFS];
static u32 buf_size[MAX_BUFS], nbufs, power_calls;

static int HAP_power_set(void *ctx, void *req) {
  (void)ctx;
  (void)req;
  power_calls++;
  return 0;
}
static void *HAP_mmap(void *addr, int len, int prot, int flags, int fd, long offset) {
  (void)addr, (void)prot, (void)flags, (void)offset;
  u32 i = (u32)(fd - FD_BASE);
  if (fd < FD_BASE || i >= nbufs || len < 0 || (u32)len > buf_size[i]) die(5, "bad HAP_mmap", 0);
  return buf_ptr[i];
}
static int HAP_munmap(void *addr, int len) {
  (void)addr, (void)len;
  return 0;
}
static u64 HAP_perf_get_time_us(void) { return insns() / 1000; }

static const struct {
  const char *name;
  void *fn;
} imports[] = {{"HAP_power_set", (void *)HAP_power_set},
               {"HAP_mmap", (void *)HAP_mmap},
               {"HAP_munmap", (void *)HAP_munmap},
               {"HAP_perf_get_time_us", (void *)HAP_perf_get_time_us}};

/* ---- ELF32 Hexagon shared-object loader ---- */
typedef int (*entry_fn)(u64 handle, u32 sc, void *pra);
#define MAX_LIBS 1024
static entry_fn lib_entry[MAX_LIBS];

static u32 rd32(const u8 *p) { return p[0] | p[1] << 8 | p[2] << 16 | (u32)p[3] << 24; }
static int streq(const char *a, const char *b) {
  while (*a && *a == *b) a++, b++;
  return *a == *b;
}

static entry_fn load(const u8 *f, u32 len) {
  if (len < 52 || rd32(f) != 0x464c457f || f[4] != 1 || f[5] != 1 || (f[16] | f[17] << 8) != 3 ||
      (f[18] | f[19] << 8) != 164)
    die(3, "not a 32-bit little-endian Hexagon shared object", 0);
  u32 phoff = rd32(f + 28), phent = f[42] | f[43] << 8, phnum = f[44] | f[45] << 8, span = 0, dyn = 0;
  if (phent != 32 || phoff > len || phnum > (len - phoff) / 32) die(3, "bad program headers", 0);
  for (u32 i = 0; i < phnum; i++) {
    const u8 *ph = f + phoff + i * 32;
    if (rd32(ph) != 1) continue;
    if (rd32(ph + 8) > (64u << 20) || rd32(ph + 20) > (64u << 20)) die(3, "PT_LOAD too large", 0);
    if (rd32(ph + 8) + rd32(ph + 20) > span) span = rd32(ph + 8) + rd32(ph + 20);
  }
  if (span == 0 || span > (64u << 20)) die(3, "bad PT_LOAD span", 0);
  u8 *raw = alloc(span + 0x10000, 1);
  u8 *base = (u8 *)(((u32)raw + 0xffff) & ~0xffffu); /* 64 KiB-aligned like the device loader's p_align */
  for (u32 i = 0; i < phnum; i++) {
    const u8 *ph = f + phoff + i * 32;
    u32 type = rd32(ph), off = rd32(ph + 4), va = rd32(ph + 8), fsz = rd32(ph + 16), msz = rd32(ph + 20);
    if (type == 2) dyn = va;
    if (type != 1) continue;
    if (fsz > msz || off > len || fsz > len - off) die(3, "PT_LOAD outside the file", 0);
    memcpy(base + va, f + off, fsz);
  }
  if (!dyn || dyn >= span - 8) die(3, "no PT_DYNAMIC inside the image", 0);
  u32 hash = 0, strtab = 0, symtab = 0, rela[2] = {0, 0}, relasz[2] = {0, 0};
  for (const u8 *d = base + dyn; rd32(d) != 0; d += 8) {
    if (d + 16 > base + span) die(3, "unterminated dynamic section", 0);
    u32 tag = rd32(d), val = rd32(d + 4);
    if (tag == 4) hash = val;
    if (tag == 5) strtab = val;
    if (tag == 6) symtab = val;
    if (tag == 7) rela[0] = val;
    if (tag == 8) relasz[0] = val;
    if (tag == 23) rela[1] = val;
    if (tag == 2) relasz[1] = val;
    if (tag == 20 && val != 7) die(3, "PLT relocations are not RELA", 0);
  }
  if (!hash || !strtab || !symtab) die(3, "no DT_HASH/DT_STRTAB/DT_SYMTAB", 0);
  if (hash > span - 8 || strtab >= span || symtab >= span) die(3, "dynamic tables outside the image", 0);
  u32 nsyms = rd32(base + hash + 4);
  if (nsyms > (span - symtab) / 16) die(3, "symbol table outside the image", 0);
  for (int t = 0; t < 2; t++)
    if (rela[t] > span || relasz[t] > span - rela[t]) die(3, "relocations outside the image", 0);
  for (int t = 0; t < 2; t++) {
    for (u32 r = 0; r < relasz[t] / 12; r++) {
      const u8 *re = base + rela[t] + r * 12;
      u32 off = rd32(re), info = rd32(re + 4), add = rd32(re + 8), type = info & 0xff, sym = info >> 8, s = 0;
      if (off > span - 4) die(3, "relocation outside the image", 0);
      if (sym) {
        if (sym >= nsyms) die(3, "relocation symbol out of range", 0);
        const u8 *st = base + symtab + sym * 16;
        if (rd32(st) >= span - strtab) die(3, "symbol name outside the image", 0);
        const char *name = (const char *)base + strtab + rd32(st);
        if ((st[14] | st[15] << 8) != 0) {
          s = (u32)base + rd32(st + 4);
        } else {
          for (u32 k = 0; k < sizeof imports / sizeof imports[0]; k++)
            if (streq(name, imports[k].name)) s = (u32)imports[k].fn;
          if (!s) die(4, "unresolved import: ", name);
        }
      }
      u32 *at = (u32 *)(base + off);
      if (type == 6 || type == 33 || type == 34) *at = s + add; /* R_HEX_32, GLOB_DAT, JMP_SLOT */
      else if (type == 35) *at = (u32)base + add;                 /* R_HEX_RELATIVE */
      else if (type != 0) die(3, "unsupported relocation type", 0);
    }
  }
  for (u32 i = 1; i < nsyms; i++) {
    const u8 *st = base + symtab + i * 16;
    if ((st[14] | st[15] << 8) != 0 && rd32(st) < span - strtab && streq((const char *)base + strtab + rd32(st), "entry"))
      return (entry_fn)(base + rd32(st + 4));
  }
  die(3, "no `entry` symbol", 0);
  return 0;
}

/* ---- the schedule ---- */
typedef struct {
  void *pv;
  u32 len;
} remote_buf;
#define MAX_ARGS 15

struct result {
  int ret;
  u32 insns, power, ops;
  u64 timer;
  int status;
  u32 zero;
};

static void launch(struct result *res) {
  u32 lib = get32(), nargs = get32(), nvals = get32();
  u64 slots[MAX_ARGS + 64];
  u32 offs[MAX_ARGS];
  remote_buf pra[3 + MAX_ARGS];
  u64 timer = 0;
  if (lib >= MAX_LIBS || !lib_entry[lib] || nargs > MAX_ARGS || nvals > 64) die(2, "bad launch header", 0);
  for (u32 i = 0; i < nargs; i++) {
    u32 b = get32(), off = get32(), size = get32();
    if (b >= nbufs || off > buf_size[b] || size > buf_size[b] - off) die(2, "launch argument outside its buffer", 0);
    slots[i] = size; /* the skeleton passes each buffer's size in its 8-byte slot (read as int) */
    offs[i] = off;
    pra[3 + i].pv = (void *)(FD_BASE + b); /* the dma view of a handle: {fd, offset} */
    pra[3 + i].len = 0;
  }
  for (u32 i = 0; i < nvals; i++) get(&slots[nargs + i], 8);
  pra[0].pv = slots, pra[0].len = 8 * (nargs + nvals);
  pra[1].pv = offs, pra[1].len = 4 * nargs;
  pra[2].pv = &timer, pra[2].len = 8;
  power_calls = 0;
  u32 t0 = insns();
  res->ret = lib_entry[lib](0x1234, 0x02020100u | nargs, pra);
  res->insns = insns() - t0;
  res->power = power_calls;
  res->timer = timer;
}

static void invoke(struct result *res) {
  u32 lib = get32(), sc = get32(), len = get32();
  if (lib >= MAX_LIBS || !lib_entry[lib] || len > (16u << 20)) die(2, "bad invoke header", 0);
  u32 *in = alloc(len + 4, 0);
  get(in, (len + 3) & ~3u);
  u32 nh = get32();
  u64 out[2] = {0, 0};
  remote_buf pra[2 + MAX_ARGS];
  if (nh > MAX_ARGS) die(2, "too many invoke handles", 0);
  for (u32 i = 0; i < nh; i++) {
    u32 b = get32();
    if (b >= nbufs) die(2, "invoke handle outside the buffers", 0);
    pra[2 + i].pv = (void *)(FD_BASE + b);
    pra[2 + i].len = 0;
  }
  pra[0].pv = in, pra[0].len = len;
  pra[1].pv = out, pra[1].len = 16;
  power_calls = 0;
  u32 t0 = insns();
  res->ret = lib_entry[lib](0x1234, sc, pra);
  res->insns = insns() - t0;
  res->power = power_calls;
  res->timer = out[0];
  res->ops = (u32)out[1];               /* ops completed */
  res->status = (int)(u32)(out[1] >> 32); /* the failing kernel's return value */
}

/* ---- helper-library check: "MRF1", function id, count, count x {u64 a, u64 b} -> "MRF1", count x u64 ---- */
u32 __hexagon_udivsi3(u32, u32), __hexagon_umodsi3(u32, u32);
int __hexagon_divsi3(int, int), __hexagon_modsi3(int, int);
u64 __hexagon_udivdi3(u64, u64), __hexagon_umoddi3(u64, u64);
long long __hexagon_divdi3(long long, long long), __hexagon_moddi3(long long, long long);
float truncf(float), __extendhfsf2(u32);
u32 __truncsfhf2(float);

static u64 helper(u32 fn, u64 a, u64 b) {
  union {
    float f;
    u32 u;
  } v = {.u = (u32)a};
  switch (fn) {
  case 0: return __hexagon_udivsi3((u32)a, (u32)b);
  case 1: return (u32)__hexagon_divsi3((int)a, (int)b);
  case 2: return __hexagon_umodsi3((u32)a, (u32)b);
  case 3: return (u32)__hexagon_modsi3((int)a, (int)b);
  case 4: return __hexagon_udivdi3(a, b);
  case 5: return (u64)__hexagon_divdi3((long long)a, (long long)b);
  case 6: return __hexagon_umoddi3(a, b);
  case 7: return (u64)__hexagon_moddi3((long long)a, (long long)b);
  case 8: v.f = truncf(v.f); return v.u;
  case 9: v.f = __extendhfsf2((u32)a & 0xffff); return v.u;
  case 10: return __truncsfhf2(v.f) & 0xffff;
  default: die(2, "unknown helper function", 0);
  }
  return 0;
}

static void helper_check(void) {
  u32 fn = get32(), n = get32();
  u64 in[2], out[256];
  put(1, "MRF1", 4);
  while (n) {
    u32 k = n < 256 ? n : 256;
    for (u32 i = 0; i < k; i++) {
      get(in, 16);
      out[i] = helper(fn, in[0], in[1]);
    }
    put(1, out, 8 * k);
    n -= k;
  }
  quit(0);
}

/* Steps are read before buffer contents, so they are kept as a byte script and replayed. */
void _start(void) {
  u32 magic = get32();
  if (magic == 0x3146524d) helper_check();
  if (magic != 0x3148524d) die(2, "bad magic (want MRH1 or MRF1)", 0);
  u32 nlibs = get32();
  if (nlibs > MAX_LIBS) die(2, "too many libraries", 0);
  for (u32 i = 0; i < nlibs; i++) {
    u32 len = get32();
    if (len > (64u << 20)) die(2, "library too large", 0);
    u8 *tmp = alloc(len + 4, 0);
    get(tmp, (len + 3) & ~3u);
    lib_entry[i] = load(tmp, len);
  }
  nbufs = get32();
  if (nbufs > MAX_BUFS) die(2, "too many buffers", 0);
  for (u32 i = 0; i < nbufs; i++) {
    buf_size[i] = get32();
    buf_ptr[i] = alloc(buf_size[i], 0); /* 64 KiB-aligned: every buffer start is 128-byte aligned */
  }
  u32 nsteps = get32(), script_len = get32();
  if (script_len > (64u << 20)) die(2, "schedule too large", 0);
  u8 *script = alloc(script_len, 0);
  get(script, script_len);
  for (u32 i = 0; i < nbufs; i++) get(buf_ptr[i], buf_size[i]);
  u32 nout = get32();
  if (nout > nbufs) die(2, "too many outputs", 0);
  u32 *outs = alloc(4 * nout, 0);
  for (u32 i = 0; i < nout; i++)
    if ((outs[i] = get32()) >= nbufs) die(2, "output buffer out of range", 0);
  struct result *res = alloc(sizeof(struct result) * (nsteps ? nsteps : 1), 0);
  /* replay the script through the same reader: swap stdin for the in-memory script */
  script_pos = script, script_end = script + script_len;
  for (u32 s = 0; s < nsteps; s++) {
    u32 kind = get32();
    memset(&res[s], 0, sizeof res[s]);
    if (kind == 0) {
      launch(&res[s]);
    } else if (kind == 2) {
      invoke(&res[s]);
    } else if (kind == 1) {
      u32 db = get32(), doff = get32(), sb = get32(), soff = get32(), n = get32();
      if (db >= nbufs || sb >= nbufs || doff > buf_size[db] || n > buf_size[db] - doff || soff > buf_size[sb] ||
          n > buf_size[sb] - soff)
        die(2, "copy outside its buffers", 0);
      memmove(buf_ptr[db] + doff, buf_ptr[sb] + soff, n);
    } else {
      die(2, "bad step kind", 0);
    }
  }
  if (script_pos != script_end) die(2, "schedule has trailing bytes", 0);
  put(1, "MRR1", 4);
  put(1, &nsteps, 4);
  put(1, res, sizeof(struct result) * nsteps);
  for (u32 i = 0; i < nout; i++) put(1, buf_ptr[outs[i]], buf_size[outs[i]]);
  quit(0);
}
