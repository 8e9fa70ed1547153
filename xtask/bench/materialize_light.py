#!/usr/bin/env python3
"""Turn an ONNX "light" zoo model into a benchmarkable one.

  materialize_light.py IN.onnx OUT.onnx [--seed N]

The light models in onnx's backend test data replace every weight with `ConstantOfShape(value=c)` (c = 0.02), so tinygrad
constant-folds the whole network at capture time and the "model" becomes one input copy, which would benchmark nothing.
This replaces each such node by an initializer of the same shape and dtype holding c * U(0.5, 1.5) (seeded): same sign
and magnitude as the original constants, so the network stays numerically tame, but the weights are no longer foldable
and every runtime has to run the real convolutions. The graph is otherwise unchanged.
"""
import argparse
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def materialize(model: onnx.ModelProto, seed: int) -> int:
  rng = np.random.default_rng(seed)
  inits = {i.name: i for i in model.graph.initializer}
  keep, replaced = [], 0
  for node in model.graph.node:
    value = next((a.t for a in node.attribute if a.name == "value"), None)
    if node.op_type != "ConstantOfShape" or node.input[0] not in inits:
      keep.append(node)
      continue
    shape = tuple(int(d) for d in numpy_helper.to_array(inits[node.input[0]]))
    const = numpy_helper.to_array(value) if value is not None else np.zeros(1, np.float32)
    data = (const.reshape(()) * rng.uniform(0.5, 1.5, shape)).astype(const.dtype)
    model.graph.initializer.append(numpy_helper.from_array(data, node.output[0]))
    if model.ir_version < 4:  # old IR: every initializer must also be declared as a graph input (as the model's others are)
      model.graph.input.append(onnx.helper.make_tensor_value_info(node.output[0], onnx.helper.np_dtype_to_tensor_dtype(data.dtype), shape))
    replaced += 1
  del model.graph.node[:]
  model.graph.node.extend(keep)
  # drop the shape constants only the replaced nodes used (onnxruntime warns about unused initializers)
  used = {i for n in model.graph.node for i in n.input} | {o.name for o in model.graph.output}
  dead = {i.name for i in model.graph.initializer if i.name not in used}
  kept_inits = [i for i in model.graph.initializer if i.name not in dead]
  kept_inputs = [i for i in model.graph.input if i.name not in dead]
  del model.graph.initializer[:]
  model.graph.initializer.extend(kept_inits)
  del model.graph.input[:]
  model.graph.input.extend(kept_inputs)
  return replaced


def main(argv) -> int:
  ap = argparse.ArgumentParser(prog="materialize_light.py")
  ap.add_argument("src")
  ap.add_argument("dst")
  ap.add_argument("--seed", type=int, default=0)
  ap = ap.parse_args(argv)
  model = onnx.load(ap.src)
  n = materialize(model, ap.seed)
  if n == 0:
    print(f"error: {ap.src} has no ConstantOfShape weights to materialize", file=sys.stderr)
    return 2
  onnx.checker.check_model(model)
  onnx.save(model, ap.dst)
  print(f"materialized {n} ConstantOfShape weights -> {ap.dst}", file=sys.stderr)
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
