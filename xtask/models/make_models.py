#!/usr/bin/env python3
"""Generate modelrt's small ONNX test models (deterministic: fixed seeds, no timestamps).

Run with the exporter venv python (needs `onnx` and `numpy`):
    target/modelrt-venv/bin/python xtask/models/make_models.py [--out xtask/models]

Models:
  vision.onnx   openpilot-vision-like conv net: input `img` 1x12x128x256 float32 -> `features` 1x32
  policy.onnx   MLP + softmax, inputs `features` 1x512, `desire` 1x8, `traffic` 1x2 -> `plan_prob` 1x16
  dmonitor.onnx driver-monitoring-like conv net: input `input_img` 1x1x160x320 -> `dm_out` 1x8 (sigmoid)
  policy_op.onnx a policy net shaped like openpilot 0.11's driving_policy (its inputs and output as its metadata names them,
                qcom/testdata/openpilot-0.11/0.11.1_driving_policy_metadata.pkl.gz): `features_buffer`
                1x25x512, `desire_pulse` 1x25x8, `traffic_convention` 1x2 -> `outputs` 1x1000; per-step layers over
                the 25-step history are matrix-matrix products (25 rows), then a matrix-vector head (1.9 MB of weights)
"""
import argparse
import pathlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17


def _init(rng, name, shape, scale=None):
  fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else int(shape[0])
  s = scale if scale is not None else (1.0 / np.sqrt(max(fan_in, 1)))
  return numpy_helper.from_array((rng.standard_normal(shape) * s).astype(np.float32), name)


def _conv(rng, nodes, inits, x, name, cin, cout, k, stride, pad, relu=True):
  w, b = _init(rng, f"{name}.weight", (cout, cin, k, k)), _init(rng, f"{name}.bias", (cout,), 0.1)
  inits += [w, b]
  out = f"{name}_out"
  nodes.append(helper.make_node("Conv", [x, w.name, b.name], [out], name=name, kernel_shape=[k, k], strides=[stride, stride],
                                pads=[pad] * 4))
  if relu:
    nodes.append(helper.make_node("Relu", [out], [f"{name}_relu"], name=f"{name}_relu"))
    out = f"{name}_relu"
  return out


def _save(model, path):
  model.producer_name, model.producer_version = "modelrt-make_models", "1"
  onnx.checker.check_model(model)
  # SerializeToString is deterministic for a fixed proto (no maps with random order are used here)
  path.write_bytes(model.SerializeToString())
  print(f"wrote {path} ({path.stat().st_size} bytes)")


def make_vision(out: pathlib.Path):
  rng = np.random.default_rng(1)
  nodes, inits = [], []
  x = _conv(rng, nodes, inits, "img", "conv1", 12, 16, 3, 2, 1)   # 64x128
  x = _conv(rng, nodes, inits, x, "conv2", 16, 24, 3, 2, 1)       # 32x64
  x = _conv(rng, nodes, inits, x, "conv3", 24, 32, 3, 2, 1)       # 16x32
  x = _conv(rng, nodes, inits, x, "conv4", 32, 48, 3, 2, 1)       # 8x16
  x = _conv(rng, nodes, inits, x, "conv5", 48, 64, 1, 1, 0)       # pointwise
  nodes.append(helper.make_node("GlobalAveragePool", [x], ["gap"], name="gap"))
  nodes.append(helper.make_node("Flatten", ["gap"], ["flat"], name="flatten", axis=1))
  w, b = _init(rng, "head.weight", (32, 64)), _init(rng, "head.bias", (32,), 0.1)
  inits += [w, b]
  nodes.append(helper.make_node("Gemm", ["flat", w.name, b.name], ["features"], name="head", transB=1))
  graph = helper.make_graph(nodes, "vision", [helper.make_tensor_value_info("img", TensorProto.FLOAT, [1, 12, 128, 256])],
                            [helper.make_tensor_value_info("features", TensorProto.FLOAT, [1, 32])], inits)
  _save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)]), out / "vision.onnx")


def make_policy(out: pathlib.Path):
  rng = np.random.default_rng(2)
  inits = [_init(rng, "fc1.weight", (512, 128)), _init(rng, "fc1.bias", (128,), 0.1),
           _init(rng, "desire.weight", (8, 128)), _init(rng, "traffic.weight", (2, 128)),
           _init(rng, "fc2.weight", (128, 64)), _init(rng, "fc2.bias", (64,), 0.1),
           _init(rng, "fc3.weight", (64, 16)), _init(rng, "fc3.bias", (16,), 0.1),
           numpy_helper.from_array(np.array([1, 16], dtype=np.int64), "out_shape")]
  nodes = [
    helper.make_node("MatMul", ["features", "fc1.weight"], ["h1a"], name="fc1"),
    helper.make_node("Add", ["h1a", "fc1.bias"], ["h1b"], name="fc1_bias"),
    helper.make_node("MatMul", ["desire", "desire.weight"], ["hd"], name="desire_fc"),
    helper.make_node("MatMul", ["traffic", "traffic.weight"], ["ht"], name="traffic_fc"),
    helper.make_node("Add", ["h1b", "hd"], ["h1c"], name="add_desire"),
    helper.make_node("Add", ["h1c", "ht"], ["h1d"], name="add_traffic"),
    helper.make_node("Relu", ["h1d"], ["h1"], name="relu1"),
    helper.make_node("MatMul", ["h1", "fc2.weight"], ["h2a"], name="fc2"),
    helper.make_node("Add", ["h2a", "fc2.bias"], ["h2b"], name="fc2_bias"),
    helper.make_node("Tanh", ["h2b"], ["h2"], name="tanh2"),
    helper.make_node("MatMul", ["h2", "fc3.weight"], ["h3a"], name="fc3"),
    helper.make_node("Add", ["h3a", "fc3.bias"], ["h3b"], name="fc3_bias"),
    helper.make_node("Reshape", ["h3b", "out_shape"], ["logits"], name="reshape"),
    helper.make_node("Softmax", ["logits"], ["plan_prob"], name="softmax", axis=-1),
  ]
  graph = helper.make_graph(nodes, "policy", [helper.make_tensor_value_info("features", TensorProto.FLOAT, [1, 512]),
                                              helper.make_tensor_value_info("desire", TensorProto.FLOAT, [1, 8]),
                                              helper.make_tensor_value_info("traffic", TensorProto.FLOAT, [1, 2])],
                            [helper.make_tensor_value_info("plan_prob", TensorProto.FLOAT, [1, 16])], inits)
  _save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)]), out / "policy.onnx")


def make_dmonitor(out: pathlib.Path):
  rng = np.random.default_rng(3)
  nodes, inits = [], []
  x = _conv(rng, nodes, inits, "input_img", "dconv1", 1, 8, 5, 4, 2)   # 40x80
  x = _conv(rng, nodes, inits, x, "dconv2", 8, 16, 3, 2, 1)            # 20x40
  x = _conv(rng, nodes, inits, x, "dconv3", 16, 32, 3, 2, 1)           # 10x20
  nodes.append(helper.make_node("MaxPool", [x], ["pool"], name="pool", kernel_shape=[2, 2], strides=[2, 2]))  # 5x10
  nodes.append(helper.make_node("Flatten", ["pool"], ["flat"], name="flatten", axis=1))
  w, b = _init(rng, "dm_head.weight", (32 * 5 * 10, 8)), _init(rng, "dm_head.bias", (8,), 0.1)
  inits += [w, b]
  nodes.append(helper.make_node("MatMul", ["flat", w.name], ["dm_a"], name="dm_fc"))
  nodes.append(helper.make_node("Add", ["dm_a", b.name], ["dm_b"], name="dm_bias"))
  nodes.append(helper.make_node("Sigmoid", ["dm_b"], ["dm_out"], name="dm_sigmoid"))
  graph = helper.make_graph(nodes, "dmonitor", [helper.make_tensor_value_info("input_img", TensorProto.FLOAT, [1, 1, 160, 320])],
                            [helper.make_tensor_value_info("dm_out", TensorProto.FLOAT, [1, 8])], inits)
  _save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)]), out / "dmonitor.onnx")


def make_policy_op(out: pathlib.Path):
  rng = np.random.default_rng(4)
  inits = [_init(rng, "step1.weight", (512, 256)), _init(rng, "step1.bias", (256,), 0.1),
           _init(rng, "desire.weight", (8, 256)),
           _init(rng, "step2.weight", (256, 64)), _init(rng, "step2.bias", (64,), 0.1),
           _init(rng, "temporal.weight", (25 * 64, 128)), _init(rng, "temporal.bias", (128,), 0.1),
           _init(rng, "traffic.weight", (2, 128)),
           _init(rng, "head.weight", (128, 1000)), _init(rng, "head.bias", (1000,), 0.1),
           numpy_helper.from_array(np.array([1, 25 * 64], dtype=np.int64), "flat_shape")]
  nodes = [
    # per history step (M = 25 rows): features and desire into 256, then 64
    helper.make_node("MatMul", ["features_buffer", "step1.weight"], ["s1a"], name="step1"),
    helper.make_node("MatMul", ["desire_pulse", "desire.weight"], ["s1d"], name="desire_fc"),
    helper.make_node("Add", ["s1a", "s1d"], ["s1b"], name="add_desire"),
    helper.make_node("Add", ["s1b", "step1.bias"], ["s1c"], name="step1_bias"),
    helper.make_node("Relu", ["s1c"], ["s1"], name="step1_relu"),
    helper.make_node("MatMul", ["s1", "step2.weight"], ["s2a"], name="step2"),
    helper.make_node("Add", ["s2a", "step2.bias"], ["s2b"], name="step2_bias"),
    helper.make_node("Relu", ["s2b"], ["s2"], name="step2_relu"),
    # the whole history into 128 features, with the traffic convention (matrix-vector)
    helper.make_node("Reshape", ["s2", "flat_shape"], ["flat"], name="flatten"),
    helper.make_node("MatMul", ["flat", "temporal.weight"], ["t1a"], name="temporal"),
    helper.make_node("MatMul", ["traffic_convention", "traffic.weight"], ["t1t"], name="traffic_fc"),
    helper.make_node("Add", ["t1a", "t1t"], ["t1b"], name="add_traffic"),
    helper.make_node("Add", ["t1b", "temporal.bias"], ["t1c"], name="temporal_bias"),
    helper.make_node("Relu", ["t1c"], ["t1"], name="temporal_relu"),
    helper.make_node("MatMul", ["t1", "head.weight"], ["h1"], name="head"),
    helper.make_node("Add", ["h1", "head.bias"], ["outputs"], name="head_bias"),
  ]
  graph = helper.make_graph(nodes, "policy_op",
                            [helper.make_tensor_value_info("features_buffer", TensorProto.FLOAT, [1, 25, 512]),
                             helper.make_tensor_value_info("desire_pulse", TensorProto.FLOAT, [1, 25, 8]),
                             helper.make_tensor_value_info("traffic_convention", TensorProto.FLOAT, [1, 2])],
                            [helper.make_tensor_value_info("outputs", TensorProto.FLOAT, [1, 1000])], inits)
  _save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)]), out / "policy_op.onnx")


def main():
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  ap.add_argument("--out", default=str(pathlib.Path(__file__).resolve().parent))
  out = pathlib.Path(ap.parse_args().out)
  out.mkdir(parents=True, exist_ok=True)
  make_vision(out)
  make_policy(out)
  make_dmonitor(out)
  make_policy_op(out)


if __name__ == "__main__":
  main()
