"""Unit tests of the Gemm/MatMul kernel rule (mrt/gemm_rule.py, docs/cpu-kernels.md §3 "Gemm and MatMul"): the
options it picks for given shapes and baselines, the prepacking of a Gemm's transB weight, and a net of Gemms and
MatMuls compiled with the rule installed computing what onnxruntime computes on the original model.

  python -m unittest discover -s xtask/exporter/tests -t xtask/exporter
"""

import os
import sys
import tempfile
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from mrt import gemm_rule


class Shapes(unittest.TestCase):
  def tearDown(self):
    gemm_rule.GEMMS.clear()

  def test_feature_upcast(self):
    # (N, floats per vector, accumulator budget) -> features per step
    cases = {
      (128, 8, 12): 64,  # 16 ymm do not fit 12: 8 ymm, two trips
      (128, 16, 24): 128,  # 8 zmm at once
      (128, 4, 24): 64,  # NEON: 16 of 24 q registers would not divide 128 by more
      (64, 8, 12): 64,
      (16, 8, 12): 16,
      (8, 8, 12): 8,
      (2, 8, 12): 2,  # fewer than a vector: all
      (1000, 8, 12): 40,  # 125 vectors: the most dividing within 12 is 5
      (36, 8, 12): 36,  # no whole vector divides: the largest divisor within 96 floats
    }
    for (n, vec, budget), want in cases.items():
      self.assertEqual(gemm_rule.feature_upcast(n, vec, budget), want, (n, vec, budget))

  def test_policy_first_layer_fused_kernel(self):
    # 512 + 8 + 2 inputs into 128 features: one output axis, three reduction axes
    gemm_rule.GEMMS.update({(128, 512), (128, 8), (128, 2)})
    shape, outs, red = [128, 512, 8, 2], [0], [1, 2, 3]
    self.assertEqual(gemm_rule.plan(shape, outs, red, 8, 12), [("UPCAST", 0, 16), ("UPCAST", 0, 4), ("UNROLL", 0, 4)])
    self.assertEqual(gemm_rule.plan(shape, outs, red, 16, 24), [("UPCAST", 0, 16), ("UPCAST", 0, 8), ("UNROLL", 0, 4)])

  def test_reduction_split_over_axes(self):
    # dmonitor: Flatten of 32 channels x 50 positions into 8 features; 50 is the longest axis and 4 does not divide it
    gemm_rule.GEMMS.add((8, 1600))
    self.assertEqual(gemm_rule.plan([8, 32, 50], [0], [1, 2], 8, 12), [("UPCAST", 0, 8)])
    self.assertEqual(gemm_rule.plan([8, 25, 64], [0], [1, 2], 4, 24), [("UPCAST", 0, 8), ("UNROLL", 1, 4)])

  def test_other_kernels_are_not_taken(self):
    gemm_rule.GEMMS.add((128, 512))
    self.assertIsNone(gemm_rule.plan([128, 256], [0], [1], 8, 12))  # K unknown
    self.assertIsNone(gemm_rule.plan([64, 512], [0], [1], 8, 12))  # N unknown
    self.assertIsNone(gemm_rule.plan([2, 4, 128, 512], [0, 1, 2], [3], 8, 12))  # three output axes
    self.assertIsNone(gemm_rule.plan([128, 4, 512], [0, 1], [2], 8, 12))  # the features are not innermost
    self.assertIsNone(gemm_rule.plan([128], [0], [], 8, 12))  # no reduction

  def test_row_blocks(self):
    # (M rows, N features, floats per vector, budget) -> (rows, features) per step, worked out from the rule's
    # statement (step 1b): rows dividing M up to 8, at most 4 vectors and rows x vectors <= budget
    cases = {
      (25, 256, 8, 12): (5, 16),  # 5 rows (the only divisor of 25 up to 8) x 2 ymm = 10 accumulators, not 8 ymm alone
      (25, 256, 16, 24): (5, 64),  # 5 rows x 4 zmm = 20
      (25, 256, 4, 24): (5, 16),  # NEON: 5 rows x 4 q
      (25, 64, 8, 12): (5, 16),
      (4, 128, 8, 12): (2, 32),  # 2 x 4 and 4 x 2 both give 8 accumulators and 6 loads: the first found, fewer rows
      (13, 64, 8, 12): (1, 64),  # no row count divides 13: the features alone (8 ymm)
      (1, 128, 8, 12): (1, 64),  # matrix-vector: step 1
      (25, 2, 8, 12): (5, 2),  # fewer features than a vector: all of them, 5 rows
    }
    for args, want in cases.items():
      self.assertEqual(gemm_rule.block(*args), want, args)

  def test_matrix_matrix_kernel(self):
    # driving_policy's history: 25 steps of 512 features + 8 desire values into 256, fused by tinygrad
    gemm_rule.GEMMS.update({(256, 512), (256, 8)})
    shape, outs, red = [25, 256, 512, 8], [0, 1], [2, 3]
    # features first (they come after the rows), then 5 rows, then the 512-long reduction unrolled by 4
    self.assertEqual(gemm_rule.plan(shape, outs, red, 8, 12), [("UPCAST", 1, 16), ("UPCAST", 0, 5), ("UNROLL", 0, 4)])
    self.assertEqual(gemm_rule.plan(shape, outs, red, 16, 24), [("UPCAST", 1, 16), ("UPCAST", 1, 4), ("UPCAST", 0, 5), ("UNROLL", 0, 4)])


def _net(path: str, rows: int = 1):
  """features[rows,64] -> Gemm(transB 1, 64->32) -> Relu -> MatMul(32->24) + MatMul(extra[rows,8] -> 24) -> Add bias."""
  import onnx
  from onnx import TensorProto as T
  from onnx import helper as h
  from onnx import numpy_helper as nh

  rng = np.random.default_rng(11)

  def init(name, *shape):
    return nh.from_array((rng.standard_normal(shape) * 0.3).astype(np.float32), name)

  nodes = [
    h.make_node("Gemm", ["x", "w1", "b1"], ["g"], transB=1),
    h.make_node("Relu", ["g"], ["r"]),
    h.make_node("MatMul", ["r", "w2"], ["m2"]),
    h.make_node("MatMul", ["e", "w3"], ["m3"]),
    h.make_node("Add", ["m2", "m3"], ["s"]),
    h.make_node("Add", ["s", "b2"], ["y"]),
  ]
  g = h.make_graph(
    nodes,
    "gemm",
    [h.make_tensor_value_info("x", T.FLOAT, [rows, 64]), h.make_tensor_value_info("e", T.FLOAT, [rows, 8])],
    [h.make_tensor_value_info("y", T.FLOAT, [rows, 24])],
    [init("w1", 32, 64), init("b1", 32), init("w2", 32, 24), init("w3", 8, 24), init("b2", 24)],
  )
  onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 13)]), path)


class Prepack(unittest.TestCase):
  def tearDown(self):
    gemm_rule.GEMMS.clear()

  def test_transb_weight_is_prepacked_k_by_n(self):
    import onnx
    from onnx import helper, numpy_helper

    with tempfile.TemporaryDirectory() as d:
      src = os.path.join(d, "net.onnx")
      _net(src)
      m = onnx.load(src)
      w1 = numpy_helper.to_array(next(i for i in m.graph.initializer if i.name == "w1"))
      self.assertEqual(gemm_rule.scan(m), 1)
      gemm = m.graph.node[0]
      self.assertEqual({a.name: helper.get_attribute_value(a) for a in gemm.attribute}["transB"], 0)
      packed = numpy_helper.to_array(next(i for i in m.graph.initializer if i.name == gemm.input[1]))
      np.testing.assert_array_equal(packed, w1.T)
      self.assertEqual(gemm_rule.GEMMS, {(32, 64), (24, 32), (24, 8)})


class RuleInstalled(unittest.TestCase):
  def test_rule_kernels_compute_what_onnxruntime_does(self):
    taken = self._compile_and_compare(1)
    self.assertGreaterEqual(len(taken), 2, "the Gemm kernel and the fused MatMul kernel take the rule")

  def test_matrix_matrix_kernels_compute_what_onnxruntime_does(self):
    # 25 rows: both products are matrix-matrix and take 5-row blocks
    taken = self._compile_and_compare(25)
    rows = [o for opts in taken for o in opts if o.op.name == "UPCAST" and o.arg == 5]
    self.assertGreaterEqual(len(rows), 2, f"both kernels take a 5-row block: {taken}")

  def _compile_and_compare(self, n_rows: int) -> list:
    import onnxruntime as ort
    import tinygrad.codegen as codegen
    from tinygrad import Tensor
    from tinygrad.helpers import Context
    from tinygrad.nn.onnx import OnnxRunner

    from mrt import conv_rule
    from mrt.layout import rewrite
    from tests.rule_spy import recording

    saved = codegen.apply_opts
    try:
      conv_rule.install("x86_64", "x86-64-v3")
      with recording(gemm_rule, "rule_opts") as taken, tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "net.onnx")
        _net(src, n_rows)
        said = []
        dst = rewrite(src, os.path.join(d, "layout"), said.append)
        self.assertNotEqual(dst, src)  # the Gemm weight was prepacked into a new graph
        self.assertIn("1 Gemm weight(s) prepacked", said[-1])
        rng = np.random.default_rng(3)
        feeds = {
          "x": rng.standard_normal((n_rows, 64)).astype(np.float32),
          "e": rng.standard_normal((n_rows, 8)).astype(np.float32),
        }
        (want,) = ort.InferenceSession(src, providers=["CPUExecutionProvider"]).run(["y"], feeds)
        with Context(CACHELEVEL=0, PARALLEL=0):  # compile in this process (its hooks), not from a cache or a worker
          got = OnnxRunner(dst)({k: Tensor(v) for k, v in feeds.items()})["y"].numpy()
        np.testing.assert_allclose(got, want, atol=1e-5, rtol=1e-5)
    finally:
      codegen.apply_opts = saved
      gemm_rule.GEMMS.clear()
    return taken


if __name__ == "__main__":
  unittest.main()
