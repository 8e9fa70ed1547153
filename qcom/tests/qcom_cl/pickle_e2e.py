"""Inputs and expected outputs for openpilot's two real warp pickles converted to bundles (tests/tests/adreno/qcom_cl_pickles.rs):
deterministic pseudo-random NV12 frames and frame queues, fixed transforms that reach past the frame's edges, and
the outputs of the numpy models (warp_model.py, road_warp_model.py), all as raw little-endian files.

Usage: pickle_e2e.py road|driver DIR   writes DIR/input<i>.bin and DIR/expected<j>.bin in the converted bundle's
input/output order (road: per camera queue, frame, transform; outputs queue, model input, queue, model input —
driver: frame, transform; output the 1440x960 Y plane). Also PICKLE.gz → DIR/warp.pkl: pickle_e2e.py gunzip SRC DST.
"""
import gzip
import os
import shutil
import sys

import numpy as np
from road_warp_model import step
from warp_model import warp

# The pickle's own constant (a weight buffer of the road warp): the chroma transform's element-wise factors.
UV = np.array([1, 1, 0.5, 1, 1, 0.5, 2, 2, 1], np.float32)
ROAD_M = [np.array([1.5, 0.02, -30, 0.01, 1.5, -100, 1e-5, 2e-5, 1], np.float32),
          np.array([3.0, 0.05, -60, 0.02, 3.0, 500, 1e-5, 2e-5, 1], np.float32)]
DRIVER_M = np.array([1.4, 0.03, -50, -0.02, 1.4, -30, 5e-6, 1e-5, 1], np.float32)


def main(argv):
  if len(argv) == 4 and argv[1] == "gunzip":
    with gzip.open(argv[2], "rb") as src, open(argv[3], "wb") as dst:
      shutil.copyfileobj(src, dst)
    return 0
  if len(argv) != 3 or argv[1] not in ("road", "driver"):
    print("error: usage: pickle_e2e.py road|driver DIR | gunzip SRC DST", file=sys.stderr)
    return 2
  d = argv[2]
  os.makedirs(d, exist_ok=True)
  rng = np.random.default_rng(2026)
  ins, outs = [], []
  if argv[1] == "road":
    for m in ROAD_M:
      queue = rng.integers(0, 256, (30, 128, 256), dtype=np.uint8)
      frame = rng.integers(0, 256, 4804608, dtype=np.uint8)
      ins += [queue, frame, m]
      outs += list(step(queue, frame, m, UV))
  else:
    frame = rng.integers(0, 256, 4804608, dtype=np.uint8)
    ins += [frame, DRIVER_M]
    outs.append(warp(frame, DRIVER_M, "y", 1440, 960))
  for i, a in enumerate(ins):
    a.tofile(os.path.join(d, f"input{i}.bin"))
  for j, a in enumerate(outs):
    a.tofile(os.path.join(d, f"expected{j}.bin"))
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv))
