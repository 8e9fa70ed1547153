"""ONNX export driver: capture -> manifest builder -> reference data -> deterministic write of manifest.json + blobs/.

Imported by export.py only after the environment is pinned and versions are checked.
"""

import hashlib
import json
import os
import shutil
import time

import numpy as np
from tinygrad import Device

from mrt import manifest_schema
from mrt.capture import capture
from mrt.manifest import ManifestBuilder, NeedsMaterialize, constant_body, flatten_calls, safe_name
from mrt.meta import kernel_meta_for
from mrt.targets import ExportError
from mrt.verify import ORT_TYPES, check_against_onnxruntime, verify_lowered_outputs

FP32_TOL, FP16_TOL = 1e-4, 5e-2  # FLOAT16 exports are compared with a documented looser tolerance


def _param_info(jit, specs: dict | None) -> list[dict]:
  """Per JIT input slot: name, the model's shape, the shape it was fed with, dtype and device. tinygrad records a
  whole-buffer input as a bare NOOP view without a shape (every 1-D input), so the shape comes from the model's input
  spec when there is one (ONNX export), else from the recorded view (pickles)."""
  from tinygrad.helpers import prod

  out = []
  for slot, (name, (view, _vars, dt, dev)) in enumerate(zip(jit.expected_names, jit.expected_input_info)):
    if not isinstance(name, str):
      raise ExportError(f"JIT input slot {slot} has no name (positional or container input)")
    if isinstance(dev, tuple):
      raise ExportError(f"input '{name}' is multi-device")
    if specs is not None:
      if name not in specs:
        raise ExportError(f"JIT input '{name}' is not a model input")
      shape = tuple(specs[name].shape)
      fed = (1,) if shape == () else shape
    elif view._shape is not None:
      shape = fed = tuple(int(s) for s in view.shape)
    elif (n := _whole_input_numel(jit).get(slot)) is not None:
      shape = fed = (n,)  # a 1-D input: its whole buffer
    else:
      raise ExportError(f"input '{name}' has no recorded shape")
    if view._shape is not None and prod(view.shape) != prod(fed):
      raise ExportError(f"input '{name}': captured with {prod(view.shape)} elements but the model declares {list(shape)}")
    if 0 in shape:
      raise ExportError(f"input '{name}' has no elements (shape {list(shape)}); bundles cannot carry empty tensors")
    out.append({"name": name, "shape": shape, "capture_shape": fed, "tg_dtype": dt, "device": dev})
  return out


def _whole_input_numel(jit) -> dict[int, int]:
  """JIT input slot -> element count of the largest view the captured calls take of it. tinygrad records a 1-D input
  (a whole buffer) without a shape; its calls still see the buffer, so its size comes from them."""
  from tinygrad.engine.realize import get_call_arg_uops
  from tinygrad.uop.ops import Ops

  from mrt.manifest import flatten_calls

  out: dict[int, int] = {}
  for call in flatten_calls(jit.linear):
    for u in get_call_arg_uops(call):
      if (b := u.base).op is Ops.PARAM:
        out[b.arg.slot] = max(out.get(b.arg.slot, 0), int(b.max_numel()))
  return out


def _outputs(jit, names: list[str]) -> list:
  ret = jit.ret
  if isinstance(ret, dict):
    items = [(n, ret[n]) for n in names if n in ret]
  elif isinstance(ret, (list, tuple)):
    items = [(names[i] if i < len(names) else f"output{i}", t) for i, t in enumerate(ret)]
  else:
    items = [(names[0] if names else "output0", ret)]
  return [(n, t.uop, tuple(int(s) for s in t.shape), t.dtype) for n, t in items]


def build_manifest(
  jit,
  onetime,
  cfg_target: dict,
  kernel_meta,
  device: str,
  null: bool,
  onnx_bytes: dict,
  onnx_labels: dict,
  output_names: list[str],
  specs: dict | None = None,
  state_init: dict | None = None,
):
  """Returns (manifest body, blobs, builder). Raises NeedsMaterialize for outputs that are non-contiguous views."""
  blobs: dict[str, bytes] = {}
  b = ManifestBuilder(cfg_target, kernel_meta, device, null, _param_info(jit, specs), onnx_bytes, onnx_labels, blobs)
  if onetime is not None:
    b.add_phase("init", flatten_calls(onetime))
  b.add_phase("run", flatten_calls(jit.linear))
  buffers, inputs, outputs = b.finish(_outputs(jit, output_names), state_init)
  return {"buffers": buffers, "inputs": inputs, "outputs": outputs, "kernels": b.kernels, "ops": b.ops}, blobs, b


def reference(onnx_path: str, inputs: list[dict], outputs: list[dict], seed: int, half: bool, blobs: dict, feeds: dict) -> dict:
  """Embed `feeds` (the capture inputs, drawn with `seed`) and onnxruntime's outputs for them."""
  import onnxruntime as ort

  from mrt.capture import InputSpec

  specs = [InputSpec(i["name"], tuple(i["shape"]), np.dtype(i["dtype"]).type, False) for i in inputs]
  feeds = {s.name: np.asarray(feeds[s.name]).astype(s.np_dtype) for s in specs}
  try:
    sess = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
  except Exception as e:
    raise ExportError(f"onnxruntime cannot load the model for --reference: {e}".splitlines()[0]) from None
  ort_types = {i.name: i.type for i in sess.get_inputs()}
  ort_feeds = {n: a.astype(ORT_TYPES.get(ort_types[n], a.dtype)) for n, a in feeds.items()}
  names = [o["name"] for o in outputs]
  try:
    res = sess.run(names, ort_feeds)
  except Exception as e:
    raise ExportError(f"onnxruntime failed on the seeded reference inputs: {e}".splitlines()[0]) from None
  ref = {"seed": seed, "inputs": {}, "outputs": {}, "atol": FP16_TOL if half else FP32_TOL, "rtol": FP16_TOL if half else FP32_TOL}
  for i, s in enumerate(specs):
    p = f"blobs/ref_in_{i}_{safe_name(s.name)}.bin"
    blobs[p] = np.ascontiguousarray(feeds[s.name]).tobytes()
    ref["inputs"][s.name] = p
  for i, (o, r) in enumerate(zip(outputs, res)):
    p = f"blobs/ref_out_{i}_{safe_name(o['name'])}.bin"
    blobs[p] = np.ascontiguousarray(np.asarray(r).astype(np.dtype(o["dtype"])).reshape(o["shape"])).tobytes()
    ref["outputs"][o["name"]] = p
  return ref, feeds, dict(zip(names, res))


def write_out(out_dir: str, manifest: dict, blobs: dict):
  """Write atomically-ish: a fresh directory (old blobs removed) so stale files never linger. Every kernel's meta record
  is checked against the Rust declarations first (mrt/manifest_schema.py)."""
  manifest_schema.check_kernels(manifest["kernels"])
  if os.path.isdir(os.path.join(out_dir, "blobs")):
    shutil.rmtree(os.path.join(out_dir, "blobs"))
  os.makedirs(os.path.join(out_dir, "blobs"), exist_ok=True)
  for path in sorted(blobs):
    with open(os.path.join(out_dir, path), "wb") as f:
      f.write(blobs[path])
  with open(os.path.join(out_dir, "manifest.json"), "w") as f:
    f.write(json.dumps(manifest, indent=1) + "\n")


def _capture_and_build(
  cfg,
  onnx_path: str,
  seed: int,
  compile3_dtypes: bool,
  renderer: str,
  device: str,
  trust: bool,
  dims: dict | None = None,
  log=None,
  tinygrad_path: str | None = None,
):
  """Capture, lower to a manifest, and recapture once with materialized outputs if some outputs came back as
  non-contiguous views. `dims`: `--dim` values for dynamic dimensions (mrt.capture.input_specs)."""
  materialize: frozenset = frozenset()
  for attempt in range(2):
    cap = capture(
      onnx_path,
      cfg.null,
      seed,
      compile3_dtypes,
      materialize,
      verify_seed=None if cfg.null else seed + 1,
      trust_tinygrad=trust,
      dims=dims,
      log=log if attempt == 0 else None,
      tinygrad_path=tinygrad_path,
    )
    if cap.constant_out is not None:
      blobs: dict = {}
      return cap, constant_body(cap.inputs, cap.outputs, cap.constant_out, blobs), blobs, None
    specs = {s.name: s for s in cap.inputs}
    try:
      body, blobs, builder = build_manifest(
        cap.jit, cap.onetime, cfg.target, kernel_meta_for(cfg, renderer), device, cfg.null, cap.onnx_bytes, cap.onnx_labels, cap.output_names, specs
      )
      return cap, body, blobs, builder
    except NeedsMaterialize as e:
      if attempt == 1 or not set(e.names) - materialize:
        raise ExportError(f"outputs {', '.join(e.names)} are still not contiguous buffers after materializing them") from None
      materialize = frozenset(e.names) | materialize
  raise AssertionError("unreachable")


def _index_checks(onnx_path: str, inputs: list[dict], log) -> list[dict]:
  """Range checks for the integer inputs that index something (mrt/index_inputs.py), each named in the log."""
  from mrt.capture import load_onnx
  from mrt.index_inputs import index_checks

  names = {i["name"] for i in inputs}
  checks = [c for c in index_checks(load_onnx(onnx_path), {i["name"]: tuple(i["shape"]) for i in inputs}, log) if c["input"] in names]
  for c in checks:
    log(f"input '{c['input']}' is range-checked at run time: {c['min']}..={c['max']} ({c['what']})")
  return checks


def export_onnx(cfg, ap, flags: dict, tg_version: str, mesa_version, log):
  from mrt.consts import fold_consts, parse_const_args

  with open(ap.onnx, "rb") as f:
    sha = hashlib.sha256(f.read()).hexdigest()
  onnx_path, folded = fold_consts(ap.onnx, parse_const_args(ap.const or []), os.path.join(ap.out, "consts"))
  flags = {**flags, **{f"const.{n}": h for n, h in sorted(folded.items())}}
  if ap.compile3_dtypes:
    flags["DTYPES"] = "compile3"
  device = Device.DEFAULT
  renderer = type(Device[device].renderer).__name__
  log(f"target {cfg.name}: DEV={cfg.dev} renderer={renderer}")
  t = time.monotonic()
  from mrt.capture import parse_dim_args

  tg_path = None
  if cfg.target["kind"] == "cpu":  # channel-last convolution chains (mrt/layout.py); onnxruntime keeps the original
    from mrt.conv_rule import install
    from mrt.layout import rewrite

    install(cfg.dev.split(":")[2].split(",")[0], cfg.target["baseline"])  # before the pass: it reads the vector width
    tg_path = rewrite(onnx_path, os.path.join(ap.out, "layout"), log)
  cap, body, blobs, builder = _capture_and_build(
    cfg, onnx_path, ap.seed, ap.compile3_dtypes, renderer, device, ap.trust_tinygrad, parse_dim_args(ap.dim or []), log, tg_path
  )
  log(f"captured in {time.monotonic() - t:.1f}s")
  from mrt.beam import producer_flags

  flags.update(producer_flags(log))
  from mrt import winograd

  flags.update(winograd.producer_flags())
  if cap.constant_out is not None:
    log("the outputs do not depend on any input value: the bundle holds them as constants")
  elif cap.eager_out is not None:
    verify_lowered_outputs(builder, body, cap.eager_out, log)
  else:
    log("outputs checked structurally (contiguous buffers the program writes); a NULL target computes nothing to compare")
  if ap.trust_tinygrad:
    log("warning: --trust-tinygrad: known-wrong ops are compiled and tinygrad's result is NOT compared with onnxruntime")
    flags["TRUST_TINYGRAD"] = "1"
  elif cap.ort_unverifiable:
    log(f"note: not cross-checked with onnxruntime: {cap.ort_unverifiable}")
  else:
    flags.update(check_against_onnxruntime(onnx_path, cap.capture_inputs, cap.tinygrad_eager, flags.get("FLOAT16") == "1", log))
  if cfg.target["kind"] == "hexagon":  # one library with every kernel (none for constant outputs) + the schedule runner
    from mrt.dsp import add_model_library

    add_model_library(body, blobs, log)
  manifest = {
    "format": 1,
    "producer": {"tinygrad": tg_version, "tinymesa": mesa_version, "onnx_sha256": sha, "dev": cfg.dev, "renderer": renderer, "flags": flags},
    "target": cfg.target,
    **body,
    "reference": None,
    "index_checks": _index_checks(onnx_path, body["inputs"], log),
  }
  if ap.reference:
    half = flags.get("FLOAT16") == "1"
    manifest["reference"], feeds, ort_out = reference(onnx_path, body["inputs"], body["outputs"], ap.seed, half, blobs, cap.capture_inputs)
    from mrt.quant_check import quantised_reference  # quantised graphs: atol in quantisation steps (§11.1)

    flags.update(quantised_reference(manifest["reference"], onnx_path, feeds, ort_out, log))
    if cap.tinygrad_out is not None:  # capture ran on the real CPU with the same seeded inputs: report tinygrad vs ORT
      for o in body["outputs"]:
        got, want = cap.tinygrad_out[o["name"]].reshape(o["shape"]), np.asarray(ort_out[o["name"]]).reshape(o["shape"])
        with np.errstate(invalid="ignore"):  # NaN where both are NaN counts as equal
          g64, w64 = np.atleast_1d(got.astype(np.float64)), np.atleast_1d(want.astype(np.float64))
          d = np.abs(g64 - w64)
          d[np.isnan(g64) & np.isnan(w64)] = 0.0
        err = float(np.max(d)) if got.size else 0.0
        log(f"tinygrad vs onnxruntime '{o['name']}': max abs err {err:.3g}")
  for tmp in ("consts", "layout"):
    if os.path.isdir(os.path.join(ap.out, tmp)):
      shutil.rmtree(os.path.join(ap.out, tmp))
  write_out(ap.out, manifest, blobs)
  n_init = sum(1 for o in body["ops"] if o["phase"] == "init")
  log(
    f"{len(body['kernels'])} kernels, {n_init} init + {len(body['ops']) - n_init} run ops, {len(body['buffers'])} buffers, "
    f"{sum(len(b) for b in blobs.values())} blob bytes"
  )
