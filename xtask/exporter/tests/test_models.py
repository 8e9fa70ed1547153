"""The committed models of xtask/models/ (README.md there): the generated ones are exactly what make_models.py writes
(fixed seeds), `policy_op`'s inputs and output are those openpilot 0.11.1's real driving_policy metadata names
(qcom/testdata/openpilot-0.11/0.11.1_driving_policy_metadata.pkl.gz, read by the restricted reader), and the real 0.8.5
driver-monitoring model is the file of its recorded provenance (sha256) with the interface written there."""

import hashlib
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
EXPORTER = os.path.dirname(HERE)
REPO = os.path.dirname(os.path.dirname(EXPORTER))
MODELS = os.path.join(REPO, "xtask", "models")
sys.path.insert(0, EXPORTER)

from mrt import op_metadata  # noqa: E402


def _io(path):
  import onnx

  m = onnx.load(path)
  dims = lambda v: tuple(d.dim_value for d in v.type.tensor_type.shape.dim)  # noqa: E731
  return {v.name: dims(v) for v in m.graph.input}, {v.name: dims(v) for v in m.graph.output}, m


class CommittedModels(unittest.TestCase):
  def test_generated_models_are_what_make_models_writes(self):
    with tempfile.TemporaryDirectory() as d:
      subprocess.run([sys.executable, os.path.join(MODELS, "make_models.py"), "--out", d], check=True, capture_output=True)
      made = sorted(os.listdir(d))
      self.assertEqual(made, ["dmonitor.onnx", "policy.onnx", "policy_op.onnx", "vision.onnx"])
      for f in made:
        with open(os.path.join(d, f), "rb") as a, open(os.path.join(MODELS, f), "rb") as b:
          self.assertEqual(a.read(), b.read(), f"xtask/models/{f} is not what make_models.py writes: re-run it")

  def test_policy_op_has_driving_policys_interface(self):
    meta = op_metadata.read(os.path.join(REPO, "qcom", "testdata", "openpilot-0.11", "0.11.1_driving_policy_metadata.pkl.gz"))
    ins, outs, m = _io(os.path.join(MODELS, "policy_op.onnx"))
    self.assertEqual(ins, {k: tuple(v) for k, v in meta["inputs"].items()})
    self.assertEqual(outs, {k: tuple(v) for k, v in meta["outputs"].items()})
    # the per-step layers are matrix-matrix products over the 25-step history
    steps = [n for n in m.graph.node if n.op_type == "MatMul" and n.input[0] in ("features_buffer", "desire_pulse", "s1")]
    self.assertEqual(len(steps), 3)

  def test_dmonitor_085_is_the_recorded_file(self):
    path = os.path.join(MODELS, "dmonitoring_model_0.8.5.onnx")
    with open(path, "rb") as f:
      data = f.read()
    self.assertEqual(len(data), 3_790_368)
    self.assertEqual(hashlib.sha256(data).hexdigest(), "6c9c3929d230dbf74cf1c601f217405774204ccbb37219942aa62ab50b3ad1a8")
    ins, outs, m = _io(path)
    self.assertEqual((ins, outs), ({"input_img": (1, 6, 320, 160)}, {"outputs": (1, 38)}))
    ops = {}
    for n in m.graph.node:
      ops[n.op_type] = ops.get(n.op_type, 0) + 1
    self.assertEqual(ops, {"Conv": 35, "Relu": 34, "Gemm": 23, "Sigmoid": 10, "Add": 6, "Flatten": 1, "Concat": 1})


if __name__ == "__main__":
  unittest.main()
