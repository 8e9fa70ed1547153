"""Checks the exporter runs before it writes a manifest, so a bundle is never silently wrong.

1. `verify_lowered_outputs` (real-device targets): after the capture's replay, read every output exactly as the
   manifest describes it — buffer, byte offset, dtype, shape, row-major — from the buffers tinygrad just computed, and
   compare it with tinygrad's own unjitted result for the same capture inputs (compile3's call 0). This proves the
   lowering of outputs (views, offsets, dtypes, materialized copies) against tinygrad itself.
2. `check_against_onnxruntime` (every target): tinygrad's own unjitted result for the capture inputs (on the host CPU
   for NULL targets) must agree with onnxruntime's on the same inputs. tinygrad is the kernel compiler: where its
   frontend computes an op differently from the ONNX reference (the conformance suite found several), the bundle would
   be wrong on every device, so the compile is refused (`--trust-tinygrad` overrides, on the user's responsibility).
   Outputs of a quantised graph are compared in quantisation steps instead (mrt/quant_check.py), and the bundle records
   that (producer flag ORT_TOLERANCE).
3. `check_input_dependence` (real-device targets): replay the captured program on fresh inputs and compare it with a
   fresh, unjitted tinygrad run on those inputs. A difference means the capture baked a value computed from the inputs
   into the program (a shape-like parameter tinygrad reads as a Python constant by a route mrt/baked.py does not know,
   data-dependent control flow, ...): refused.
NULL (offline) targets compute nothing; their outputs are checked structurally here (mrt.manifest.ManifestBuilder._output_view;
docs/hw/tinygrad-export.md §11), and `cargo xtask compile` then runs adreno-a630/amd-gfx1100 bundles on their device
models against onnxruntime (xtask/src/emu_check.rs, §11.2).
"""

import numpy as np

from mrt.targets import ExportError

TOL = {np.dtype(np.float16): (1e-2, 1e-3), np.dtype(np.float32): (1e-4, 1e-5), np.dtype(np.float64): (1e-9, 1e-12)}


def mismatch(got: np.ndarray, want: np.ndarray) -> str | None:
  """None when equal (floats: within TOL, NaNs in the same places), else a short description."""
  if got.dtype != want.dtype:
    return f"dtype {got.dtype} != {want.dtype}"
  if got.shape != want.shape:
    return f"shape {list(got.shape)} != {list(want.shape)}"
  if got.dtype in TOL:
    rtol, atol = TOL[got.dtype]
    if np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True):
      return None
    g, w = got.astype(np.float64), want.astype(np.float64)
    with np.errstate(invalid="ignore"):
      err = np.nanmax(np.abs(g - w)) if g.size else 0.0
    return f"max abs error {err:.3g}"
  if np.array_equal(got, want):
    return None
  return f"{int(np.sum(got != want))} of {got.size} elements differ"


def _lowered(builder, body: dict, rec: dict) -> np.ndarray:
  """An output's values read the way the runtime will read them: bytes [offset, offset+size) of its buffer."""
  bid, off = rec["buffer"], rec["offset"]
  base = builder.buf_base[bid]
  if base is None:  # an output buffer the bundle fills with a copy op: read the copy's source instead
    op = next(o for o in body["ops"] if o["op"] == "copy" and o["dst"]["buffer"] == bid)
    bid, off = op["src"]["buffer"], op["src"]["offset"] + off
    base = builder.buf_base[bid]
  dt = np.dtype(rec["dtype"])
  n = int(np.prod(rec["shape"], dtype=np.int64))
  mem = bytes(base.buffer.as_memoryview())
  if off + n * dt.itemsize > len(mem):
    raise ExportError(f"output '{rec['name']}' lies outside its buffer")
  return np.frombuffer(mem, dtype=dt, count=n, offset=off).reshape(rec["shape"])


def verify_lowered_outputs(builder, body: dict, want: dict, log):
  for rec in body["outputs"]:
    ref = np.asarray(want[rec["name"]])
    if bad := mismatch(_lowered(builder, body, rec), ref.reshape(rec["shape"]) if ref.size == np.prod(rec["shape"]) else ref):
      raise ExportError(
        f"self-check failed: output '{rec['name']}' as the bundle would read it differs from tinygrad's own "
        f"result ({bad}); refusing to write a wrong bundle (please report this model)"
      )
  log(f"self-check: {len(body['outputs'])} output(s) read as the bundle lays them out equal tinygrad's own result")


def check_input_dependence(onnx_path: str, jit_fn, specs, output_names, out_dtypes, zero_d, seed, to_tensors, draw):
  from tinygrad import Device, Tensor
  from tinygrad.nn.onnx import OnnxRunner

  arrays = draw(specs, seed)
  replay = {n: t.numpy().copy() for n, t in jit_fn(**to_tensors(arrays)).items()}
  from mrt import rnn
  from mrt.capture import as_numpy
  from mrt.winograd import install

  fresh = install(rnn.install(OnnxRunner(onnx_path)), onnx_path)  # the capture runner's ops and Winograd decisions
  outs = fresh({s.name: Tensor(arrays[s.name], device=Device.DEFAULT) for s in specs})
  for n in output_names:
    want = as_numpy(n, outs[n], out_dtypes[n])
    if bad := mismatch(replay[n], want):
      raise ExportError(
        f"the captured program does not generalise: on fresh inputs output '{n}' differs from tinygrad's own "
        f"run ({bad}), so a value computed from the inputs was baked in at capture; fix such inputs with --const"
      )


ORT_TYPES = {
  "tensor(float)": np.float32,
  "tensor(float16)": np.float16,
  "tensor(double)": np.float64,
  "tensor(uint8)": np.uint8,
  "tensor(int8)": np.int8,
  "tensor(uint16)": np.uint16,
  "tensor(int16)": np.int16,
  "tensor(uint32)": np.uint32,
  "tensor(int32)": np.int32,
  "tensor(uint64)": np.uint64,
  "tensor(int64)": np.int64,
  "tensor(bool)": np.bool_,
}
# tinygrad vs onnxruntime on random capture inputs: accumulation order and transcendental implementations differ
ORT_TOL = {np.dtype(np.float16): (2e-2, 2e-2), np.dtype(np.float32): (1e-3, 1e-4), np.dtype(np.float64): (1e-6, 1e-9)}
HALF_TOL = (5e-2, 5e-2)  # FLOAT16 targets compute float32 models in half precision


def ort_outputs(onnx_path: str, feeds: dict, fuse: bool = True) -> tuple[dict | None, str | None]:
  """onnxruntime's outputs for `feeds` (cast to the model's declared input types), or (None, why it could not run).
  `fuse=False` disables its graph optimisations (a QDQ graph then runs as float ops, unfused; mrt/quant_check.py)."""
  try:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    if not fuse:
      opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(onnx_path, opts, providers=["CPUExecutionProvider"])
    types = {i.name: i.type for i in sess.get_inputs()}
    res = sess.run(None, {n: np.asarray(a).astype(ORT_TYPES.get(types[n], np.asarray(a).dtype)) for n, a in feeds.items()})
    return dict(zip([o.name for o in sess.get_outputs()], res)), None
  except Exception as e:  # onnxruntime is only the cross-check here; its failure is reported, not fatal
    return None, " ".join(f"{type(e).__name__}: {e}".split())[:160]


def _ort_mismatch(got: np.ndarray, want: np.ndarray, half: bool) -> str | None:
  want = np.asarray(want)
  if got.shape != want.shape:
    return f"shape {list(got.shape)} != onnxruntime's {list(want.shape)}"
  if got.dtype.kind == "f":
    rtol, atol = HALF_TOL if half else ORT_TOL.get(got.dtype, (1e-3, 1e-4))
    g, w = got.astype(np.float64), want.astype(np.float64)
    if np.allclose(g, w, rtol=rtol, atol=atol, equal_nan=True):
      return None
    with np.errstate(invalid="ignore"):
      d = np.abs(g - w)
      d[np.isnan(g) & np.isnan(w)] = 0.0
    return f"max abs error {np.nanmax(d):.3g}, {int(np.sum(~np.isclose(g, w, rtol=rtol, atol=atol, equal_nan=True)))} of {g.size} values"
  if got.dtype.kind in "iu" and got.dtype.itemsize == 1:  # quantised results: float rounding may differ by one step
    if np.all(np.abs(got.astype(np.int64) - want.astype(np.int64)) <= 1):
      return None
  elif np.array_equal(got, want.astype(got.dtype)):
    return None
  return f"{int(np.sum(got != want.astype(got.dtype)))} of {got.size} values differ"


def check_against_onnxruntime(onnx_path: str, feeds: dict, tinygrad_out: dict, half: bool, log) -> dict:
  """Refuse the compile when tinygrad's result disagrees with onnxruntime's. Outputs of a quantised graph that have a
  quantisation step are compared in steps (mrt/quant_check.py). Returns the producer flags to record."""
  from mrt.quant_check import FLAG, describe, quant_mismatch, tolerances

  want, why = ort_outputs(onnx_path, feeds)
  if want is None:
    log(f"note: not cross-checked with onnxruntime, which cannot run this model ({why})")
    return {}
  tols = tolerances(onnx_path, feeds, want, log)
  for n, got in tinygrad_out.items():
    if n not in want:
      continue
    got = np.asarray(got)
    if n in tols:
      if bad := quant_mismatch(got, want[n], tols[n], half):
        raise ExportError(
          f"tinygrad's result for output '{n}' disagrees with onnxruntime on the capture inputs beyond the "
          f"quantisation tolerance ({bad}); the bundle would compute the same wrong answer, so it is refused "
          "(--trust-tinygrad compiles anyway)"
        )
      log(f"cross-check (quantised): '{n}' vs onnxruntime: {describe(got, want[n], tols[n], half)}")
    elif bad := _ort_mismatch(got, want[n], half):
      raise ExportError(
        f"tinygrad's result for output '{n}' disagrees with onnxruntime on the capture inputs ({bad}); "
        "the bundle would compute the same wrong answer, so it is refused (--trust-tinygrad compiles anyway)"
      )
  if quantised := [n for n in tinygrad_out if n in want and n in tols]:
    log(
      f"cross-check: tinygrad's result agrees with onnxruntime's on the capture inputs ({len(tinygrad_out)} output(s), "
      f"{len(quantised)} compared in quantisation steps)"
    )
    return {"ORT_TOLERANCE": FLAG}
  log(f"cross-check: tinygrad's result equals onnxruntime's on the capture inputs ({len(tinygrad_out)} output(s))")
  return {}
