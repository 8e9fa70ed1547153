#!/usr/bin/env python3
"""Benchmark export: run the modelrt exporter (xtask/exporter/export.py) unchanged, and from the very same TinyJit capture
also pickle the captured jit the way openpilot's compile3 does, so tinygrad's own Python runtime can replay exactly the
kernels that went into the bundle.

  export_with_pickle.py --pickle-out JIT.pkl [export.py arguments: --onnx M --target cpu-x86_64 --out DIR --threads N ...]

Next to JIT.pkl it writes JIT.pkl.json: the environment tinygrad must be started with to load the pickle (the exporter's
pinned flags and DEV string), the JIT's input specs, the seed, and the sha256 and tinygrad's op count of every kernel
binary in capture order (the bench compares the hashes with the bundle's kernels and uses the op counts for GFLOP/s). Exit codes follow export.py (2 = user error).
Imports the exporter (export.py, mrt/): run with PYTHONPATH=xtask/exporter, as `cargo xtask bench` does.
"""
import hashlib
import json
import os
import pickle
import sys

import numpy as np


def split_argv(argv):
  if "--pickle-out" not in argv: raise SystemExit("error: --pickle-out JIT.pkl is required")
  i = argv.index("--pickle-out")
  if i + 1 >= len(argv): raise SystemExit("error: --pickle-out needs a path")
  return argv[i + 1], argv[:i] + argv[i + 2:]


def kernel_hashes(cap) -> list[dict]:
  """sha256 of each distinct compiled kernel binary (tinygrad's ELF object) of the init phase and the run schedule."""
  from tinygrad.uop.ops import Ops
  from mrt.manifest import flatten_calls
  out, seen = [], set()
  calls = (flatten_calls(cap.onetime) if cap.onetime is not None else []) + flatten_calls(cap.jit.linear)
  for call in calls:
    prg = call.src[0]
    if prg.op is not Ops.PROGRAM: continue
    digest = hashlib.sha256(prg.to_elf().lib).hexdigest()
    if digest in seen: continue
    seen.add(digest)
    out.append({"name": prg.arg.function_name, "sha256": digest, "ops": kernel_ops(prg)})
  return out


def kernel_ops(prg):
  """tinygrad's own operation count of one compiled kernel (its `Estimates.ops` over every core_id slice, a multiply-add
  counted as 2), or None when tinygrad has no concrete figure for it. The bench divides it by the traced time."""
  info = prg.src[0].arg if prg.src else None
  est = getattr(info, "estimates", None)
  ops = getattr(est, "ops", None)
  return int(ops) if isinstance(ops, int) else None


def export_keeping_capture(ap, module: str, capture: str, run: str):
  """Pin the exporter's environment for `ap` (as export.py does, before tinygrad is imported), then run the exporter's
  `module.run(cfg, ap, flags, tinygrad_version, None, log)` with `module.capture` wrapped so the capture it makes is kept
  (the pickle must hold the bundle's own jit). Returns (target config, capture); raises ExportError."""
  import importlib
  import export
  from mrt.targets import make_target
  cfg = make_target(ap.target, ap.threads, ap.float16, ap.image, ap.cpu_baseline)
  flags = export.pin_environment(cfg.flags, cfg.dev)
  tg_v, _ = export.check_versions(False)
  export.prepare_cpu_compiler(cfg, flags)
  from mrt.beam import configure  # --beam / --beam-cache: searched kernels (the pickle then holds the same ones)
  flags.update(configure(ap, cfg))
  # the Winograd pass as a plain compile sets it (export.py: `--winograd`, default mrt.winograd.DEFAULT), so the
  # bench's bundles are the product's
  from mrt.winograd import DEFAULT, configure as winograd
  winograd(getattr(ap, "winograd", None) or DEFAULT, cfg.name, export.log)
  mod = importlib.import_module(module)
  kept, orig = {}, getattr(mod, capture)

  def keep(*a, **kw):
    kept["cap"] = orig(*a, **kw)
    return kept["cap"]
  setattr(mod, capture, keep)
  getattr(mod, run)(cfg, ap, flags, tg_v, None, export.log)
  return cfg, kept["cap"]


def pickle_jit(captured, path: str):
  """Pickle a captured jit the way compile3 does (the TinyJit instance around it), atomically."""
  from tinygrad.engine.jit import _TinyJit  # TinyJit(None, ...) is the decorator form; compile3 pickles the instance
  tmp = path + ".tmp"
  with open(tmp, "wb") as f: pickle.dump(_TinyJit(None, captured=captured), f)
  os.replace(tmp, path)


def main(argv) -> int:
  pkl_out, export_argv = split_argv(argv)
  import export  # the exporter's entry point (its module import does not touch tinygrad)
  from mrt.targets import ExportError
  ap = export.parse_args(export_argv)
  try:
    if ap.onnx is None or ap.target is None or not ap.target.startswith("cpu-"):
      raise ExportError("the benchmark export needs --onnx MODEL and a --target cpu-*")
    if not os.path.isfile(ap.onnx): raise ExportError(f"model not found: {ap.onnx}")
    cfg, cap = export_keeping_capture(ap, "mrt.export", "capture", "export_onnx")
  except ExportError as e:
    print(f"error: {e}", file=sys.stderr)
    return 2

  pickle_jit(cap.jit, pkl_out)
  env = {**cfg.flags, "DEV": cfg.dev}
  side = {"env": env, "seed": ap.seed,
          "inputs": [{"name": s.name, "shape": list(s.shape), "dtype": np.dtype(s.np_dtype).name, "on_device": s.on_device}
                     for s in cap.inputs],
          "outputs": list(cap.output_names), "kernels": kernel_hashes(cap)}
  with open(pkl_out + ".json", "w") as f: f.write(json.dumps(side, indent=1) + "\n")
  export.log(f"pickled the captured jit -> {pkl_out} ({os.path.getsize(pkl_out)} bytes)")
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
