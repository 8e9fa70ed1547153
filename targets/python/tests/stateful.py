"""A tiny stateful tinygrad program for the Python API tests (tests/tests/api/python_api.rs): a running
average kept in a state buffer `acc` and advanced in place every step, so each output depends on
every earlier input. Compiled with `cargo xtask compile --tinygrad targets/python/tests/stateful.py:build`."""

import numpy as np


def build() -> dict:
  from tinygrad import Tensor

  w = Tensor(np.linspace(-1.0, 1.0, 8, dtype=np.float32).reshape(1, 8)).realize()

  def step(acc, x):
    acc.assign((acc * 0.5 + x * w).contiguous())
    return (acc * 2.0 + 1.0).contiguous()

  return {
    "fn": step,
    "inputs": {"x": np.zeros((1, 8), np.float32)},
    "state": {"acc": np.zeros((1, 8), np.float32)},
    "outputs": ["y"],
  }
