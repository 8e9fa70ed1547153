#!/usr/bin/env python3
"""Long-lived worker for `cargo xtask conformance`: serves one request per stdin line, one JSON reply per line.

  conformance_worker.py export     requests {"argv": [...]}: run export.py's main(argv) in this process
                                   reply    {"rc": N, "stderr": "..."} or {"exception": "traceback text"}
  conformance_worker.py tinygrad   requests {"model": PATH, "inputs": {NAME: NPY}, "out_dir": DIR}: run the model
                                   eagerly with tinygrad's OnnxRunner on its CPU device, save output j as DIR/out_<j>.npy
                                   reply    {"outputs": [{"name", "file", "dtype"}]} or {"error": "one line"}

Starting Python + tinygrad per case costs seconds; the harness instead keeps one worker per mode and restarts it when
a case times out or kills it. The reply channel is a private copy of the original stdout: file descriptor 1 is pointed
at stderr so nothing printed by tinygrad, clang or onnx can corrupt the protocol. The export worker's environment is
pinned by export.py itself on the first request (every request uses the same target); the tinygrad worker must be
started with DEV=CPU.
"""

import io
import json
import os
import sys
import traceback


def _export(req: dict) -> dict:
  import export  # export.py sits next to this script, and Python puts the script's directory on its path

  buf = io.StringIO()
  old = sys.stderr
  sys.stderr = buf
  try:
    rc = export.main(req["argv"])
  except BaseException:
    sys.stderr = old
    return {"exception": traceback.format_exc(), "stderr": buf.getvalue()}
  finally:
    sys.stderr = old
  return {"rc": int(rc), "stderr": buf.getvalue()}


def _tinygrad(req: dict) -> dict:
  import numpy as np
  from tinygrad import Tensor
  from tinygrad.nn.onnx import OnnxRunner

  try:
    runner = OnnxRunner(req["model"])
    feeds = {}
    for name, path in req["inputs"].items():
      arr = np.load(path, allow_pickle=False)
      if req.get("bfloat16", {}).get(name):
        import ml_dtypes

        arr = arr.view(ml_dtypes.bfloat16)
      feeds[name] = arr
    outs = runner(feeds)
    replies = []
    for j, name in enumerate(runner.graph_outputs):
      v = outs[name]
      if isinstance(v, Tensor):
        v = v.numpy()
      elif isinstance(v, (list, tuple)):
        return {"error": f"output '{name}' is a sequence"}
      v = np.asarray(v)
      dtype = v.dtype.name
      if dtype == "bfloat16":
        v = v.view(np.uint16)
      file = os.path.join(req["out_dir"], f"out_{j}.npy")
      np.save(file, v.copy(order="C"), allow_pickle=False)  # not ascontiguousarray: it turns 0-d into 1-d
      replies.append({"name": name, "file": file, "dtype": dtype})
    return {"outputs": replies}
  except Exception as e:
    line = f"{type(e).__name__}: {e}".splitlines()[0] if str(e) else type(e).__name__
    return {"error": line[:300]}


def main(argv) -> int:
  if len(argv) != 1 or argv[0] not in ("export", "tinygrad"):
    print("error: usage: conformance_worker.py export|tinygrad", file=sys.stderr)
    return 2
  serve = _export if argv[0] == "export" else _tinygrad
  reply = os.fdopen(os.dup(1), "w", buffering=1)
  os.dup2(2, 1)
  sys.stdout = sys.stderr
  for line in sys.stdin:
    if not line.strip():
      continue
    req = json.loads(line)
    out = serve(req)
    reply.write(json.dumps(out) + "\n")
    reply.flush()
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
