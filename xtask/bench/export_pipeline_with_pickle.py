#!/usr/bin/env python3
"""Benchmark export of a stateful tinygrad pipeline (`cargo xtask bench`, model `modeld_pipeline`): run the exporter's
`--tinygrad SCRIPT.py:FN` path (xtask/exporter/mrt/script_export.py) unchanged, and from the very same capture also
pickle the jit the way compile_modeld does, so tinygrad's own Python runtime replays exactly the bundle's kernels; then
draw the frames both runtimes are fed.

  export_pipeline_with_pickle.py --pickle-out JIT.pkl --frames N --frames-seed S --frames-out DIR
                                 [export.py arguments: --tinygrad SCRIPT.py:FN --target cpu-x86_64 --out DIR --threads T]

Writes JIT.pkl.json next to the pickle: the environment tinygrad must be started with, the script spec, the state names
and the sha256 of every kernel binary (the bench compares those with the bundle's); and DIR/NAME.npy per input holding
the N frames stacked on a new leading axis (what `modelrt bench --steps N --input NAME=DIR/NAME.npy` reads).
Exit codes follow export.py (2 = user error).
Imports the exporter (export.py, mrt/): run with PYTHONPATH=xtask/exporter, as `cargo xtask bench` does.
"""
import json
import os
import sys
from types import SimpleNamespace

import numpy as np


def take(argv: list, flag: str) -> tuple[str, list]:
  if flag not in argv or argv.index(flag) + 1 >= len(argv): raise SystemExit(f"error: {flag} VALUE is required")
  i = argv.index(flag)
  return argv[i + 1], argv[:i] + argv[i + 2:]


def main(argv) -> int:
  pkl_out, argv = take(argv, "--pickle-out")
  frames, argv = take(argv, "--frames")
  frames_seed, argv = take(argv, "--frames-seed")
  frames_out, argv = take(argv, "--frames-out")
  import export  # the exporter's entry point (its module import does not touch tinygrad)
  from mrt.targets import ExportError
  from export_with_pickle import export_keeping_capture, kernel_hashes, pickle_jit
  ap = export.parse_args(argv)
  try:
    if ap.tinygrad is None or ap.target is None or not ap.target.startswith("cpu-"):
      raise ExportError("the pipeline benchmark export needs --tinygrad SCRIPT.py:FN and a --target cpu-*")
    cfg, cap = export_keeping_capture(ap, "mrt.script_export", "capture_script", "export_script")
  except ExportError as e:
    print(f"error: {e}", file=sys.stderr)
    return 2
  from mrt.script import draw_steps
  pickle_jit(cap.jit, pkl_out)
  b = cap.build
  side = {"env": {**cfg.flags, "DEV": cfg.dev}, "spec": ap.tinygrad, "state": sorted(b.get("state", {})),
          "inputs": sorted(b["inputs"]), "outputs": list(cap.output_names),
          "kernels": kernel_hashes(SimpleNamespace(onetime=None, jit=cap.jit))}
  with open(pkl_out + ".json", "w") as f: f.write(json.dumps(side, indent=1) + "\n")
  steps = draw_steps(b, int(frames_seed), int(frames))
  os.makedirs(frames_out, exist_ok=True)
  for k in steps[0]: np.save(os.path.join(frames_out, f"{k}.npy"), np.stack([s[k] for s in steps]))
  export.log(f"pickled the captured jit -> {pkl_out}; {frames} frames -> {frames_out}")
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
