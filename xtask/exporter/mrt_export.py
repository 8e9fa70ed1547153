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

from mrt_targets import ExportError
from mrt_capture import capture, random_inputs
from mrt_manifest import ManifestBuilder, flatten_calls, safe_name
from mrt_meta import kernel_meta_for

FP32_TOL, FP16_TOL = 1e-4, 5e-2  # FLOAT16 exports are compared with a documented looser tolerance


def _param_info(jit) -> list[dict]:
  out = []
  for slot, (name, (view, _vars, dt, dev)) in enumerate(zip(jit.expected_names, jit.expected_input_info)):
    if not isinstance(name, str): raise ExportError(f"JIT input slot {slot} has no name (positional or container input)")
    if isinstance(dev, tuple): raise ExportError(f"input '{name}' is multi-device")
    out.append({"name": name, "shape": tuple(int(s) for s in view.shape), "tg_dtype": dt, "device": dev})
  return out


def _outputs(jit, names: list[str]) -> list:
  ret = jit.ret
  if isinstance(ret, dict): items = [(n, ret[n]) for n in names if n in ret]
  elif isinstance(ret, (list, tuple)): items = [(names[i] if i < len(names) else f"output{i}", t) for i, t in enumerate(ret)]
  else: items = [(names[0] if names else "output0", ret)]
  return [(n, t.uop, tuple(int(s) for s in t.shape), t.dtype) for n, t in items]


def build_manifest(jit, onetime, cfg_target: dict, kernel_meta, device: str, null: bool, onnx_bytes: dict, onnx_labels: dict,
                   output_names: list[str]):
  blobs: dict[str, bytes] = {}
  b = ManifestBuilder(cfg_target, kernel_meta, device, null, _param_info(jit), onnx_bytes, onnx_labels, blobs)
  if onetime is not None: b.add_phase("init", flatten_calls(onetime))
  b.add_phase("run", flatten_calls(jit.linear))
  buffers, inputs, outputs = b.finish(_outputs(jit, output_names))
  return {"buffers": buffers, "inputs": inputs, "outputs": outputs, "kernels": b.kernels, "ops": b.ops}, blobs


def reference(onnx_path: str, inputs: list[dict], outputs: list[dict], seed: int, half: bool, blobs: dict) -> dict:
  import onnxruntime as ort
  from mrt_capture import InputSpec
  specs = [InputSpec(i["name"], tuple(i["shape"]), np.dtype(i["dtype"]).type, False) for i in inputs]
  feeds = random_inputs(specs, seed)
  try: sess = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
  except Exception as e: raise ExportError(f"onnxruntime cannot load the model for --reference: {e}".splitlines()[0]) from None
  ort_types = {i.name: i.type for i in sess.get_inputs()}
  cast = {"tensor(float)": np.float32, "tensor(float16)": np.float16, "tensor(uint8)": np.uint8, "tensor(int64)": np.int64,
          "tensor(int32)": np.int32, "tensor(bool)": np.bool_, "tensor(double)": np.float64}
  ort_feeds = {n: a.astype(cast.get(ort_types[n], a.dtype)) for n, a in feeds.items()}
  names = [o["name"] for o in outputs]
  try: res = sess.run(names, ort_feeds)
  except Exception as e: raise ExportError(f"onnxruntime failed on the seeded reference inputs: {e}".splitlines()[0]) from None
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
  """Write atomically-ish: a fresh directory (old blobs removed) so stale files never linger."""
  if os.path.isdir(os.path.join(out_dir, "blobs")): shutil.rmtree(os.path.join(out_dir, "blobs"))
  os.makedirs(os.path.join(out_dir, "blobs"), exist_ok=True)
  for path in sorted(blobs):
    with open(os.path.join(out_dir, path), "wb") as f: f.write(blobs[path])
  with open(os.path.join(out_dir, "manifest.json"), "w") as f:
    f.write(json.dumps(manifest, indent=1) + "\n")


def export_onnx(cfg, ap, flags: dict, tg_version: str, mesa_version, log):
  onnx_path = ap.onnx
  with open(onnx_path, "rb") as f: sha = hashlib.sha256(f.read()).hexdigest()
  device = Device.DEFAULT
  renderer = type(Device[device].renderer).__name__
  log(f"target {cfg.name}: DEV={cfg.dev} renderer={renderer}")
  t = time.monotonic()
  cap = capture(onnx_path, cfg.null, ap.seed)
  log(f"captured in {time.monotonic() - t:.1f}s")
  body, blobs = build_manifest(cap.jit, cap.onetime, cfg.target, kernel_meta_for(cfg, renderer), device, cfg.null, cap.onnx_bytes,
                               cap.onnx_labels, cap.output_names)
  manifest = {"format": 1,
              "producer": {"tinygrad": tg_version, "tinymesa": mesa_version, "onnx_sha256": sha, "dev": cfg.dev, "renderer": renderer, "flags": flags},
              "target": cfg.target, **body, "reference": None}
  if ap.reference:
    half = flags.get("FLOAT16") == "1"
    manifest["reference"], feeds, ort_out = reference(onnx_path, body["inputs"], body["outputs"], ap.seed, half, blobs)
    if cap.tinygrad_out is not None:  # capture ran on the real CPU with the same seeded inputs: report tinygrad vs ORT
      for o in body["outputs"]:
        got, want = cap.tinygrad_out[o["name"]].reshape(o["shape"]), np.asarray(ort_out[o["name"]]).reshape(o["shape"])
        err = float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64)))) if got.size else 0.0
        log(f"tinygrad vs onnxruntime '{o['name']}': max abs err {err:.3g}")
  write_out(ap.out, manifest, blobs)
  n_init = sum(1 for o in body["ops"] if o["phase"] == "init")
  log(f"{len(body['kernels'])} kernels, {n_init} init + {len(body['ops']) - n_init} run ops, {len(body['buffers'])} buffers, "
      f"{sum(len(b) for b in blobs.values())} blob bytes")
