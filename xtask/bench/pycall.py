#!/usr/bin/env python3
"""Per-call cost from Python for `cargo xtask bench`: one process loads the same model into four callers and times them
in interleaved rounds, reported as one JSON line.

  pycall.py --bundle model.mrt --pickle JIT.pkl --onnx MODEL.onnx --threads T --rounds R --iters N --warmup W

The four callers (the bundle and the pickle come from one capture, so modelrt and tinygrad run the same kernels):
  modelrt          Model.run(feeds) -> dict of new numpy arrays (the `modelrt` wheel, on PYTHONPATH)
  modelrt_prealloc Model.run(feeds, outputs=prealloc): results written into caller-owned arrays
                   (for both, the runtime's own step time, Model.last_timing["step"], is reported too: the call minus
                   the step is what the Python layer costs)
  onnxruntime      InferenceSession.run(None, feeds) on the ONNX model (CPU provider, intra_op_num_threads=T)
  tinygrad         the unpickled TinyJit called as modeld calls it: numpy inputs wrapped as tensors (copied in by the
                   jit), jit(**feeds), each output copied back with .numpy() (refbench.py's step)
A call is what the application pays per inference, feeds ready to outputs in numpy. Every round runs each caller for N
timed calls (after W untimed ones), in an order rotated per round so that none always goes first; samples are pooled
over rounds. Inputs are the exporter's seeded inputs (refbench.seeded_inputs). Before timing, the outputs are checked:
modelrt's two calls equal each other bit for bit and tinygrad's (same kernels), and onnxruntime's within 1e-2.
Run with PYTHONPATH=<the wheel's site dir>:xtask/bench, as `cargo xtask bench` does.
"""
import argparse
import json
import os
import sys
import time


def callers(ap, meta: dict) -> dict:
  """The four callers as zero-argument functions returning {output name: numpy array}, in the first round's order."""
  for k in ("DEV", "CPU", "NULL", "AMD", "QCOM", "CACHEDB"): os.environ.pop(k, None)
  os.environ.update(meta["env"])  # before tinygrad is imported: it reads these at import time
  import pickle
  import numpy as np
  import onnxruntime as ort
  from tinygrad import Tensor
  import modelrt
  from refbench import seeded_inputs
  arrays = seeded_inputs(meta)

  m = modelrt.load(ap.bundle, device="cpu", threads=ap.threads)
  mfeeds = {t.name: np.ascontiguousarray(arrays[t.name], dtype=t.dtype) for t in m.inputs}
  prealloc = {t.name: np.empty(t.shape, t.dtype) for t in m.outputs}

  so = ort.SessionOptions()
  so.intra_op_num_threads = ap.threads
  so.inter_op_num_threads = 1
  so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
  sess = ort.InferenceSession(ap.onnx, sess_options=so, providers=["CPUExecutionProvider"])
  cast = {"tensor(float)": np.float32, "tensor(float16)": np.float16, "tensor(uint8)": np.uint8, "tensor(int64)": np.int64,
          "tensor(int32)": np.int32, "tensor(bool)": np.bool_, "tensor(double)": np.float64}
  types = {i.name: i.type for i in sess.get_inputs()}
  ofeeds = {n: a.astype(cast.get(types[n], a.dtype)) for n, a in arrays.items() if n in types}
  onames = [o.name for o in sess.get_outputs()]

  with open(ap.pickle, "rb") as f: jit = pickle.load(f)
  on_dev = {s["name"] for s in meta["inputs"] if s["on_device"]}

  def tinygrad_call():
    feeds = {n: (Tensor(a).realize() if n in on_dev else Tensor(a, device="NPY")) for n, a in arrays.items()}
    return {n: t.numpy() for n, t in jit(**feeds).items()}

  calls = {
    "modelrt": lambda: m.run(mfeeds),
    "modelrt_prealloc": lambda: m.run(mfeeds, outputs=prealloc),
    "onnxruntime": lambda: dict(zip(onames, sess.run(None, ofeeds))),
    "tinygrad": tinygrad_call,
  }
  return calls, m


def check_outputs(calls: dict) -> float:
  """The callers compute the same outputs (see the module doc); returns onnxruntime's largest absolute difference."""
  import numpy as np
  got = {name: call() for name, call in calls.items()}
  ref = got["modelrt"]
  for other in ("modelrt_prealloc", "tinygrad"):
    for n, a in ref.items():
      b = got[other].get(n)
      if b is None or np.asarray(b).tobytes() != a.tobytes():
        raise SystemExit(f"error: {other}'s output '{n}' differs from modelrt's (the bench compares unequal work)")
  worst = 0.0
  for n, a in ref.items():
    b = got["onnxruntime"].get(n)
    if b is None: raise SystemExit(f"error: onnxruntime has no output '{n}'")
    diff = float(np.max(np.abs(a.astype(np.float64) - np.asarray(b).astype(np.float64)), initial=0.0))
    if not diff <= 1e-2: raise SystemExit(f"error: onnxruntime's output '{n}' differs from modelrt's by {diff}")
    worst = max(worst, diff)
  return worst


def main(argv) -> int:
  ap = argparse.ArgumentParser(prog="pycall.py")
  ap.add_argument("--bundle", required=True)
  ap.add_argument("--pickle", required=True, help="the TinyJit pickled from the bundle's capture; JIT.pkl.json next to it")
  ap.add_argument("--onnx", required=True)
  ap.add_argument("--threads", type=int, required=True)
  ap.add_argument("--rounds", type=int, default=3)
  ap.add_argument("--iters", type=int, default=200)
  ap.add_argument("--warmup", type=int, default=20)
  a = ap.parse_args(argv)
  if a.rounds < 1 or a.iters < 1: raise SystemExit("error: --rounds and --iters must be at least 1")
  with open(a.pickle + ".json") as f: meta = json.load(f)
  calls, model = callers(a, meta)
  max_abs_vs_ort = check_outputs(calls)
  names = list(calls)
  samples: dict[str, list[int]] = {n: [] for n in names}
  steps: dict[str, list[int]] = {n: [] for n in names if n.startswith("modelrt")}  # Model.last_timing["step"]
  for r in range(a.rounds):
    for name in names[r % len(names):] + names[:r % len(names)]:
      call = calls[name]
      for _ in range(a.warmup): call()
      for _ in range(a.iters):
        t = time.perf_counter_ns()
        call()
        samples[name].append(time.perf_counter_ns() - t)
        if name in steps: steps[name].append(int(model.last_timing["step"] * 1e9))  # outside the timed span
  out = {"rounds": a.rounds, "iters": a.iters, "warmup": a.warmup, "max_abs_modelrt_vs_onnxruntime": max_abs_vs_ort}
  for name, s in samples.items():
    s.sort()
    out[name] = {"samples": len(s), "min_ns": s[0], "median_ns": s[len(s) // 2], "max_ns": s[-1]}
    if name in steps: out[name]["step_median_ns"] = sorted(steps[name])[len(steps[name]) // 2]
  print(json.dumps(out), flush=True)
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
