#!/usr/bin/env python3
"""The tinygrad side of the stateful-pipeline golden tests (tests/tests/cpu/modeld_pipeline.rs), done the way
openpilot's compile_modeld.py checks its own JIT; its `pickle` command is also `cargo xtask pickle`
(xtask/src/pipeline/pickle.rs), the documented way to make a compile_modeld-style pickle for `cargo xtask convert`.

  pipeline_golden.py pickle SCRIPT.py:FN OUT.pkl
      capture FN()'s function with TinyJit(prune=True) over 3 steps from its initial state, queues passed in as inputs
      (compile_modeld's layout), and pickle.dump the jit; writes OUT.state_NAME.npy with each state's initial contents
      (the --state-init files a convert needs)
  pipeline_golden.py replay SCRIPT.py:FN PKL --frames N --seed S --out DIR
      pickle.load the jit and replay it for N steps of seeded inputs from a fresh initial state; writes the inputs
      stacked per step (DIR/in_NAME.npy, shape (N, ...)), the outputs stacked the same way (DIR/out_NAME.npy) and the
      final state (DIR/state_NAME.npy); --alt-seed S2 also writes DIR/alt_in_NAME.npy, inputs drawn with another seed

Both pin the compile environment of `export.py --target cpu-x86_64` (DEV=CPU:CLANG:x86_64,x86-64-v3, 4 CPU threads),
so the kernels are the ones `cargo xtask compile --tinygrad ... --target cpu-x86_64` puts in its bundle. It imports the
exporter (export.py, mrt/): run it with PYTHONPATH=xtask/exporter, as its Rust callers do (xtask::exporter::python).
"""

import argparse
import os
import pickle
import sys

from export import pin_environment
from mrt.targets import make_target


def main(argv):
  ap = argparse.ArgumentParser(prog="pipeline_golden.py")
  ap.add_argument("cmd", choices=("pickle", "replay"))
  ap.add_argument("spec")
  ap.add_argument("pkl")
  ap.add_argument("--frames", type=int, default=20)
  ap.add_argument("--seed", type=int, default=0)
  ap.add_argument("--out")
  ap.add_argument("--alt-seed", type=int, default=None, help="also write ALT_FRAMES steps of inputs drawn with this seed")
  ap.add_argument("--alt-frames", type=int, default=3)
  a = ap.parse_args(argv)
  cfg = make_target("cpu-x86_64", None, False, False, None)
  pin_environment(cfg.flags, cfg.dev)
  import numpy as np
  from tinygrad import TinyJit

  from mrt.script import as_list, draw_steps, feed, fresh_state, load_build, run_steps

  b, _ = load_build(a.spec)
  if a.cmd == "pickle":
    jit = TinyJit(b["fn"], prune=True)
    state = fresh_state(b)
    for step in draw_steps(b, a.seed, 3):
      as_list(jit(**state, **feed(b, step)))
    with open(a.pkl, "wb") as f:
      pickle.dump(jit, f)
    for k, v in b.get("state", {}).items():
      np.save(f"{a.pkl}.state_{k}.npy", v)
    print(f"wrote {a.pkl} ({os.path.getsize(a.pkl)} bytes)")
    return 0
  with open(a.pkl, "rb") as f:
    jit = pickle.load(f)
  steps = draw_steps(b, a.seed, a.frames)
  outs, state = run_steps(jit, b, steps)
  os.makedirs(a.out, exist_ok=True)
  for k in steps[0]:
    np.save(os.path.join(a.out, f"in_{k}.npy"), np.stack([s[k] for s in steps]))
  for i, name in enumerate(b.get("outputs") or [f"output{i}" for i in range(len(outs[0]))]):
    np.save(os.path.join(a.out, f"out_{name}.npy"), np.stack([o[i] for o in outs]))
  for k, v in state.items():
    np.save(os.path.join(a.out, f"state_{k}.npy"), v)
  if a.alt_seed is not None:
    alt = draw_steps(b, a.alt_seed, a.alt_frames)
    for k in alt[0]:
      np.save(os.path.join(a.out, f"alt_in_{k}.npy"), np.stack([s[k] for s in alt]))
  print(f"replayed {a.frames} steps -> {a.out}")
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
