#!/usr/bin/env python3
"""Test-only: rewrite an ONNX light-zoo model so its weights are seeded random initializers.

  zoo_random_weights.py IN.onnx OUT.onnx [--seed N] [--size S]

Why the light zoo folds: the `light_*.onnx` files in onnx's wheel drop their trained weights and recreate every
weight tensor with a `ConstantOfShape` node whose `value` is one number (0.02 in all nine models). A conv/gemm whose
weights are all equal gives the same value in every output channel, so tinygrad represents the result as one
channel broadcast (an EXPAND of a CONST-scaled reduce); the identical logits then reach the final Softmax, where
`x - max(x)` folds to 0 and the whole network folds to the constant 1/classes, independent of the input. The data
input is a real graph input (`data_0`), not an initializer; the folding comes only from the uniform weights. (Most
models also list their initializers as graph inputs, old-ONNX style; the exporter treats those as weights.)
densenet121 escapes because its BatchNormalization statistics are real, non-uniform initializers.

This rewrite replaces each `ConstantOfShape` whose shape input is an initializer by an initializer of that shape
holding `uniform(-a, a)` with `a = sqrt(3 / fan_in)` (unit-variance preserving; fan_in = product of the non-leading
dims, 1 for vectors), and `uniform(0.5, 1)` for 1-D tensors (biases, BatchNorm scale/bias/mean/variance: variances must stay positive). Values come
from numpy's PCG64 generator seeded with `--seed` (default 0), so a given seed always yields the same model. The
graph, its inputs and every other node are unchanged, so onnxruntime's reference and the compile see the same net.

`--size S` also sets the data input's height and width to S (the zoo's are 224). Only for fully convolutional nets
ending in a global pool (squeezenet), whose graph holds no spatial constants; it cuts the work of an emulated run so
that a CI test fits its time budget.
"""

import sys

import numpy as np
import onnx
from onnx import numpy_helper


def randomize(model: onnx.ModelProto, seed: int) -> int:
  """Replace constant-valued weights in place; returns how many were replaced."""
  rng = np.random.default_rng(seed)
  inits = {i.name: i for i in model.graph.initializer}
  keep, new_inits = [], []
  for node in model.graph.node:
    shape_init = inits.get(node.input[0]) if node.op_type == "ConstantOfShape" and node.input else None
    if shape_init is None:
      keep.append(node)
      continue
    shape = tuple(int(d) for d in numpy_helper.to_array(shape_init))
    attr = next((a.t for a in node.attribute if a.name == "value"), None)
    value = numpy_helper.to_array(attr).ravel()[0] if attr is not None else np.float32(0)
    fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
    a = np.sqrt(3.0 / max(fan_in, 1))
    arr = rng.uniform(-a, a, size=shape)
    if len(shape) == 1:
      arr = rng.uniform(0.5, 1.0, size=shape)  # biases, BatchNorm scale/mean/variance: positive
    new_inits.append(numpy_helper.from_array(arr.astype(np.asarray(value).dtype), node.output[0]))
  del model.graph.node[:]
  model.graph.node.extend(keep)
  model.graph.initializer.extend(new_inits)
  if model.ir_version < 4:  # old IR: every initializer must also be listed as a graph input
    model.graph.input.extend(onnx.helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)) for t in new_inits)
  used = {i for n in model.graph.node for i in n.input} | {o.name for o in model.graph.output}
  dead = {i.name for i in model.graph.initializer if i.name not in used}
  for i in [i for i in model.graph.initializer if i.name in dead]:
    model.graph.initializer.remove(i)
  for i in [i for i in model.graph.input if i.name in dead]:
    model.graph.input.remove(i)
  onnx.checker.check_model(model)
  return len(new_inits)


def resize_input(model: onnx.ModelProto, size: int):
  """Set the spatial dims of the one NCHW graph input that is not an initializer."""
  inits = {i.name for i in model.graph.initializer}
  data = [i for i in model.graph.input if i.name not in inits]
  if len(data) != 1 or len(data[0].type.tensor_type.shape.dim) != 4:
    sys.exit("error: --size needs one NCHW data input")
  for d in data[0].type.tensor_type.shape.dim[2:]:
    d.dim_value = size
  del model.graph.value_info[:]


def main():
  argv, opts = sys.argv[1:], {"--seed": 0, "--size": 0}
  for k in opts:
    if k in argv:
      i = argv.index(k)
      opts[k] = int(argv[i + 1])
      del argv[i : i + 2]
  args = argv
  if len(args) != 2 or any(a.startswith("--") for a in args):
    sys.exit("usage: zoo_random_weights.py IN.onnx OUT.onnx [--seed N] [--size S]")
  model = onnx.load(args[0])
  if opts["--size"]:
    resize_input(model, opts["--size"])
  n = randomize(model, opts["--seed"])
  if n == 0:
    sys.exit(f"error: {args[0]} has no ConstantOfShape weights to randomize")
  onnx.save(model, args[1])
  print(n)


if __name__ == "__main__":
  main()
