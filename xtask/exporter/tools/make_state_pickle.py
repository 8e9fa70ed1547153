#!/usr/bin/env python3
"""Test-only: small compile3-style pickles whose TinyJit advances a queue with `q.assign(q[1:].cat(new))`, and
tinygrad's own replay of them (the golden for test_exporter.StateTests and tests/tests/cpu/modeld_pipeline.rs).

  DEV=CPU:CLANG:x86_64,x86-64-v3 make_state_pickle.py held|input OUT.pkl STEPS
      held : the jit captured a realized queue with nonzero contents and returns (a reduction of it, the queue itself,
             its newest row) — returning the queue is what used to turn it into an output buffer without its bytes
      input: the queue is passed in on every call (openpilot compile_modeld.py's layout); OUT.pkl.init.npy holds the
             initial contents the replay and the convert (--state-init q=FILE) start from
  then pickle.load the jit and replay STEPS steps of seeded inputs; writes OUT.pkl.replay.npz with x (STEPS, 1, 8), each
  output stacked per step (out0, out1, ...) and the final queue (q), and each array also as OUT.pkl.replay_NAME.npy
"""

import os
import pickle
import sys

os.environ.setdefault("JIT_BATCH_SIZE", "0")
os.environ.setdefault("NUM_CPU_THREADS", "4")
os.environ.setdefault("BEAM", "0")
os.environ.setdefault("CACHELEVEL", "0")
import numpy as np
from tinygrad import Tensor, TinyJit

ROWS, WIDTH = 4, 8


def initial_queue() -> np.ndarray:
  return (np.arange(ROWS * WIDTH, dtype=np.float32).reshape(ROWS, WIDTH) - 7) / 10


def step_inputs(seed: int, n: int) -> np.ndarray:
  return np.random.default_rng(seed).standard_normal((n, 1, WIDTH)).astype(np.float32)


def make(variant: str, out: str):
  w = Tensor(np.random.default_rng(1).standard_normal((WIDTH, WIDTH)).astype(np.float32)).realize()
  if variant == "held":
    q = Tensor(initial_queue()).contiguous().realize()

    @TinyJit
    def step(x):
      q.assign(q[1:].cat((x @ w).relu(), dim=0).contiguous())
      return q.sum(0).contiguous(), q, q[-1]

    for x in step_inputs(5, 3):
      step(x=Tensor(x).realize())
    np.save(out + ".init.npy", q.numpy())  # what the pickle holds: the queue after the 3 capture calls
  else:
    q = Tensor(initial_queue()).contiguous().realize()

    @TinyJit
    def step(q, x):
      q.assign(q[1:].cat((x @ w).relu(), dim=0).contiguous())
      return (q * 2).sum(0).contiguous()

    for x in step_inputs(5, 3):
      step(q=q, x=Tensor(x).realize())
    np.save(out + ".init.npy", initial_queue())
  with open(out, "wb") as f:
    pickle.dump(step, f)


def replay(pkl: str, n: int):
  with open(pkl, "rb") as f:
    jit = pickle.load(f)
  takes_q = "q" in jit.captured.expected_names
  q = Tensor(np.load(pkl + ".init.npy")).contiguous().realize() if takes_q else None
  xs, outs = step_inputs(9, n), []
  for x in xs:
    ret = jit(q=q, x=Tensor(x).realize()) if takes_q else jit(x=Tensor(x).realize())
    outs.append([t.numpy().copy() for t in (ret if isinstance(ret, tuple) else (ret,))])
  final = q.numpy() if takes_q else None
  if final is None:  # the held queue is the jit's own buffer: read it through the returned view of it
    final = outs[-1][1]
  arrays = {"x": xs, "q": final, **{f"out{i}": np.stack([o[i] for o in outs]) for i in range(len(outs[0]))}}
  np.savez(pkl + ".replay.npz", **arrays)
  for k, v in arrays.items():
    np.save(f"{pkl}.replay_{k}.npy", v)  # the same, one .npy each, for the Rust test


if __name__ == "__main__":
  make(sys.argv[1], sys.argv[2])
  replay(sys.argv[2], int(sys.argv[3]))
