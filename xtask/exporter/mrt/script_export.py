"""`export.py --tinygrad SCRIPT.py:FN`: capture a tinygrad program (mrt/script.py), lower it to a manifest with its state
buffers, check the lowering, and write manifest.json + blobs/ like an ONNX compile (docs/hw/tinygrad-export.md §12)."""

import time
from types import SimpleNamespace

import numpy as np
from tinygrad import Device

from mrt.export import build_manifest, write_out
from mrt.manifest import NeedsMaterialize, safe_name
from mrt.meta import kernel_meta_for
from mrt.script import capture_script, carried_closure_check
from mrt.state import log_state
from mrt.targets import ExportError
from mrt.verify import verify_lowered_outputs

REF_TOL = (1e-4, 5e-2)  # (fp32, FLOAT16) tolerance recorded for `modelrt verify`


def _reference(body: dict, cap, half: bool, blobs: dict) -> dict:
  """Step 0 from the initial state: its inputs and tinygrad's unjitted outputs (on NULL targets: its CPU twin's), so
  `modelrt verify` and the compile's pre-write check on the target's model (which run one step on a freshly loaded
  bundle) check a stateful bundle too."""
  outs = (cap.reference if cap.reference is not None else cap.twin)[0][0]
  tol = REF_TOL[1] if half else REF_TOL[0]
  ref = {"seed": 0, "inputs": {}, "outputs": {}, "atol": tol, "rtol": tol}
  for i, rec in enumerate(body["inputs"]):
    p = f"blobs/ref_in_{i}_{safe_name(rec['name'])}.bin"
    blobs[p] = np.ascontiguousarray(cap.steps[0][rec["name"]]).tobytes()
    ref["inputs"][rec["name"]] = p
  for i, (rec, v) in enumerate(zip(body["outputs"], outs)):
    p = f"blobs/ref_out_{i}_{safe_name(rec['name'])}.bin"
    blobs[p] = np.ascontiguousarray(v.astype(np.dtype(rec["dtype"])).reshape(rec["shape"])).tobytes()
    ref["outputs"][rec["name"]] = p
  return ref


def export_script(cfg, ap, flags: dict, tg_version: str, mesa_version, log):
  from mrt.script import load_build

  _, sha = load_build(ap.tinygrad)
  device = Device.DEFAULT
  renderer = type(Device[device].renderer).__name__
  log(f"target {cfg.name}: DEV={cfg.dev} renderer={renderer}")
  t = time.monotonic()
  cap = capture_script(ap.tinygrad, cfg.null, ap.seed)
  log(f"captured in {time.monotonic() - t:.1f}s")
  b = cap.build
  shapes = {k: SimpleNamespace(shape=tuple(v.shape)) for k, v in {**b["inputs"], **b.get("state", {})}.items()}
  try:
    body, blobs, builder = build_manifest(
      cap.jit,
      cap.onetime,
      cfg.target,
      kernel_meta_for(cfg, renderer),
      device,
      cfg.null,
      cap.weight_bytes,
      {},
      cap.output_names,
      shapes,
      state_init=b.get("state", {}),
    )
  except NeedsMaterialize as e:
    raise ExportError(f"fn returns {', '.join(e.names)} as non-contiguous views; return `.contiguous()` of them") from None
  carried_closure_check(builder)
  if cap.reference is not None:
    verify_lowered_outputs(builder, body, dict(zip(cap.output_names, cap.reference[0][-1])), log)
    log(f"self-check: {len(cap.steps)} consecutive steps of the captured program equal tinygrad's unjitted run (outputs and state)")
  else:
    log(
      f"self-check: {len(cap.steps)} consecutive steps of a CPU twin of the program equal tinygrad's unjitted run; "
      "the NULL-device capture itself computes nothing"
    )
  if cfg.target["kind"] == "hexagon":  # as for ONNX: one library with every kernel + the schedule runner
    from mrt.dsp import add_model_library

    add_model_library(body, blobs, log)
  flags = {**flags, "SOURCE": "tinygrad-script"}
  from mrt import roles

  if roles._CTX is not None:  # one part of a multi-device bundle (mrt/roles.py)
    flags["ROLE"] = roles._CTX.role
  manifest = {
    "format": 1,
    "producer": {"tinygrad": tg_version, "tinymesa": mesa_version, "onnx_sha256": sha, "dev": cfg.dev, "renderer": renderer, "flags": flags},
    "target": cfg.target,
    **body,
    "reference": None,
  }
  if ap.reference:
    if cap.reference is None and cap.twin is None:
      raise ExportError("--reference with --tinygrad: tinygrad computed no reference")
    manifest["reference"] = _reference(body, cap, flags.get("FLOAT16") == "1", blobs)
  write_out(ap.out, manifest, blobs)
  log(f"{len(body['kernels'])} kernels, {len(body['ops'])} run ops, {len(body['buffers'])} buffers, {sum(len(x) for x in blobs.values())} blob bytes")
  log_state(body["buffers"], log)
