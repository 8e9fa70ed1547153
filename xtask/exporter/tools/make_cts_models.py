"""The device conformance suite's ONNX cases (tests/tests/cts/): small graphs, one idea each, with seeded weights.

  python make_cts_models.py OUTDIR

  ew_reduce.onnx  elementwise (Mul, Add, Relu, Sigmoid) and reductions (ReduceSum, ReduceMax) of two [1,64] inputs,
                  four outputs of three shapes: the multi-output case
  conv.onnx       3x3 convolution 4->8 channels, pad 1, bias, Relu on [1,4,8,8]
  gemm.onnx       Gemm [1,32] x [32,16] + bias, then Tanh

The references the suite compares with are onnxruntime's (embedded by `compile --reference`).
"""

import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def f32(name, shape):
  return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def save(graph, path: Path):
  model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
  model.ir_version = 8
  onnx.checker.check_model(model)
  onnx.save(model, str(path))


def ew_reduce(out: Path):
  nodes = [
    helper.make_node("Mul", ["x", "y"], ["xy"]),
    helper.make_node("Add", ["xy", "x"], ["s"]),
    helper.make_node("Relu", ["s"], ["add_relu"]),
    helper.make_node("Sigmoid", ["y"], ["sig"]),
    helper.make_node("ReduceSum", ["x", "axes"], ["rsum"], keepdims=1),
    helper.make_node("ReduceMax", ["s"], ["rmax"], keepdims=0),
  ]
  axes = numpy_helper.from_array(np.array([1], dtype=np.int64), "axes")
  g = helper.make_graph(
    nodes,
    "ew_reduce",
    [f32("x", [1, 64]), f32("y", [1, 64])],
    [f32("add_relu", [1, 64]), f32("sig", [1, 64]), f32("rsum", [1, 1]), f32("rmax", [])],
    [axes],
  )
  save(g, out / "ew_reduce.onnx")


def conv(out: Path, rng):
  w = numpy_helper.from_array((rng.standard_normal((8, 4, 3, 3)) / 6).astype(np.float32), "w")
  b = numpy_helper.from_array((rng.standard_normal(8) * 0.1).astype(np.float32), "b")
  nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["out"])]
  g = helper.make_graph(nodes, "conv", [f32("x", [1, 4, 8, 8])], [f32("out", [1, 8, 8, 8])], [w, b])
  save(g, out / "conv.onnx")


def gemm(out: Path, rng):
  w = numpy_helper.from_array((rng.standard_normal((32, 16)) / np.sqrt(32)).astype(np.float32), "w")
  b = numpy_helper.from_array((rng.standard_normal(16) * 0.1).astype(np.float32), "b")
  nodes = [helper.make_node("Gemm", ["x", "w", "b"], ["g"]), helper.make_node("Tanh", ["g"], ["out"])]
  g = helper.make_graph(nodes, "gemm", [f32("x", [1, 32])], [f32("out", [1, 16])], [w, b])
  save(g, out / "gemm.onnx")


def main():
  out = Path(sys.argv[1])
  out.mkdir(parents=True, exist_ok=True)
  rng = np.random.default_rng(34)
  ew_reduce(out)
  conv(out, rng)
  gemm(out, rng)


if __name__ == "__main__":
  main()
