#!/usr/bin/env python3
"""Test-only: write an openpilot-compile3-style pickle of an ONNX model (the capture + `dump_pickle` of tinygrad master's
examples/openpilot/compile3.py, which is not shipped in the PyPI package), so `export.py --pickle` can be tested.

  DEV=CPU:CLANG:x86_64,x86-64-v3 make_test_pickle.py MODEL.onnx OUT.pkl [--oob]
--oob writes the PICKLE_OOB=1 layout: i64 len(opcodes) | protocol-5 opcodes | per out-of-band buffer: i64 nbytes | bytes.
"""

import io
import os
import pickle
import struct
import sys

os.environ.setdefault("JIT_BATCH_SIZE", "0")
os.environ.setdefault("NUM_CPU_THREADS", "4")
os.environ.setdefault("BEAM", "0")
os.environ.setdefault("CACHELEVEL", "0")
import numpy as np
from tinygrad import Context, Device, Tensor, TinyJit, dtypes
from tinygrad.nn.onnx import OnnxRunner


def dump_pickle(obj, f, oob: bool):
  if not oob:
    pickle.dump(obj, f)
    return
  chunks = []

  def buffer_callback(pb: pickle.PickleBuffer):
    m = pb.raw()
    chunks.append(struct.pack("<q", m.nbytes) + bytes(m))
    pb.release()

  stream = io.BytesIO()
  pickle.Pickler(stream, protocol=5, buffer_callback=buffer_callback).dump(obj)
  f.write(struct.pack("<q", len(stream.getvalue())))
  f.write(stream.getvalue())
  for c in chunks:
    f.write(c)


def make_pickle(onnx_file: str, out: str, oob: bool):
  """Capture `onnx_file` with TinyJit on Device.DEFAULT (3 calls, as compile3) and write OUT, OUT.out.npy, OUT.in.npz."""
  runner = OnnxRunner(onnx_file)
  shapes = {n: tuple(s if isinstance(s, int) else 1 for s in spec.shape) for n, spec in runner.graph_inputs.items()}
  types = {n: (dtypes.float32 if spec.dtype is dtypes.float16 else spec.dtype) for n, spec in runner.graph_inputs.items()}
  Tensor.manual_seed(100)
  inputs = {k: Tensor(Tensor.randn(*shp, dtype=types[k]).mul(8).realize().numpy(), device="NPY") for k, shp in sorted(shapes.items())}
  inputs = {k: Tensor(v.numpy(), device=Device.DEFAULT).realize() if "img" in k else v for k, v in inputs.items()}

  @TinyJit(prune=True)
  def run_onnx_jit(**kwargs):
    return next(iter(runner({k: v.to(Device.DEFAULT) for k, v in kwargs.items()}).values())).cast("float32")

  for _ in range(3):
    with Context(OPENPILOT_HACKS=1):
      ret = run_onnx_jit(**inputs).numpy()
  with open(out, "wb") as f:
    dump_pickle(run_onnx_jit, f, oob)
  np.save(out + ".out.npy", ret)
  np.savez(out + ".in.npz", **{k: v.numpy() for k, v in inputs.items()})
  print(f"wrote {out} ({os.path.getsize(out)} bytes)")


def main():
  make_pickle(sys.argv[1], sys.argv[2], "--oob" in sys.argv)


if __name__ == "__main__":
  main()
