#!/usr/bin/env python3
"""Measure how far tinygrad's result for a quantised ONNX model is from onnxruntime's, in output quantisation steps,
and what mrt/quant_check.py's cross-check allows and decides, over N seeded inputs (the figures in docs/hexagon.md).

  DEV=CPU PYTHONPATH=xtask/exporter quant_spread.py MODEL.onnx [N]
      (run with the exporter venv's python, from the repository root; standard-normal inputs, seeds 0..N-1)
"""

import sys

import numpy as np


def main(argv) -> int:
  if not argv or len(argv) > 2:
    print("error: usage: quant_spread.py MODEL.onnx [N]", file=sys.stderr)
    return 2
  from tinygrad import Tensor
  from tinygrad.nn.onnx import OnnxRunner

  from mrt.quant_check import distance, quant_mismatch, tolerances
  from mrt.verify import ort_outputs

  path, seeds = argv[0], int(argv[1]) if len(argv) > 1 else 5
  runner = OnnxRunner(path)
  shapes = {n: [int(d) for d in s.shape] for n, s in runner.graph_inputs.items()}
  for seed in range(seeds):
    rng = np.random.default_rng(seed)
    feeds = {n: rng.standard_normal(shapes[n]).astype(np.float32) for n in sorted(shapes)}
    got = {n: t.numpy() for n, t in runner({n: Tensor(a) for n, a in feeds.items()}).items()}
    want, why = ort_outputs(path, feeds)
    if want is None:
      print(f"error: onnxruntime cannot run {path}: {why}", file=sys.stderr)
      return 1
    for n, tol in tolerances(path, feeds, want, lambda m: print(m, file=sys.stderr)).items():
      d = distance(got[n], want[n], tol.step, False)
      print(
        f"seed {seed} '{n}': step {float(tol.step.scale.max()):.4g}; tinygrad vs onnxruntime max {d.max():.3g} rms "
        f"{np.sqrt(np.mean(d * d)):.3g} within one {np.mean(d <= 1 + 1e-6):.1%}; onnxruntime fused vs unfused max "
        f"{tol.ort_max:.3g} rms {tol.ort_rms:.3g}; allowed max {tol.max_steps:.3g} rms {tol.rms_steps:.3g}; "
        f"{quant_mismatch(got[n], want[n], tol, False) or 'accepted'}",
        flush=True,
      )
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
