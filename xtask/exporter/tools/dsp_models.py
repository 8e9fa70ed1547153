#!/usr/bin/env python3
"""MobileNetV2-shaped test models for the Hexagon DSP target, built with onnx.helper and random He-init weights.

  tools/dsp_models.py --out DIR [--res 64] [--full] [--seed 0]

Writes DIR/float.onnx (float32) and DIR/qdq.onnx (onnxruntime static quantisation: QDQ, uint8 activations and weights,
per-tensor, asymmetric; calibrated on 4 seeded random inputs). `--full` is the MobileNetV2-1.0 layout (stem 32,
inverted residuals (t,c,n,s) = (1,16,1,1) (6,24,2,2) (6,32,3,2) (6,64,4,2) (6,96,3,1) (6,160,3,2) (6,320,1,1), 1x1 conv
1280, global average pool, Gemm 1000); without it a small net with the same block types (stem, a t=1 block, a strided
t=6 block, a residual t=6 block, head conv, pool, Gemm 10) for CI. ReLU6 is `Clip(0, 6)`. Also `--dwtrap`: a single
QDQ depthwise 3x3 conv over 576 channels at 7x7 (the shape that exposes tinygrad 0.14's false vector alignment), and
`--heads N`: N small Gemm heads (16 -> 2, ReLU) on one input concatenated into one 2N-wide output, the shape of a
driver-monitoring head whose fused concat kernel reads more buffers than a FastRPC launch carries (docs/hw/fastrpc.md §3).
`--dm`: a driver-monitoring-shaped net in miniature (6x64x32 input, three strided convs, pooling, 23 Gemm heads
concatenated into a 38-wide output).
"""

import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

FULL = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]
SMALL = [(1, 8, 1, 1), (6, 16, 1, 2), (6, 16, 1, 1)]


class Net:
  def __init__(self, seed: int):
    self.rng, self.nodes, self.inits, self.n = np.random.default_rng(seed), [], [], 0

  def name(self, p: str) -> str:
    self.n += 1
    return f"{p}{self.n}"

  def weight(self, shape, fan_in: int) -> str:
    n = self.name("w")
    self.inits.append(numpy_helper.from_array((self.rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32), n))
    return n

  def bias(self, c: int) -> str:
    n = self.name("b")
    self.inits.append(numpy_helper.from_array((self.rng.standard_normal(c) * 0.1).astype(np.float32), n))
    return n

  def conv(self, x: str, cin: int, cout: int, k: int, stride: int, groups: int = 1, relu6: bool = True) -> str:
    w = self.weight((cout, cin // groups, k, k), cin // groups * k * k)
    y = self.name("conv")
    self.nodes.append(
      helper.make_node("Conv", [x, w, self.bias(cout)], [y], kernel_shape=[k, k], strides=[stride, stride], pads=[k // 2] * 4, group=groups)
    )
    if not relu6:
      return y
    lo, hi = self.name("lo"), self.name("hi")
    self.inits += [numpy_helper.from_array(np.array(0, np.float32), lo), numpy_helper.from_array(np.array(6, np.float32), hi)]
    out = self.name("relu6")
    self.nodes.append(helper.make_node("Clip", [y, lo, hi], [out]))
    return out

  def block(self, x: str, cin: int, t: int, cout: int, stride: int) -> str:
    h = self.conv(x, cin, cin * t, 1, 1) if t != 1 else x
    h = self.conv(h, cin * t, cin * t, 3, stride, groups=cin * t)
    h = self.conv(h, cin * t, cout, 1, 1, relu6=False)
    if stride == 1 and cin == cout:
      out = self.name("add")
      self.nodes.append(helper.make_node("Add", [x, h], [out]))
      return out
    return h


def mobilenet(res: int, full: bool, seed: int) -> onnx.ModelProto:
  net = Net(seed)
  x = net.conv("input", 3, 32 if full else 16, 3, 2)
  c = 32 if full else 16
  for t, cout, n, s in FULL if full else SMALL:
    for i in range(n):
      x = net.block(x, c, t, cout, s if i == 0 else 1)
      c = cout
  head, classes = (1280, 1000) if full else (64, 10)
  x = net.conv(x, c, head, 1, 1)
  pooled, flat = net.name("gap"), net.name("flat")
  net.nodes += [helper.make_node("GlobalAveragePool", [x], [pooled]), helper.make_node("Flatten", [pooled], [flat])]
  w = net.name("fcw")
  net.inits.append(numpy_helper.from_array((net.rng.standard_normal((classes, head)) * np.sqrt(1.0 / head)).astype(np.float32), w))
  net.nodes.append(helper.make_node("Gemm", [flat, w, net.bias(classes)], ["logits"], transB=1))
  return _model(net, [1, 3, res, res], [1, classes])


def dwtrap(seed: int) -> onnx.ModelProto:
  net = Net(seed)
  net.nodes.append(helper.make_node("Identity", ["input"], ["x0"]))
  y = net.conv("x0", 576, 576, 3, 1, groups=576, relu6=False)
  net.nodes.append(helper.make_node("Identity", [y], ["logits"]))
  return _model(net, [1, 576, 7, 7], [1, 576, 7, 7])


def heads(n: int, seed: int) -> onnx.ModelProto:
  net = Net(seed)
  outs = []
  for _ in range(n):
    w, y, r = net.weight((2, 16), 16), net.name("gemm"), net.name("relu")
    net.nodes += [helper.make_node("Gemm", ["input", w, net.bias(2)], [y], transB=1), helper.make_node("Relu", [y], [r])]
    outs.append(r)
  net.nodes.append(helper.make_node("Concat", outs, ["logits"], axis=1))
  return _model(net, [1, 16], [1, 2 * n])


def driver_monitoring(seed: int) -> onnx.ModelProto:
  """A driver-monitoring-shaped net in miniature: a 6-channel 64x32 image, three strided 3x3 convs, global pooling,
  then 23 Gemm heads (15 two-wide, 8 one-wide) concatenated into one 38-wide output."""
  net = Net(seed)
  x, c = "input", 6
  for cout in (16, 32, 64):
    x, c = net.conv(x, c, cout, 3, 2), cout
  pooled, flat = net.name("gap"), net.name("flat")
  net.nodes += [helper.make_node("GlobalAveragePool", [x], [pooled]), helper.make_node("Flatten", [pooled], [flat])]
  outs = []
  for width in [2] * 15 + [1] * 8:
    y = net.name("head")
    net.nodes.append(helper.make_node("Gemm", [flat, net.weight((width, c), c), net.bias(width)], [y], transB=1))
    outs.append(y)
  net.nodes.append(helper.make_node("Concat", outs, ["logits"], axis=1))
  return _model(net, [1, 6, 64, 32], [1, 38])


def _model(net: Net, in_shape, out_shape) -> onnx.ModelProto:
  g = helper.make_graph(
    net.nodes,
    "mobilenet_like",
    [helper.make_tensor_value_info("input", TensorProto.FLOAT, in_shape)],
    [helper.make_tensor_value_info("logits", TensorProto.FLOAT, out_shape)],
    net.inits,
  )
  m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="modelrt-dsp-test")
  m.ir_version = 8
  onnx.checker.check_model(m)
  return m


def quantize(float_path: str, qdq_path: str, shape, seed: int):
  from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

  class Reader(CalibrationDataReader):
    def __init__(self):
      rng = np.random.default_rng(seed + 1000)
      self.data = iter([{"input": rng.standard_normal(shape).astype(np.float32)} for _ in range(4)])

    def get_next(self):
      return next(self.data, None)

  quantize_static(
    float_path,
    qdq_path,
    Reader(),
    quant_format=QuantFormat.QDQ,
    per_channel=False,
    reduce_range=False,
    activation_type=QuantType.QUInt8,
    weight_type=QuantType.QUInt8,
    extra_options={"ActivationSymmetric": False},
  )


def main():
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  ap.add_argument("--out", required=True)
  ap.add_argument("--res", type=int, default=64)
  ap.add_argument("--full", action="store_true")
  ap.add_argument("--dwtrap", action="store_true")
  ap.add_argument("--heads", type=int, default=0)
  ap.add_argument("--dm", action="store_true")
  ap.add_argument("--seed", type=int, default=0)
  a = ap.parse_args()
  os.makedirs(a.out, exist_ok=True)
  build = {"dm": lambda: driver_monitoring(a.seed), "dwtrap": lambda: dwtrap(a.seed), "heads": lambda: heads(a.heads, a.seed)}
  m = next((f() for k, f in build.items() if getattr(a, k)), None) or mobilenet(a.res, a.full, a.seed)
  shape = [d.dim_value for d in m.graph.input[0].type.tensor_type.shape.dim]
  fp = os.path.join(a.out, "float.onnx")
  onnx.save(m, fp)
  quantize(fp, os.path.join(a.out, "qdq.onnx"), shape, a.seed)


if __name__ == "__main__":
  main()
