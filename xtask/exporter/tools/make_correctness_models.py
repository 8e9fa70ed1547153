#!/usr/bin/env python3
"""Test-only: small ONNX graphs that once compiled into silently wrong bundles or crashed the exporter.

  make_correctness_models.py OUT_DIR      # writes OUT_DIR/<name>.onnx for every model below, prints the names

Each is a minimal instance of one class of bug: outputs that are reordering views (DepthToSpace, Transpose, Expand,
strided Slice, Concat), outputs the program never writes (an ONNX constant, a graph input passed through), 1-D and 0-d
graph inputs, float16/float64 inputs and outputs, and inputs that feed shape-like parameters; and a float16
MatMul+Add+Tanh whose outputs differ from onnxruntime's by float16 ulps, and inputs with a named dynamic dimension.
Expected values always come from onnxruntime, never from the exporter.
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper

vi = h.make_tensor_value_info
_rng = np.random.default_rng(27)
_W16 = numpy_helper.from_array((_rng.standard_normal((16, 8)) * 0.4).astype(np.float16), "w")
_B16 = numpy_helper.from_array((_rng.standard_normal(8) * 0.2).astype(np.float16), "b")

# name -> (nodes, inputs, outputs, initializers)
MODELS = {
  "view_depth_to_space": (
    [h.make_node("Relu", ["x"], ["a"]), h.make_node("DepthToSpace", ["a"], ["z"], blocksize=2)],
    [vi("x", T.FLOAT, [1, 8, 2, 3])],
    [vi("z", T.FLOAT, [1, 2, 4, 6])],
    [],
  ),
  "view_space_to_depth": (
    [h.make_node("SpaceToDepth", ["x"], ["z"], blocksize=2)],
    [vi("x", T.FLOAT, [1, 2, 4, 6])],
    [vi("z", T.FLOAT, [1, 8, 2, 3])],
    [],
  ),
  "view_transpose": (
    [h.make_node("Relu", ["x"], ["a"]), h.make_node("Transpose", ["a"], ["z"], perm=[1, 0])],
    [vi("x", T.FLOAT, [3, 5])],
    [vi("z", T.FLOAT, [5, 3])],
    [],
  ),
  "view_expand": (
    [h.make_node("Expand", ["x", "sh"], ["z"])],
    [vi("x", T.FLOAT, [3, 1])],
    [vi("z", T.FLOAT, [3, 4])],
    [h.make_tensor("sh", T.INT64, [2], [3, 4])],
  ),
  "view_strided_slice": (
    [h.make_node("Relu", ["x"], ["a"]), h.make_node("Slice", ["a", "st", "en", "ax", "sp"], ["z"])],
    [vi("x", T.FLOAT, [4, 6])],
    [vi("z", T.FLOAT, [2, 2])],
    [
      h.make_tensor("st", T.INT64, [2], [0, 1]),
      h.make_tensor("en", T.INT64, [2], [4, 5]),
      h.make_tensor("ax", T.INT64, [2], [0, 1]),
      h.make_tensor("sp", T.INT64, [2], [2, 2]),
    ],
  ),
  "view_concat_two_outputs": (
    [h.make_node("Concat", ["x", "y"], ["z"], axis=1), h.make_node("Transpose", ["z"], ["t"], perm=[1, 0])],
    [vi("x", T.FLOAT, [2, 3]), vi("y", T.FLOAT, [2, 4])],
    [vi("z", T.FLOAT, [2, 7]), vi("t", T.FLOAT, [7, 2])],
    [],
  ),
  "view_split": (
    [h.make_node("Split", ["x"], ["a", "b"], axis=1, num_outputs=2)],
    [vi("x", T.FLOAT, [3, 4])],
    [vi("a", T.FLOAT, [3, 2]), vi("b", T.FLOAT, [3, 2])],
    [],
  ),
  "constant_output": (
    [h.make_node("Relu", ["x"], ["z"]), h.make_node("Constant", [], ["c"], value=h.make_tensor("cv", T.FLOAT, [3], [1.0, 2.0, 3.0]))],
    [vi("x", T.FLOAT, [2, 3])],
    [vi("z", T.FLOAT, [2, 3]), vi("c", T.FLOAT, [3])],
    [],
  ),
  "input_passthrough": ([h.make_node("Identity", ["x"], ["z"])], [vi("x", T.FLOAT, [2, 3])], [vi("z", T.FLOAT, [2, 3])], []),
  "input_1d_batchnorm": (
    [h.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["z"])],
    [vi("x", T.FLOAT, [2, 3, 4, 4]), vi("s", T.FLOAT, [3]), vi("b", T.FLOAT, [3]), vi("m", T.FLOAT, [3])],
    [vi("z", T.FLOAT, [2, 3, 4, 4])],
    [h.make_tensor("v", T.FLOAT, [3], [0.5, 1.0, 2.0])],
  ),
  "input_1d_broadcast": ([h.make_node("Mul", ["x", "y"], ["z"])], [vi("x", T.FLOAT, [2, 4]), vi("y", T.FLOAT, [4])], [vi("z", T.FLOAT, [2, 4])], []),
  "input_1d_gather": (
    [h.make_node("Gather", ["x", "i"], ["z"], axis=0)],
    [vi("x", T.FLOAT, [5, 3]), vi("i", T.INT64, [4])],
    [vi("z", T.FLOAT, [4, 3])],
    [],
  ),
  "input_1d_matmul": ([h.make_node("MatMul", ["x", "w"], ["z"])], [vi("x", T.FLOAT, [4]), vi("w", T.FLOAT, [4, 3])], [vi("z", T.FLOAT, [3])], []),
  "input_0d_clip": (
    [h.make_node("Clip", ["x", "lo", "hi"], ["z"])],
    [vi("x", T.FLOAT, [2, 3]), vi("lo", T.FLOAT, []), vi("hi", T.FLOAT, [])],
    [vi("z", T.FLOAT, [2, 3])],
    [],
  ),
  "output_0d": ([h.make_node("ReduceSum", ["x"], ["z"], keepdims=0)], [vi("x", T.FLOAT, [2, 3])], [vi("z", T.FLOAT, [])], []),
  "dtype_float16": ([h.make_node("Mul", ["x", "x"], ["z"])], [vi("x", T.FLOAT16, [2, 3])], [vi("z", T.FLOAT16, [2, 3])], []),
  "float16_matmul_tanh": (
    [h.make_node("MatMul", ["x", "w"], ["m"]), h.make_node("Add", ["m", "b"], ["a"]), h.make_node("Tanh", ["a"], ["z"])],
    [vi("x", T.FLOAT16, [4, 16])],
    [vi("z", T.FLOAT16, [4, 8])],
    [_W16, _B16],
  ),
  "dynamic_batch": (
    [h.make_node("Add", ["x", "y"], ["s"]), h.make_node("Relu", ["s"], ["z"])],
    [vi("x", T.FLOAT, ["N", 4]), vi("y", T.FLOAT, ["N", 4])],
    [vi("z", T.FLOAT, ["N", 4])],
    [],
  ),
  "dtype_float64": ([h.make_node("Exp", ["x"], ["z"])], [vi("x", T.DOUBLE, [2, 3])], [vi("z", T.DOUBLE, [2, 3])], []),
  "shape_input_reshape": (
    [h.make_node("Reshape", ["x", "s"], ["z"])],
    [vi("x", T.FLOAT, [2, 6]), vi("s", T.INT64, [2])],
    [vi("z", T.FLOAT, [3, 4])],
    [],
  ),
  "shape_input_via_cast_pad": (
    [h.make_node("Cast", ["p"], ["q"], to=T.INT64), h.make_node("Pad", ["x", "q"], ["z"])],
    [vi("x", T.FLOAT, [2, 3]), vi("p", T.INT32, [4])],
    [vi("z", T.FLOAT, [3, 5])],
    [],
  ),
  "constant_eyelike": ([h.make_node("EyeLike", ["x"], ["z"], k=1)], [vi("x", T.FLOAT, [3, 4])], [vi("z", T.FLOAT, [3, 4])], []),
  "constant_no_inputs": (
    [h.make_node("Constant", [], ["c"], value=h.make_tensor("cv", T.FLOAT, [2], [4.0, 5.0])), h.make_node("Mul", ["c", "c"], ["z"])],
    [],
    [vi("z", T.FLOAT, [2])],
    [],
  ),
  "constant_size": ([h.make_node("Size", ["x"], ["n"])], [vi("x", T.FLOAT, [2, 5])], [vi("n", T.INT64, [])], []),
  "python_number_output": (
    [h.make_node("Size", ["x"], ["n"]), h.make_node("Relu", ["x"], ["z"])],
    [vi("x", T.FLOAT, [2, 5])],
    [vi("n", T.INT64, []), vi("z", T.FLOAT, [2, 5])],
    [],
  ),
  "int_division": (
    [h.make_node("Div", ["a", "b"], ["q"]), h.make_node("Mod", ["a", "b"], ["r"])],
    [vi("a", T.INT32, [6]), vi("b", T.INT32, [6])],
    [vi("q", T.INT32, [6]), vi("r", T.INT32, [6])],
    [],
  ),
  "known_wrong_lpnorm": ([h.make_node("LpNormalization", ["x"], ["z"], axis=1)], [vi("x", T.FLOAT, [2, 3])], [vi("z", T.FLOAT, [2, 3])], []),
  "random_op": (
    [h.make_node("RandomNormalLike", ["x"], ["r"]), h.make_node("Add", ["x", "r"], ["z"])],
    [vi("x", T.FLOAT, [2, 3])],
    [vi("z", T.FLOAT, [2, 3])],
    [],
  ),
  "scatter_indices_input": (
    [h.make_node("ScatterElements", ["x", "i", "u"], ["z"], axis=0)],
    [vi("x", T.FLOAT, [3, 2]), vi("i", T.INT64, [2, 2]), vi("u", T.FLOAT, [2, 2])],
    [vi("z", T.FLOAT, [3, 2])],
    [],
  ),
  "shape_of_input_is_fine": (
    [h.make_node("Shape", ["y"], ["s"]), h.make_node("Reshape", ["x", "s"], ["z"])],
    [vi("x", T.FLOAT, [2, 6]), vi("y", T.FLOAT, [3, 4])],
    [vi("z", T.FLOAT, [3, 4])],
    [],
  ),
}


def make(name: str, out_dir: str) -> str:
  nodes, ins, outs, inits = MODELS[name]
  m = h.make_model(h.make_graph(nodes, name, ins, outs, inits), opset_imports=[h.make_opsetid("", 18)])
  m.ir_version = 8
  onnx.checker.check_model(m, full_check=True)
  path = os.path.join(out_dir, f"{name}.onnx")
  onnx.save(m, path)
  return path


def main(out_dir: str):
  os.makedirs(out_dir, exist_ok=True)
  for name in MODELS:
    print(make(name, out_dir))


if __name__ == "__main__":
  main(sys.argv[1])
