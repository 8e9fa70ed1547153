/* The host side of the OpenCL C reference for the Qualcomm-compiled kernels (qcom/tests/qcom_cl_kernels.rs):
 * the work-item functions the kernel source calls (get_global_id, get_local_id, get_group_id, trunc) and a
 * main that runs the kernel over one NDRange, work group after work group, work item after work item.
 *
 * Build (the test does this): the kernel's OpenCL C compiled by clang's OpenCL C mode for the host,
 *   clang-19 -x cl -cl-std=CL2.0 -Xclang -finclude-default-header -O1 -c KERNEL.cl
 * linked with this file compiled with -DKERNEL=<name> -DNARGS=<number of buffer parameters>.
 * Usage: ref GX GY GZ LX LY LZ FILE... (groups, local size, one file per buffer parameter in signature
 * order; every buffer is read, the kernel runs, every buffer is written back). Exit status 2 with one
 * `error:` line on bad arguments or I/O failure. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

static size_t g_group[3], g_local[3], g_lid[3];

/* OpenCL C's overloaded built-ins as clang mangles them (Itanium C++ mangling of the overloadable
 * declarations in clang's opencl-c.h). */
size_t _Z13get_global_idj(unsigned d) { return d < 3 ? g_group[d] * g_local[d] + g_lid[d] : 0; }
size_t _Z12get_local_idj(unsigned d) { return d < 3 ? g_lid[d] : 0; }
size_t _Z12get_group_idj(unsigned d) { return d < 3 ? g_group[d] : 0; }
float _Z5truncf(float x) { return truncf(x); }

#define P void *
#if NARGS == 2
void KERNEL(P, P);
#define CALL(b) KERNEL(b[0], b[1])
#elif NARGS == 3
void KERNEL(P, P, P);
#define CALL(b) KERNEL(b[0], b[1], b[2])
#elif NARGS == 4
void KERNEL(P, P, P, P);
#define CALL(b) KERNEL(b[0], b[1], b[2], b[3])
#elif NARGS == 5
void KERNEL(P, P, P, P, P);
#define CALL(b) KERNEL(b[0], b[1], b[2], b[3], b[4])
#else
#error "NARGS must be 2 to 5"
#endif

static int fail(const char *what, const char *arg) {
    fprintf(stderr, "error: %s %s\n", what, arg);
    return 2;
}

int main(int argc, char **argv) {
    if (argc != 7 + NARGS) {
        fprintf(stderr, "error: usage: ref GX GY GZ LX LY LZ and %d buffer files\n", NARGS);
        return 2;
    }
    size_t groups[3], local[3];
    for (int i = 0; i < 3; i++) {
        groups[i] = strtoul(argv[1 + i], NULL, 10);
        local[i] = strtoul(argv[4 + i], NULL, 10);
        if (groups[i] == 0 || local[i] == 0) return fail("zero-sized NDRange dimension in", argv[1 + i]);
    }
    void *bufs[NARGS];
    size_t sizes[NARGS];
    for (int i = 0; i < NARGS; i++) {
        const char *path = argv[7 + i];
        FILE *f = fopen(path, "rb");
        if (!f) return fail("cannot open", path);
        fseek(f, 0, SEEK_END);
        sizes[i] = (size_t)ftell(f);
        fseek(f, 0, SEEK_SET);
        bufs[i] = malloc(sizes[i] ? sizes[i] : 1);
        if (!bufs[i] || fread(bufs[i], 1, sizes[i], f) != sizes[i]) return fail("cannot read", path);
        fclose(f);
    }
    for (g_group[2] = 0; g_group[2] < groups[2]; g_group[2]++)
        for (g_group[1] = 0; g_group[1] < groups[1]; g_group[1]++)
            for (g_group[0] = 0; g_group[0] < groups[0]; g_group[0]++)
                for (g_lid[2] = 0; g_lid[2] < local[2]; g_lid[2]++)
                    for (g_lid[1] = 0; g_lid[1] < local[1]; g_lid[1]++)
                        for (g_lid[0] = 0; g_lid[0] < local[0]; g_lid[0]++) {
                            for (int d = 0; d < 3; d++) g_local[d] = local[d];
                            CALL(bufs);
                        }
    for (int i = 0; i < NARGS; i++) {
        FILE *f = fopen(argv[7 + i], "wb");
        if (!f || fwrite(bufs[i], 1, sizes[i], f) != sizes[i] || fclose(f) != 0)
            return fail("cannot write", argv[7 + i]);
    }
    return 0;
}
