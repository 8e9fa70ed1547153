#!/usr/bin/env python3
"""openpilot's modeld loop, shaped the same way, through modelrt's Python API: camera frames in, one call per frame to
the pipeline bundle (frame warp -> vision net -> feature/desire queues kept as bundle state -> policy net), outputs
out, with the per-frame numbers a modeld log would show.

  cargo xtask compile --tinygrad xtask/models/modeld_pipeline.py:build --target cpu -o target/modeld.mrt
  cargo xtask wheel && pip install target/wheels/modelrt-*x86_64.whl
  python examples/modeld.py target/modeld.mrt --frames 20 [--device cpu]

or, with the wheel's compiler (`pip install 'modelrt[compile]'`), the SConscript-like build step
examples/openpilot_build.py, which writes build/models/modeld-cpu.mrt.

The frames are seeded random NV12 images (no camera here); the queues start from the state the bundle was compiled
with and advance on every call, as openpilot's do. The frame buffer is allocated 64-byte aligned once and refilled in
place, so on the CPU it is read without a copy (`Model.last_input_paths`); outputs go into preallocated arrays.
"""

import argparse
import sys

import numpy as np

import modelrt


def aligned_empty(shape: tuple, dtype: np.dtype) -> np.ndarray:
  """An uninitialised array whose data starts on a 64-byte boundary (the CPU reads such an input in place)."""
  n = int(np.prod(shape)) * np.dtype(dtype).itemsize
  buf = np.empty(n + 64, np.uint8)
  o = (-buf.ctypes.data) % 64
  return buf[o : o + n].view(dtype).reshape(shape)


def main() -> int:
  ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  ap.add_argument("bundle", help="the pipeline bundle (.mrt), see the module docstring")
  ap.add_argument("--frames", type=int, default=20)
  ap.add_argument("--device", default="auto", help="cpu, qcom, qcom-emu, usb-emu, ... (the CLI's --device names)")
  a = ap.parse_args()
  try:
    m = modelrt.load(a.bundle, device=a.device)
  except (OSError, ValueError, modelrt.Error) as e:
    print(f"error: {e}", file=sys.stderr)
    return 1
  names = {t.name for t in m.inputs}
  if "frame" not in names:
    print(f"error: {a.bundle} has no input 'frame' (inputs: {sorted(names)}): compile the pipeline bundle", file=sys.stderr)
    return 1
  print(f"model    {a.bundle} on {m.device}{' (emulated)' if m.info()['emulated'] else ''}")
  print(f"inputs   {', '.join(f'{t.name}{t.shape}:{t.dtype}' for t in m.inputs)}")
  print(f"states   {', '.join(f'{t.name}[{t.shape[0]}]' for t in m.states)}")
  rng = np.random.default_rng(0)
  feeds = {t.name: aligned_empty(t.shape, t.dtype) for t in m.inputs}
  outs = {t.name: np.empty(t.shape, t.dtype) for t in m.outputs}
  for i in range(a.frames):
    for t in m.inputs:  # a new camera frame, calibration and desire for every step
      x = feeds[t.name]
      if x.dtype == np.uint8:
        x[...] = rng.integers(0, 256, x.shape, dtype=np.uint8)
      elif t.name == "tfm":
        x[...] = np.eye(3, dtype=x.dtype) * np.array([1.2, 1.2, 1.0], x.dtype) + rng.standard_normal(x.shape).astype(x.dtype) * 0.01
      else:
        x[...] = 0
        x.reshape(-1)[rng.integers(0, x.size)] = 1
    m.run(feeds, outputs=outs)
    t = m.last_timing
    summary = "  ".join(f"{k} mean {v.mean():+.4f} max {np.abs(v).max():.4f}" for k, v in outs.items())
    print(f"frame {i:3d}  {t['step'] * 1e3:7.2f} ms (upload {t['upload'] * 1e3:.2f} ms)  {summary}")
    if i == 0:
      print(f"         inputs: {m.last_input_paths}")
  return 0


if __name__ == "__main__":
  sys.exit(main())
