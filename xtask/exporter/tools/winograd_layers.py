#!/usr/bin/env python3
"""Per-layer timing of the Winograd pass (docs/cpu-kernels.md, "Winograd convolutions"): one stride-1 3x3 conv per
layer, compiled for cpu-x86_64 with `cargo xtask compile` once per baseline (x86-64-v3, x86-64-v4) and mode
(`--winograd off`: the default export, i.e. the channel-last direct convolution of the layout pass; `--winograd on`),
each bundle timed with `modelrt bench`, and onnxruntime timed on the same conv, all of them interleaved round by
round; min of the rounds' minima. Writes a JSON results file (with the load average before and after) and prints the
markdown table docs/bench.md quotes.

  python xtask/exporter/tools/winograd_layers.py --modelrt target/release/modelrt --out target/bench/winograd.json
        [--threads 1] [--rounds 5] [--iters 50] [--layers r3x3,c32] [--baselines x86-64-v3,x86-64-v4]
                                                                             (from the repository root)

The model files are made here from seeded random weights (scaled by 1/sqrt(fan-in)); nothing is downloaded.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

# name: (input channels, output channels, height, width); r3x3 is the resnet-style layer of
# docs/cpu-kernels.md section 5, the others span the speed rule's two axes (channels, 4x4 tiles).
LAYERS = {
  "r3x3": (64, 64, 56, 56),
  "r28": (128, 128, 28, 28),
  "r14": (256, 256, 14, 14),
  "r7": (512, 512, 7, 7),
  "c32": (32, 32, 56, 56),
  "c16": (16, 16, 64, 128),
  "c24": (24, 24, 32, 64),
  "s64": (64, 64, 16, 16),
  "t64": (64, 64, 8, 8),
  "t128": (128, 128, 8, 8),
  "c3": (3, 16, 128, 256),
  "c8": (8, 8, 32, 32),
  "t16": (16, 16, 8, 8),
  "u64": (64, 64, 4, 4),
}


def conv_model(path: str, c: int, k: int, h: int, w: int, seed: int = 0):
  from onnx import TensorProto, helper, numpy_helper, save

  rng = np.random.default_rng(seed)
  wt = (rng.standard_normal((k, c, 3, 3)) / np.sqrt(9 * c)).astype(np.float32)
  b = (0.1 * rng.standard_normal(k)).astype(np.float32)
  node = helper.make_node("Conv", ["x", "w", "b"], ["y"], pads=[1, 1, 1, 1], kernel_shape=[3, 3])
  graph = helper.make_graph(
    [node],
    "layer",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, h, w])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    [numpy_helper.from_array(wt, "w"), numpy_helper.from_array(b, "b")],
  )
  save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)


def compile_bundle(xtask: list[str], model: str, out: str, mode: str, threads: int, baseline: str):
  cmd = [*xtask, "compile", model, "--target", "cpu-x86_64", "--cpu-baseline", baseline, "--threads", str(threads)]
  cmd += ["--winograd", mode, "-o", out]
  r = subprocess.run(cmd, capture_output=True, text=True)
  if r.returncode != 0:
    sys.exit(f"error: {' '.join(cmd)} failed: {r.stderr.strip().splitlines()[-1] if r.stderr.strip() else r.returncode}")
  # the compile's own check: "... as F(4x4,3x3): max abs error E vs onnxruntime"
  err = re.search(r"as F\(4x4,3x3\): max abs error (\S+) vs onnxruntime", r.stderr)
  return err is not None, float(err.group(1)) if err else None


def bench_bundle(modelrt: str, bundle: str, iters: int) -> float:
  r = subprocess.run([modelrt, "bench", bundle, "--json", "--iters", str(iters), "--warmup", "5"], capture_output=True, text=True)
  if r.returncode != 0:
    sys.exit(f"error: modelrt bench {bundle} failed: {r.stderr.strip()}")
  return json.loads(r.stdout)["min_ns"] / 1e3


def bench_ort(model: str, shape, threads: int, iters: int) -> float:
  import onnxruntime as ort

  so = ort.SessionOptions()
  so.intra_op_num_threads = threads
  so.inter_op_num_threads = 1
  s = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
  x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
  for _ in range(5):
    s.run(None, {"x": x})
  best = float("inf")
  for _ in range(iters):
    t = time.perf_counter()
    s.run(None, {"x": x})
    best = min(best, time.perf_counter() - t)
  return best * 1e6


BASELINES = ("x86-64-v3", "x86-64-v4")
SHORT = {"x86-64-v3": "v3", "x86-64-v4": "v4"}


def loadavg() -> float:
  with open("/proc/loadavg") as f:
    return float(f.read().split()[0])


def main(argv):
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  ap.add_argument("--modelrt", required=True, help="the modelrt binary (a release build)")
  ap.add_argument("--xtask", default="cargo xtask", help="how to run the xtask CLI (default: cargo xtask)")
  ap.add_argument("--out", required=True, help="results JSON file")
  ap.add_argument("--threads", type=int, default=1)
  ap.add_argument("--rounds", type=int, default=5)
  ap.add_argument("--iters", type=int, default=50)
  ap.add_argument("--layers", default=",".join(LAYERS))
  ap.add_argument("--baselines", default=",".join(BASELINES), help="CPU baselines to compile for (x86-64-v3,x86-64-v4)")
  a = ap.parse_args(argv)
  names = a.layers.split(",")
  if bad := [n for n in names if n not in LAYERS]:
    sys.exit(f"error: unknown layer {bad[0]} (known: {', '.join(LAYERS)})")
  baselines = a.baselines.split(",")
  if bad := [b for b in baselines if b not in BASELINES]:
    sys.exit(f"error: unknown baseline {bad[0]} (known: {', '.join(BASELINES)})")
  xtask = a.xtask.split()
  rows, loads = [], [loadavg()]
  with tempfile.TemporaryDirectory() as tmp:
    built, errors = {}, {}
    for n in names:
      c, k, h, w = LAYERS[n]
      model = os.path.join(tmp, f"{n}.onnx")
      conv_model(model, c, k, h, w)
      for base in baselines:
        for mode in ("off", "on"):
          out = os.path.join(tmp, f"{n}-{base}-{mode}.mrt")
          rewritten, err = compile_bundle(xtask, model, out, mode, a.threads, base)
          if mode == "on":
            errors[n] = err
          if rewritten != (mode == "on"):
            sys.exit(f"error: {n} --winograd {mode}: the compile {'did not rewrite' if mode == 'on' else 'rewrote'} the conv")
          built[(n, base, mode)] = out
      print(f"compiled {n}", file=sys.stderr, flush=True)
    loads.append(loadavg())
    best = {}
    for r in range(a.rounds):  # interleaved: every variant of every layer once per round
      for n in names:
        c, k, h, w = LAYERS[n]
        times = {}
        for base in baselines:
          times[f"direct_{SHORT[base]}"] = bench_bundle(a.modelrt, built[(n, base, "off")], a.iters)
          times[f"winograd_{SHORT[base]}"] = bench_bundle(a.modelrt, built[(n, base, "on")], a.iters)
        times["onnxruntime"] = bench_ort(os.path.join(tmp, f"{n}.onnx"), (1, c, h, w), a.threads, a.iters)
        for key, v in times.items():
          best[(n, key)] = min(best.get((n, key), float("inf")), v)
      loads.append(loadavg())
      print(f"round {r + 1}/{a.rounds} done (load average {loads[-1]:.1f})", file=sys.stderr, flush=True)
  keys = [f"{m}_{SHORT[b]}" for b in baselines for m in ("direct", "winograd")] + ["onnxruntime"]
  for n in names:
    c, k, h, w = LAYERS[n]
    tiles = -(-h // 4) * -(-w // 4)
    row = {"layer": n, "c": c, "k": k, "h": h, "w": w, "tiles": tiles, "max_abs_err": errors[n]}
    row.update({f"{key}_us": best[(n, key)] for key in keys})
    rows.append(row)
  os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
  meta = {"threads": a.threads, "rounds": a.rounds, "iters": a.iters, "baselines": baselines, "loadavg": loads}
  with open(a.out, "w") as f:
    json.dump({**meta, "layers": rows}, f, indent=1)
  print_table(rows, baselines)
  print(f"\nload average (1 min) before compiling, after compiling and after each round: {', '.join(f'{x:.1f}' for x in loads)}")
  return 0


def print_table(rows, baselines):
  head = ["layer", "C→K", "output", "4x4 tiles"]
  for b in baselines:
    head += [f"direct {SHORT[b]} µs", f"Winograd {SHORT[b]} µs", f"{SHORT[b]} Winograd speed-up"]
  head += ["onnxruntime µs", "check: max abs err"]
  print("| " + " | ".join(head) + " |")
  print("|---|---|---|" + "---:|" * (len(head) - 3))
  for r in rows:
    cells = [r["layer"], f"{r['c']}→{r['k']}", f"{r['h']}x{r['w']}", str(r["tiles"])]
    for b in baselines:
      d, wi = r[f"direct_{SHORT[b]}_us"], r[f"winograd_{SHORT[b]}_us"]
      cells += [f"{d:.0f}", f"{wi:.0f}", f"{d / wi:.2f}x"]
    err = "-" if r["max_abs_err"] is None else f"{r['max_abs_err']:.1e}"
    cells += [f"{r['onnxruntime_us']:.0f}", err]
    print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
