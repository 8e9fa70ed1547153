#!/usr/bin/env python3
"""Reference runtimes for `cargo xtask bench`: one process = one load + warm-up + timed steps, reported as one JSON line.

  refbench.py tinygrad --pickle JIT.pkl --iters N --warmup W
  refbench.py onnxruntime --onnx MODEL.onnx --meta JIT.pkl.json --threads T --iters N --warmup W

`tinygrad` replays the TinyJit pickled by export_with_pickle.py (the same capture, hence the same kernels, as the bundle)
with tinygrad's own Python runtime, started with the exporter's pinned environment (DEV, THREADS, NUM_CPU_THREADS, ...).
`onnxruntime` runs the ONNX model on ORT's CPU provider with intra_op_num_threads=T and inter_op_num_threads=1.

A step is what an application pays per inference, like `modelrt bench`: hand the inputs to the runtime (tinygrad: wrap
the numpy arrays as NPY Tensors, which the jit copies in; ORT: the feed dict), run, and copy the outputs back to numpy.
Inputs are the exporter's seeded inputs (same seed as the bundle's reference inputs). Load time is pickle.load (plus
the first call's lazy set-up is part of warm-up, not load) or InferenceSession creation. Peak RSS is this process's
ru_maxrss, which includes the Python interpreter and the imported libraries: that is what the runtime costs.
"""
import argparse
import json
import os
import resource
import sys
import time


def seeded_inputs(meta: dict):
  import numpy as np
  rng = np.random.default_rng(meta["seed"])
  out = {}
  for s in sorted(meta["inputs"], key=lambda s: s["name"]):  # same drawing order as the exporter's random_inputs
    dt, shape = np.dtype(s["dtype"]), tuple(s["shape"])
    if np.issubdtype(dt, np.floating): out[s["name"]] = rng.standard_normal(shape).astype(dt)
    elif dt == np.bool_: out[s["name"]] = rng.integers(0, 2, shape).astype(np.bool_)
    else: out[s["name"]] = rng.integers(0, min(int(np.iinfo(dt).max), 255) + 1, shape).astype(dt)
  return out


def stats_ns(samples: list[int]) -> dict:
  s = sorted(samples)
  return {"min_ns": s[0], "median_ns": s[len(s) // 2], "max_ns": s[-1]}


def peak_rss_bytes() -> int:
  return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux reports KiB


def bench_tinygrad(ap) -> dict:
  with open(ap.pickle + ".json") as f: meta = json.load(f)
  for k in ("DEV", "CPU", "NULL", "AMD", "QCOM", "CACHEDB"): os.environ.pop(k, None)
  os.environ.update(meta["env"])  # before tinygrad is imported: it reads these at import time
  import pickle
  arrays = seeded_inputs(meta)
  from tinygrad import Tensor
  t0 = time.perf_counter_ns()
  with open(ap.pickle, "rb") as f: jit = pickle.load(f)
  load_ns = time.perf_counter_ns() - t0
  on_dev = {s["name"] for s in meta["inputs"] if s["on_device"]}

  def step():
    feeds = {n: (Tensor(a).realize() if n in on_dev else Tensor(a, device="NPY")) for n, a in arrays.items()}
    ret = jit(**feeds)
    return {n: t.numpy() for n, t in ret.items()}
  return run_steps(step, load_ns, ap)


def bench_onnxruntime(ap) -> dict:
  import numpy as np
  import onnxruntime as ort
  with open(ap.meta) as f: meta = json.load(f)
  arrays = seeded_inputs(meta)
  t0 = time.perf_counter_ns()
  so = ort.SessionOptions()
  so.intra_op_num_threads = ap.threads
  so.inter_op_num_threads = 1
  so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
  sess = ort.InferenceSession(ap.onnx, sess_options=so, providers=["CPUExecutionProvider"])
  load_ns = time.perf_counter_ns() - t0
  cast = {"tensor(float)": np.float32, "tensor(float16)": np.float16, "tensor(uint8)": np.uint8, "tensor(int64)": np.int64,
          "tensor(int32)": np.int32, "tensor(bool)": np.bool_, "tensor(double)": np.float64}
  types = {i.name: i.type for i in sess.get_inputs()}
  feeds = {n: a.astype(cast.get(types[n], a.dtype)) for n, a in arrays.items() if n in types}
  return run_steps(lambda: sess.run(None, feeds), load_ns, ap)


def run_steps(step, load_ns: int, ap) -> dict:
  for _ in range(ap.warmup): step()
  samples = []
  for _ in range(ap.iters):
    t = time.perf_counter_ns()
    step()
    samples.append(time.perf_counter_ns() - t)
  return {"load_ns": load_ns, "samples_ns": samples, **stats_ns(samples), "peak_rss_bytes": peak_rss_bytes()}


def main(argv) -> int:
  ap = argparse.ArgumentParser(prog="refbench.py")
  sub = ap.add_subparsers(dest="runtime", required=True)
  tg = sub.add_parser("tinygrad")
  tg.add_argument("--pickle", required=True)
  ort = sub.add_parser("onnxruntime")
  ort.add_argument("--onnx", required=True)
  ort.add_argument("--meta", required=True, help="the JIT.pkl.json written by export_with_pickle.py (input specs, seed)")
  ort.add_argument("--threads", type=int, required=True)
  for p in (tg, ort):
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
  ap = ap.parse_args(argv)
  if ap.iters < 1: raise SystemExit("error: --iters must be at least 1")
  out = bench_tinygrad(ap) if ap.runtime == "tinygrad" else bench_onnxruntime(ap)
  print(json.dumps(out), flush=True)
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
