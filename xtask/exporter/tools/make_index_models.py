#!/usr/bin/env python3
"""Test-only: models whose integer inputs index a table, with onnxruntime's answers (tests/tests/cpu/index_inputs.rs).

  make_index_models.py OUTDIR
writes OUTDIR/NAME.onnx and, per model, OUTDIR/NAME.ok_INPUT.npy (in-range values, negative ones included) with
onnxruntime's outputs for them (OUTDIR/NAME.ort_OUTPUT.npy), OUTDIR/NAME.bad_INPUT.npy (one out-of-range element) and
OUTDIR/NAME.ort_error.txt (onnxruntime's refusal of the bad values; the script fails if onnxruntime accepts them).
  gather   : Gather(table [50, 4] initializer, idx int64 [3]) -- the issue's reproduction (1000000 on 50 rows)
  gathernd : GatherND(data [5, 7] input, Cast(idx int32 [2, 2]) to int64) -- per-position ranges 5 and 7
"""

import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper


def gather():
  table = numpy_helper.from_array((np.arange(200, dtype=np.float32).reshape(50, 4) - 100) / 7, "table")
  g = helper.make_graph(
    [helper.make_node("Gather", ["table", "idx"], ["y"], axis=0, name="g0")],
    "gather",
    [helper.make_tensor_value_info("idx", TensorProto.INT64, [3])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 4])],
    [table],
  )
  ok = {"idx": np.array([-50, 49, 7], np.int64)}
  bad = {"idx": np.array([0, 1000000, 2], np.int64)}
  return g, ok, bad


def gathernd():
  g = helper.make_graph(
    [helper.make_node("Cast", ["idx"], ["i64"], to=TensorProto.INT64), helper.make_node("GatherND", ["data", "i64"], ["y"], name="gnd")],
    "gathernd",
    [helper.make_tensor_value_info("data", TensorProto.FLOAT, [5, 7]), helper.make_tensor_value_info("idx", TensorProto.INT32, [2, 2])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
  )
  data = np.random.default_rng(3).standard_normal((5, 7)).astype(np.float32)
  ok = {"data": data, "idx": np.array([[4, -7], [-5, 6]], np.int32)}
  bad = {"data": data, "idx": np.array([[4, 6], [0, 7]], np.int32)}  # element 3: 7 is past axis 1 (size 7)
  return g, ok, bad


def main(out: str):
  os.makedirs(out, exist_ok=True)
  for name, make in (("gather", gather), ("gathernd", gathernd)):
    g, ok, bad = make()
    path = os.path.join(out, f"{name}.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    for k, v in ok.items():
      np.save(os.path.join(out, f"{name}.ok_{k}.npy"), v)
    for o, r in zip([o.name for o in sess.get_outputs()], sess.run(None, ok)):
      np.save(os.path.join(out, f"{name}.ort_{o}.npy"), r)
    for k, v in bad.items():
      np.save(os.path.join(out, f"{name}.bad_{k}.npy"), v)
    try:
      sess.run(None, bad)
    except Exception as e:
      with open(os.path.join(out, f"{name}.ort_error.txt"), "w") as f:
        f.write(str(e).splitlines()[0] + "\n")
    else:
      sys.exit(f"onnxruntime accepted the out-of-range indices of {name}")


if __name__ == "__main__":
  main(sys.argv[1])
