"""Generate an ONNX model at the scale of openpilot's big driving model (never committed).

openpilot's `big_driving_supercombo.onnx` is about 1.76 GB; this model has more than 1 GB of float16
weights and the driving model's inputs (openpilot 0.11's vision and policy metadata): two camera
frames `img` and `big_img` (1x12x128x256 uint8), `desire_pulse` (1x25x8), `traffic_convention`
(1x2) and `features_buffer` (1x25x512), all float16 except the frames, and one output `outputs`
(1x1576 float16). The graph: the frames cast to float16 and concatenated (24 channels), two strided
4x4 convolutions to a 64x8x16 feature map, flattened and joined with the other inputs, then four
matrix products (ReLU between them) holding nearly all the weights. Weights are seeded random
numbers scaled by 1/sqrt(fan-in), so the output stays finite.

Run with the exporter venv:
    target/modelrt-venv/bin/python xtask/exporter/tools/make_big_model.py --out target/usb-big/big.onnx

`cargo xtask bench usb-big` runs it, compiles the result for amd-gfx1100 and loads it on usb-emu.
"""

import argparse
import pathlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
FRAME = (1, 12, 128, 256)
HIDDEN = 12288
OUT = 1576


def _weight(rng, name, shape):
  fan_in = int(np.prod(shape[1:])) if len(shape) == 4 else int(shape[0])
  # float32 draws a row block at a time keep the generator's peak memory near one float16 copy
  out = np.empty(shape, dtype=np.float16)
  scale = np.float32(1.0 / np.sqrt(fan_in))
  rows = max(1, (64 << 20) // (4 * int(np.prod(shape[1:]))))
  for r in range(0, shape[0], rows):
    out[r : r + rows] = rng.standard_normal((min(rows, shape[0] - r), *shape[1:]), dtype=np.float32) * scale
  return numpy_helper.from_array(out, name)


def make(out: pathlib.Path, hidden: int) -> int:
  rng = np.random.default_rng(36)
  h16 = TensorProto.FLOAT16
  inputs = [
    helper.make_tensor_value_info("img", TensorProto.UINT8, FRAME),
    helper.make_tensor_value_info("big_img", TensorProto.UINT8, FRAME),
    helper.make_tensor_value_info("desire_pulse", h16, (1, 25, 8)),
    helper.make_tensor_value_info("traffic_convention", h16, (1, 2)),
    helper.make_tensor_value_info("features_buffer", h16, (1, 25, 512)),
  ]
  nodes, inits = [], []
  nodes += [
    helper.make_node("Cast", ["img"], ["img16"], to=h16),
    helper.make_node("Cast", ["big_img"], ["big16"], to=h16),
    helper.make_node("Concat", ["img16", "big16"], ["frames"], axis=1),
  ]
  x = "frames"
  for i, (cin, cout) in enumerate([(24, 32), (32, 64)]):
    w = _weight(rng, f"conv{i}.weight", (cout, cin, 4, 4))
    inits.append(w)
    nodes.append(helper.make_node("Conv", [x, w.name], [f"conv{i}"], kernel_shape=[4, 4], strides=[4, 4]))
    nodes.append(helper.make_node("Relu", [f"conv{i}"], [f"conv{i}_relu"]))
    x = f"conv{i}_relu"
  flat = 64 * 8 * 16
  nodes.append(helper.make_node("Flatten", [x], ["vision_flat"], axis=1))
  nodes.append(helper.make_node("Flatten", ["features_buffer"], ["fb_flat"], axis=1))
  nodes.append(helper.make_node("Flatten", ["desire_pulse"], ["desire_flat"], axis=1))
  nodes.append(helper.make_node("Concat", ["vision_flat", "fb_flat", "desire_flat", "traffic_convention"], ["joined"], axis=1))
  dims = [flat + 25 * 512 + 25 * 8 + 2, hidden, hidden, hidden, OUT]
  x = "joined"
  for i in range(len(dims) - 1):
    w = _weight(rng, f"fc{i}.weight", (dims[i], dims[i + 1]))
    inits.append(w)
    y = f"fc{i}"
    nodes.append(helper.make_node("MatMul", [x, w.name], [y]))
    if i < len(dims) - 2:
      nodes.append(helper.make_node("Relu", [y], [f"{y}_relu"]))
      y = f"{y}_relu"
    x = y
  nodes.append(helper.make_node("Identity", [x], ["outputs"]))
  graph = helper.make_graph(nodes, "big_driving_like", inputs, [helper.make_tensor_value_info("outputs", h16, (1, OUT))], inits)
  model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
  model.producer_name, model.producer_version = "modelrt-make_big_model", "1"
  onnx.checker.check_model(model)
  out.parent.mkdir(parents=True, exist_ok=True)
  out.write_bytes(model.SerializeToString())
  weights = sum(int(np.prod(t.dims)) * 2 for t in inits)
  print(f"wrote {out} ({out.stat().st_size} bytes, {weights} bytes of float16 weights)")
  return weights


def main():
  ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  ap.add_argument("--out", type=pathlib.Path, required=True)
  ap.add_argument("--hidden", type=int, default=HIDDEN, help="width of the matrix products (default 12288: 1.16 GB of weights)")
  a = ap.parse_args()
  make(a.out, a.hidden)


if __name__ == "__main__":
  main()
