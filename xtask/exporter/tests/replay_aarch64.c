/* Test-only aarch64 replayer for check_manifest_aarch64.py (runs under qemu-aarch64 on an x86 host).
 * Reads a "plan" (little-endian u64 words, produced by the Python side from a cpu-aarch64 manifest): memory regions to
 * map at fixed addresses (buffers, relocated kernel images), the ops to run in order, and the output regions to dump.
 *   "MRTPLAN1" | n_regions {addr size exec data_len data[pad8]} | n_ops {0 fn nthreads core_pos nargs args[] | 1 dst src size}
 *   | n_outs {addr size}
 * Outputs are written raw to stdout. Any malformed plan or mapping failure exits with code 3. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

typedef uint64_t u64;
typedef void (*kfn)(u64, u64, u64, u64, u64, u64, u64, u64, u64, u64, u64, u64, u64, u64, u64, u64);

static FILE *plan;
static u64 rd(void) {
  u64 v;
  if (fread(&v, 8, 1, plan) != 1) { fprintf(stderr, "replay: truncated plan\n"); exit(3); }
  return v;
}

int main(int argc, char **argv) {
  if (argc != 2 || !(plan = fopen(argv[1], "rb"))) { fprintf(stderr, "usage: replay PLAN\n"); return 3; }
  char magic[8];
  if (fread(magic, 8, 1, plan) != 1 || memcmp(magic, "MRTPLAN1", 8)) { fprintf(stderr, "replay: bad magic\n"); return 3; }
  u64 nreg = rd();
  for (u64 i = 0; i < nreg; i++) {
    u64 addr = rd(), size = rd(), exec = rd(), dlen = rd();
    void *p = mmap((void *)addr, size, PROT_READ | PROT_WRITE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED || (u64)p != addr || dlen > size) { fprintf(stderr, "replay: cannot map region %llu\n", (unsigned long long)i); return 3; }
    if (dlen && fread(p, 1, dlen, plan) != dlen) { fprintf(stderr, "replay: truncated region data\n"); return 3; }
    if (dlen % 8) fseek(plan, 8 - dlen % 8, SEEK_CUR);
    if (exec) {
      __builtin___clear_cache((char *)p, (char *)p + size);
      if (mprotect(p, size, PROT_READ | PROT_EXEC)) { fprintf(stderr, "replay: mprotect failed\n"); return 3; }
    }
  }
  u64 nops = rd();
  for (u64 i = 0; i < nops; i++) {
    u64 kind = rd();
    if (kind == 1) {
      u64 dst = rd(), src = rd(), size = rd();
      memmove((void *)dst, (void *)src, size);
      continue;
    }
    u64 fn = rd(), nthreads = rd(), core_pos = rd(), nargs = rd(), a[16] = {0};
    if (nargs > 16 || (core_pos != ~0ULL && core_pos >= nargs)) { fprintf(stderr, "replay: bad kernel op\n"); return 3; }
    for (u64 j = 0; j < nargs; j++) a[j] = rd();
    for (u64 t = 0; t < nthreads; t++) {
      if (core_pos != ~0ULL) a[core_pos] = t;
      ((kfn)fn)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15]);
    }
  }
  u64 nouts = rd();
  for (u64 i = 0; i < nouts; i++) {
    u64 addr = rd(), size = rd();
    fwrite((void *)addr, 1, size, stdout);
  }
  return 0;
}
