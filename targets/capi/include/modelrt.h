/*
 * modelrt.h — the C API of modelrt (libmodelrt.so / libmodelrt.a, crate targets/capi).
 *
 * Written by hand to match targets/capi/src/ffi (targets/capi/tests/header.rs checks that every
 * exported function is declared here with the same parameter and return types).
 *
 * Usage: mrt_model_load a bundle (.mrt), query its inputs and outputs with the *_count / *_info
 * functions, call mrt_model_run with one buffer per input and per output (in that order, each
 * exactly mrt_tensor_info.nbytes long), mrt_model_free when done.
 *
 * Errors: every function returning int32_t returns MRT_OK (0) on success or one of the MRT_ERR_*
 * codes; mrt_last_error() then says what went wrong and what to do. NULL pointers, out-of-range
 * indices, NULL buffers and wrong buffer sizes are MRT_ERR_INVALID_ARGUMENT, never undefined
 * behaviour. A bug inside modelrt (a Rust panic) is caught and returned as MRT_ERR_PANIC.
 *
 * Ownership: mrt_model_load gives the caller a model that the caller frees with mrt_model_free
 * (exactly once; NULL is ignored). The model keeps the bundle file open (mapped read-only) until
 * then. mrt_tensor_info.name points into the model and is valid until mrt_model_free. Input and
 * output buffers stay the caller's: they are read/written only during mrt_model_run and never kept.
 * mrt_model_run allocates no memory when it succeeds.
 *
 * Threading: a model is not thread-safe. Use each model from the thread that loaded it (or
 * otherwise from one thread at a time with your own synchronisation); distinct models may be used
 * on distinct threads. mrt_last_error() is per thread: the message of the last failed call on the
 * calling thread ("" after a call that succeeded), valid until the next mrt_* call on that thread.
 *
 * Devices: the names of the CLI's --device (`modelrt run --help`): "auto" (or NULL), "cpu",
 * "qcom", "qcom-emu", "dsp", "dsp-emu", "usb", "usb-emu". The -emu devices are software models of
 * the hardware. "usb"/"usb-emu" read the amdgpu firmware from $MODELRT_AMD_FIRMWARE_DIR (else
 * /lib/firmware/amdgpu).
 *
 * State: a stateful bundle's state buffers carry over from one mrt_model_run to the next, exactly
 * like `modelrt run --steps N`; mrt_model_reset_state puts them back to their load-time contents.
 */
#ifndef MODELRT_H
#define MODELRT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Status codes. */
#define MRT_OK 0
#define MRT_ERR_INVALID_ARGUMENT 1
#define MRT_ERR_LOAD 2
#define MRT_ERR_RUN 3
#define MRT_ERR_PANIC 4

/* Most dimensions an mrt_tensor_info describes. */
#define MRT_MAX_DIMS 8

/* Element type of a tensor (mrt_tensor_info.dtype). */
typedef enum mrt_dtype {
  MRT_DTYPE_F32 = 0,
  MRT_DTYPE_F16 = 1,
  MRT_DTYPE_BF16 = 2,
  MRT_DTYPE_F64 = 3,
  MRT_DTYPE_I8 = 4,
  MRT_DTYPE_U8 = 5,
  MRT_DTYPE_I16 = 6,
  MRT_DTYPE_U16 = 7,
  MRT_DTYPE_I32 = 8,
  MRT_DTYPE_U32 = 9,
  MRT_DTYPE_I64 = 10,
  MRT_DTYPE_U64 = 11,
  MRT_DTYPE_BOOL = 12,
} mrt_dtype;

/* An opaque loaded model. */
typedef struct mrt_model mrt_model;

/* One input or output: name (owned by the model), dtype (an mrt_dtype), shape, size in bytes. */
typedef struct mrt_tensor_info {
  const char *name;
  int32_t dtype;
  uint32_t ndim;
  int64_t dims[MRT_MAX_DIMS];
  size_t nbytes;
} mrt_tensor_info;

/* Load the bundle at `path` on `device` (NULL = "auto"); on success *out is the model, on error
 * *out is NULL. */
int32_t mrt_model_load(const char *path, const char *device, mrt_model **out);

/* Number of inputs / outputs (0 for a NULL model). */
size_t mrt_model_input_count(const mrt_model *m);
size_t mrt_model_output_count(const mrt_model *m);

/* Describe input / output `i` (0-based, in the bundle's order) into *out. */
int32_t mrt_model_input_info(const mrt_model *m, size_t i, mrt_tensor_info *out);
int32_t mrt_model_output_info(const mrt_model *m, size_t i, mrt_tensor_info *out);

/* Run one step: inputs[i] holds input_sizes[i] bytes of input i, outputs[i] receives
 * output_sizes[i] bytes of output i; every size must equal the tensor's nbytes. Output buffers
 * must not overlap each other or the inputs. Allocates nothing when it succeeds. */
int32_t mrt_model_run(mrt_model *m, const void *const *inputs, const size_t *input_sizes,
                      void *const *outputs, const size_t *output_sizes);

/* Put every state buffer back to its load-time contents. */
int32_t mrt_model_reset_state(mrt_model *m);

/* The calling thread's last error message ("" after success); valid until the next mrt_* call on
 * this thread. Never NULL. */
const char *mrt_last_error(void);

/* Free a model (NULL is ignored). */
void mrt_model_free(mrt_model *m);

#ifdef __cplusplus
}
#endif

#endif /* MODELRT_H */
