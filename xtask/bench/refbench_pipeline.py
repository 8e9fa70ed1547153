#!/usr/bin/env python3
"""tinygrad's own replay of a stateful pipeline for `cargo xtask bench` (model `modeld_pipeline`): one process = one
pickle load + warm-up + N consecutive timed frames from the initial state, reported as one JSON line like refbench.py.

  refbench_pipeline.py --pickle JIT.pkl --frames-dir DIR --warmup W

The pickle and its JIT.pkl.json come from export_pipeline_with_pickle.py (the bundle's own capture); DIR holds each
input's frames stacked on a leading axis, the same files `modelrt bench --steps N` reads. Like compile_modeld's runner,
the state buffers (queues) are device tensors passed to the jit on every call, which advances them in place. A frame is
what modeld pays per camera frame: wrap the host inputs as tensors (the frame realized on the device, the small inputs
as NPY tensors the jit copies in), run, and copy the outputs back to numpy. The warm-up runs from the initial state, then
the state is re-created, so the timed frames start from it like `modelrt bench --steps`.
Imports the exporter (export.py, mrt/): run with PYTHONPATH=xtask/exporter, as `cargo xtask bench` does.
"""
import argparse
import json
import os
import sys
import time


def main(argv) -> int:
  ap = argparse.ArgumentParser(prog="refbench_pipeline.py")
  ap.add_argument("--pickle", required=True)
  ap.add_argument("--frames-dir", required=True)
  ap.add_argument("--warmup", type=int, default=3)
  a = ap.parse_args(argv)
  with open(a.pickle + ".json") as f: meta = json.load(f)
  for k in ("DEV", "CPU", "NULL", "AMD", "QCOM", "CACHEDB"): os.environ.pop(k, None)
  os.environ.update(meta["env"])  # before tinygrad is imported: it reads these at import time
  import pickle
  import numpy as np
  from mrt.script import as_list, feed, fresh_state, load_build
  from refbench import peak_rss_bytes, stats_ns
  b, _ = load_build(meta["spec"])
  stacked = {k: np.load(os.path.join(a.frames_dir, f"{k}.npy")) for k in meta["inputs"]}
  n = len(next(iter(stacked.values())))
  frames = [{k: v[i] for k, v in stacked.items()} for i in range(n)]
  t0 = time.perf_counter_ns()
  with open(a.pickle, "rb") as f: jit = pickle.load(f)
  load_ns = time.perf_counter_ns() - t0

  def frame(state, step):
    return [t.numpy() for t in as_list(jit(**state, **feed(b, step)))]
  state = fresh_state(b)
  for i in range(a.warmup): frame(state, frames[i % n])
  state = fresh_state(b)
  samples = []
  for step in frames:
    t = time.perf_counter_ns()
    frame(state, step)
    samples.append(time.perf_counter_ns() - t)
  print(json.dumps({"load_ns": load_ns, "samples_ns": samples, **stats_ns(samples), "peak_rss_bytes": peak_rss_bytes()}),
        flush=True)
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
