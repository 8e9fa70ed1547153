/* Peak fp32 FMA throughput of one core, by register width: the figure the bench's per-kernel tables compare a
 * kernel's achieved GFLOP/s with (xtask/src/bench/peak.rs compiles and runs this once per bench run).
 *
 * Each width runs ACCS independent multiply-add chains (enough to cover the FMA latency on both FMA ports of
 * current x86 cores), ITERS times, best of REPS timings. The factors come from argv so nothing folds at compile
 * time; the sums are printed so nothing is dropped. Output: one line per width, "NAME GFLOPS".
 * x86-64 only (the aarch64 bench has no FMA-width table). Build: clang-19 -O2 -mavx2 -mfma fma_peak.c */
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define ACCS 12
#define ITERS 20000000L
#define REPS 3

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

#define CHAINS(T, SET1, FMA, ADD, REDUCE)                                                                 \
    T acc[ACCS], a = SET1(m), b = SET1(c);                                                                \
    for (int i = 0; i < ACCS; i++) acc[i] = SET1((float)i * 1e-3f);                                       \
    double t0 = now();                                                                                    \
    for (long n = 0; n < ITERS; n++) {                                                                    \
        for (int i = 0; i < ACCS; i++) acc[i] = FMA(acc[i], a, b);                                        \
        __asm__ volatile("" : : : "memory");                                                              \
    }                                                                                                     \
    double dt = now() - t0;                                                                               \
    T s = acc[0];                                                                                         \
    for (int i = 1; i < ACCS; i++) s = ADD(s, acc[i]);                                                    \
    *sink += REDUCE(s);                                                                                   \
    return dt;

__attribute__((target("avx512f"))) static float r512(__m512 v) { return _mm512_reduce_add_ps(v); }
static float r256(__m256 v) {
    float f[8];
    _mm256_storeu_ps(f, v);
    return f[0] + f[7];
}
static float r128(__m128 v) { return _mm_cvtss_f32(v); }

__attribute__((target("avx512f"))) static double zmm(float m, float c, float *sink) {
    CHAINS(__m512, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_add_ps, r512)
}
static double ymm(float m, float c, float *sink) { CHAINS(__m256, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_add_ps, r256) }
static double xmm(float m, float c, float *sink) { CHAINS(__m128, _mm_set1_ps, _mm_fmadd_ps, _mm_add_ps, r128) }
static double scalar(float m, float c, float *sink) { CHAINS(__m128, _mm_set1_ps, _mm_fmadd_ss, _mm_add_ss, r128) }

typedef double (*chain_fn)(float, float, float *);

static void run(const char *name, chain_fn f, int lanes, float m, float c, float *sink) {
    double best = 1e30;
    for (int r = 0; r < REPS; r++) {
        double dt = f(m, c, sink);
        if (dt < best) best = dt;
    }
    printf("%s %.1f\n", name, 2.0 * lanes * ACCS * (double)ITERS / best * 1e-9);
}

int main(int argc, char **argv) {
    float m = argc > 1 ? strtof(argv[1], 0) : 0.9999999f;
    float c = argc > 2 ? strtof(argv[2], 0) : 1e-7f;
    float sink = 0;
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) run("zmm", zmm, 16, m, c, &sink);
    run("ymm", ymm, 8, m, c, &sink);
    run("xmm", xmm, 4, m, c, &sink);
    run("scalar", scalar, 1, m, c, &sink);
    fprintf(stderr, "checksum %g\n", (double)sink);
    return 0;
}
