#!/usr/bin/env python3
"""Generate ONNX's backend node test cases for `cargo xtask conformance` (the onnx wheel ships the generators only).

  conformance_gen.py OUT_DIR

Writes, for every node test case of the installed onnx package:
  OUT_DIR/<case>/model.onnx          the test's model
  OUT_DIR/<case>/in_<j>.npy          input j of test_data_set_0 (numpy-representable tensors only)
  OUT_DIR/<case>/out_<j>.npy         expected output j
  OUT_DIR/<case>/case.json           names, ONNX dtypes, shapes, kinds and the runner's rtol/atol
and OUT_DIR/index.json (every case with its op, the ONNX ops tinygrad's frontend implements, the onnx version, this
script's sha256) last, so an interrupted run leaves no index and is regenerated, as is one made by another version of
this script.

Deterministic: numpy's and Python's global RNGs are seeded before the generators run (most of them draw from
np.random without seeding it), and every file is written in a fixed order.
bfloat16 tensors are stored as their raw 16-bit words ('<u2', the same convention as `modelrt run`), flagged by dtype
"bfloat16" in case.json. Tensors numpy cannot store portably (strings, float8/4-bit types, complex) and non-tensor
values (sequences, optionals, maps) get no file: "kind" says why.
"""

import hashlib
import json
import os
import random
import sys

import numpy as np

NUMPY_NATIVE = {"float32", "float16", "float64", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "bool"}


def _value(v, vi, path):
  """Describe (and store, when representable) one input/output value; returns its case.json record."""
  import onnx
  from onnx import numpy_helper

  rec = {"name": vi.name, "file": None}
  t = vi.type
  if not t.HasField("tensor_type"):
    rec.update(kind=t.WhichOneof("value"), dtype=None, shape=None)
    return rec
  if isinstance(v, onnx.TensorProto):
    v = numpy_helper.to_array(v)
  v = np.asarray(v)
  rec["shape"] = [int(d) for d in v.shape]
  name = v.dtype.name
  rec["dtype"] = name
  if name in NUMPY_NATIVE:
    rec["kind"] = "tensor"
    np.save(path, v.copy(order="C"), allow_pickle=False)  # not ascontiguousarray: it turns 0-d into 1-d
    rec["file"] = os.path.basename(path)
  elif name == "bfloat16":
    rec["kind"] = "tensor"
    np.save(path, v.copy(order="C").view(np.uint16), allow_pickle=False)
    rec["file"] = os.path.basename(path)
  else:
    rec["kind"] = "unrepresentable"
  return rec


def _op_of(case, ops_by_name):
  nodes = case.model.graph.node
  if "_expanded" in case.name:  # a function body: report it under the op of the case it expands
    base = case.name.split("_expanded")[0]
    if base in ops_by_name:
      return ops_by_name[base]
  return nodes[0].op_type if len(nodes) == 1 else "+".join(sorted({n.op_type for n in nodes}))


def main(argv) -> int:
  if len(argv) != 1:
    print("error: usage: conformance_gen.py OUT_DIR", file=sys.stderr)
    return 2
  out = argv[0]
  np.random.seed(0)
  random.seed(0)
  import onnx
  from onnx.backend.test.case.node import collect_testcases
  from tinygrad.nn.onnx import onnx_ops

  cases = sorted(collect_testcases(), key=lambda c: c.name)
  ops_by_name = {}
  for c in cases:
    if "_expanded" not in c.name and len(c.model.graph.node) == 1:
      ops_by_name[c.name] = c.model.graph.node[0].op_type
  index = []
  seen = set()
  for c in cases:
    if c.name in seen:
      raise SystemExit(f"error: duplicate node test case name {c.name}")
    seen.add(c.name)
    d = os.path.join(out, c.name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "model.onnx"), "wb") as f:
      f.write(c.model.SerializeToString())
    inputs, outputs = c.data_sets[0]
    g = c.model.graph
    init_names = {i.name for i in g.initializer}
    graph_inputs = [vi for vi in g.input if vi.name not in init_names]
    rec = {
      "name": c.name,
      "op": _op_of(c, ops_by_name),
      "rtol": c.rtol,
      "atol": c.atol,
      "inputs": [_value(v, vi, os.path.join(d, f"in_{j}.npy")) for j, (v, vi) in enumerate(zip(inputs, graph_inputs))],
      "outputs": [_value(v, vi, os.path.join(d, f"out_{j}.npy")) for j, (v, vi) in enumerate(zip(outputs, g.output))],
    }
    if len(inputs) != len(graph_inputs) or len(outputs) != len(g.output):
      rec["note"] = f"data set has {len(inputs)} inputs/{len(outputs)} outputs, graph {len(graph_inputs)}/{len(g.output)}"
    with open(os.path.join(d, "case.json"), "w") as f:
      f.write(json.dumps(rec, indent=1, sort_keys=True) + "\n")
    index.append({"name": c.name, "op": rec["op"]})
  with open(os.path.abspath(__file__), "rb") as f:
    generator = hashlib.sha256(f.read()).hexdigest()
  doc = {"onnx": onnx.__version__, "generator": generator, "tinygrad_ops": sorted(onnx_ops), "cases": index}
  tmp = os.path.join(out, "index.json.tmp")
  with open(tmp, "w") as f:
    f.write(json.dumps(doc, indent=1, sort_keys=True) + "\n")
  os.replace(tmp, os.path.join(out, "index.json"))
  print(f"generated {len(index)} node test cases into {out}", file=sys.stderr)
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
