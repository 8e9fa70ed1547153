/*
 * run_model.c — load a modelrt bundle through the C API (modelrt.h), run it and print its outputs.
 *
 *   run_model [-d DEVICE] [-n STEPS] [-o OUT_DIR] BUNDLE [INPUT.bin ...]
 *
 * Each INPUT.bin holds the raw bytes of one input, in the bundle's input order (exactly the size
 * `mrt_tensor_info.nbytes` reports); inputs not given are zeros. STEPS (default 1) runs the model
 * that many times on the same inputs (state carries over, like `modelrt run --steps`); the outputs
 * printed and written are the last step's. With -o, output i is written raw to OUT_DIR/output<i>.bin.
 * Build: see examples/c/README.md.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "modelrt.h"

static const char *dtype_name(int32_t d) {
  static const char *names[] = {"float32", "float16", "bfloat16", "float64", "int8",
                                "uint8",   "int16",   "uint16",   "int32",   "uint32",
                                "int64",   "uint64",  "bool"};
  return (d >= 0 && d <= MRT_DTYPE_BOOL) ? names[d] : "?";
}

static void print_info(const char *kind, size_t i, const mrt_tensor_info *t) {
  printf("%s %zu  %s  %s [", kind, i, t->name, dtype_name(t->dtype));
  for (uint32_t d = 0; d < t->ndim; d++) printf(d ? "x%lld" : "%lld", (long long)t->dims[d]);
  printf("]  %zu bytes\n", t->nbytes);
}

/* Read exactly `size` bytes of `path` into `buf`; 0 on success. */
static int read_exact(const char *path, void *buf, size_t size) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "error: cannot open %s\n", path);
    return 1;
  }
  size_t got = fread(buf, 1, size, f);
  int extra = fgetc(f) != EOF;
  fclose(f);
  if (got != size || extra) {
    fprintf(stderr, "error: %s must hold exactly %zu bytes\n", path, size);
    return 1;
  }
  return 0;
}

static int write_all(const char *path, const void *buf, size_t size) {
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(buf, 1, size, f) != size) {
    fprintf(stderr, "error: cannot write %s\n", path);
    if (f) fclose(f);
    return 1;
  }
  return fclose(f) != 0;
}

int main(int argc, char **argv) {
  const char *device = NULL, *out_dir = NULL;
  long steps = 1;
  int a = 1;
  for (; a + 1 < argc && argv[a][0] == '-'; a += 2) {
    if (!strcmp(argv[a], "-d")) device = argv[a + 1];
    else if (!strcmp(argv[a], "-o")) out_dir = argv[a + 1];
    else if (!strcmp(argv[a], "-n")) steps = strtol(argv[a + 1], NULL, 10);
    else break;
  }
  if (a >= argc || argv[a][0] == '-' || steps < 1) {
    fprintf(stderr, "usage: %s [-d DEVICE] [-n STEPS] [-o OUT_DIR] BUNDLE [INPUT.bin ...]\n", argv[0]);
    return 2;
  }
  const char *bundle = argv[a++];

  mrt_model *m = NULL;
  if (mrt_model_load(bundle, device, &m) != MRT_OK) {
    fprintf(stderr, "error: %s\n", mrt_last_error());
    return 1;
  }
  size_t ni = mrt_model_input_count(m), no = mrt_model_output_count(m);
  if ((size_t)(argc - a) > ni) {
    fprintf(stderr, "error: %d input files given; the model has %zu inputs\n", argc - a, ni);
    mrt_model_free(m);
    return 2;
  }

  int rc = 1;
  void **ins = calloc(ni ? ni : 1, sizeof *ins), **outs = calloc(no ? no : 1, sizeof *outs);
  size_t *in_sizes = calloc(ni ? ni : 1, sizeof *in_sizes);
  size_t *out_sizes = calloc(no ? no : 1, sizeof *out_sizes);
  mrt_tensor_info *out_infos = calloc(no ? no : 1, sizeof *out_infos);
  if (!ins || !outs || !in_sizes || !out_sizes || !out_infos) goto done;
  for (size_t i = 0; i < ni; i++) {
    mrt_tensor_info t;
    if (mrt_model_input_info(m, i, &t) != MRT_OK) goto api_error;
    print_info("input ", i, &t);
    in_sizes[i] = t.nbytes;
    if (!(ins[i] = calloc(t.nbytes ? t.nbytes : 1, 1))) goto done;
    if ((int)i < argc - a && read_exact(argv[a + i], ins[i], t.nbytes)) goto done;
  }
  for (size_t i = 0; i < no; i++) {
    if (mrt_model_output_info(m, i, &out_infos[i]) != MRT_OK) goto api_error;
    out_sizes[i] = out_infos[i].nbytes;
    if (!(outs[i] = calloc(out_sizes[i] ? out_sizes[i] : 1, 1))) goto done;
  }
  for (long s = 0; s < steps; s++) {
    if (mrt_model_run(m, (const void *const *)ins, in_sizes, outs, out_sizes) != MRT_OK)
      goto api_error;
  }
  for (size_t i = 0; i < no; i++) {
    print_info("output", i, &out_infos[i]);
    if (out_infos[i].dtype == MRT_DTYPE_F32) {
      const float *v = outs[i];
      size_t n = out_sizes[i] / sizeof(float);
      double sum = 0;
      for (size_t k = 0; k < n; k++) sum += v[k];
      printf("  sum %.6g  first", sum);
      for (size_t k = 0; k < n && k < 4; k++) printf(" %.6g", v[k]);
      printf("\n");
    }
    if (out_dir) {
      char path[4096];
      snprintf(path, sizeof path, "%s/output%zu.bin", out_dir, i);
      if (write_all(path, outs[i], out_sizes[i])) goto done;
    }
  }
  rc = 0;
  goto done;
api_error:
  fprintf(stderr, "error: %s\n", mrt_last_error());
done:
  for (size_t i = 0; ins && i < ni; i++) free(ins[i]);
  for (size_t i = 0; outs && i < no; i++) free(outs[i]);
  free(ins);
  free(outs);
  free(in_sizes);
  free(out_sizes);
  free(out_infos);
  mrt_model_free(m);
  return rc;
}
