#!/usr/bin/env python3
"""Interleaved timing of modelrt bundles against onnxruntime on the same ONNX model, plus the FMA width of each
bundle's kernels: the per-layer and per-model figures of docs/bench.md "Channel-last convolutions".

  conv_layers.py --modelrt BIN --onnx M.onnx --threads T --bundle LABEL=B.mrt [--bundle ...] [--rounds 5] [--iters 50]

Each round runs every runtime once (modelrt: `modelrt bench --json`, a fresh process; onnxruntime: a fresh
Python process with intra-op threads T) in an order rotated per round; the samples are pooled. Prints one Markdown
row per runtime: min and median step (µs), ratio of the min to onnxruntime's min, and for bundles the FMA
instructions of the kernels by register width (`llvm-objdump-19 -d` of each kernel object). Min is reported first:
on a shared machine the median carries the other processes' load.
"""

import argparse
import json
import pathlib
import subprocess
import sys
import tempfile

ORT = r"""
import sys, time, json, numpy as np, onnxruntime as ort
o = ort.SessionOptions(); o.intra_op_num_threads = int(sys.argv[2]); o.inter_op_num_threads = 1
s = ort.InferenceSession(sys.argv[1], o, providers=["CPUExecutionProvider"])
feeds = {i.name: np.random.default_rng(0).standard_normal([d if isinstance(d, int) else 1 for d in i.shape]).astype(np.float32)
         for i in s.get_inputs()}
for _ in range(5): s.run(None, feeds)
t = []
for _ in range(int(sys.argv[3])):
  a = time.perf_counter_ns(); s.run(None, feeds); t.append(time.perf_counter_ns() - a)
print(json.dumps(t))
"""


def count_fmas(objs: list[bytes]) -> tuple[int, int, int]:
    z = y = x = 0
    for obj in objs:
        with tempfile.NamedTemporaryFile(suffix=".o") as f:
            f.write(obj)
            f.flush()
            dis = subprocess.run(
                ["llvm-objdump-19", "-d", f.name], check=False, capture_output=True, text=True
            ).stdout
        for line in dis.splitlines():
            if "vfmadd" in line or "vfnmadd" in line:
                z += "zmm" in line
                y += "ymm" in line
                x += "xmm" in line
    return z, y, x


def main(argv) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--modelrt", required=True)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--onnx", required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--bundle", action="append", required=True, metavar="LABEL=PATH")
    ap.add_argument(
        "--manifest",
        action="append",
        default=[],
        metavar="LABEL=DIR",
        help="exporter manifest dir (FMA counts)",
    )
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--name", default="")
    a = ap.parse_args(argv)
    bundles = dict(b.split("=", 1) for b in a.bundle)
    manifests = dict(m.split("=", 1) for m in a.manifest)
    runtimes = list(bundles) + ["onnxruntime"]
    samples: dict[str, list[int]] = {r: [] for r in runtimes}
    for r in range(a.rounds):
        order = runtimes[r % len(runtimes) :] + runtimes[: r % len(runtimes)]
        for rt in order:
            if rt == "onnxruntime":
                out = subprocess.run(
                    [a.python, "-c", ORT, a.onnx, str(a.threads), str(a.iters)],
                    capture_output=True,
                    text=True,
                    check=True,
                )
                samples[rt] += json.loads(out.stdout)
            else:
                cmd = [
                    a.modelrt,
                    "bench",
                    bundles[rt],
                    "--json",
                    "--iters",
                    str(a.iters),
                    "--warmup",
                    "5",
                    "--threads",
                    str(a.threads),
                ]
                out = subprocess.run(cmd, capture_output=True, text=True, check=True)
                samples[rt] += json.loads(out.stdout)["samples_ns"]
    ort_min = min(samples["onnxruntime"])
    for rt in runtimes:
        s = sorted(samples[rt])
        fm = ""
        if rt in manifests:
            d = pathlib.Path(manifests[rt])
            m = json.loads((d / "manifest.json").read_text())
            objs = [(d / k["binary"]).read_bytes() for k in m["kernels"]]
            z, y, x = count_fmas(objs)
            fm = f"{z} / {y} / {x}"
        print(
            f"| {a.name} | {a.threads} | {rt} | {s[0] / 1e3:.0f} | {s[len(s) // 2] / 1e3:.0f} | {s[0] / ort_min:.2f} | {fm} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
