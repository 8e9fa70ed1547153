"""The device conformance suite's state case (tests/tests/cts/): a buffer advanced with `assign` every step.

  state  acc [1,16] float32, initially 0..15 / 16
  step   acc <- 0.5 * acc + x ;  out = 2 * acc  (read after the assign)

so after steps with inputs x_1..x_n, acc = 0.5^n acc_0 + sum_k 0.5^(n-k) x_k: the suite computes that itself and
compares every device's outputs and state with it. `build()` follows the `cargo xtask compile --tinygrad` contract
(xtask/models/modeld_pipeline.py's docstring).
"""
import numpy as np


def build() -> dict:
  from tinygrad import Tensor

  def step(acc: Tensor, x: Tensor):
    acc.assign(acc * 0.5 + x)
    return ((acc * 2).contiguous(),)

  return {"fn": step, "inputs": {"x": np.zeros((1, 16), np.float32)},
          "state": {"acc": (np.arange(16, dtype=np.float32) / 16).reshape(1, 16)}, "outputs": ["out"]}
