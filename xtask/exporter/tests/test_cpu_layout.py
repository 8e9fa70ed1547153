"""Unit tests of the CPU convolution path (docs/cpu-kernels.md): the kernel-option rule's table, baseline resolution,
and the channel-last layout pass, whose rewritten graph must compute what the original does (both run by tinygrad on
this CPU, the original also by onnxruntime) while keeping the graph's inputs and outputs.

  python -m unittest discover -s xtask/exporter/tests -t xtask/exporter
"""

import os
import sys
import tempfile
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from mrt import conv_rule
from mrt.cpu_compile import cflags, resolve_baseline
from mrt.targets import ExportError


class RuleTable(unittest.TestCase):
  def test_channel_upcast_is_two_to_four_vectors(self):
    # (channels, floats per vector) -> the amount docs/cpu-kernels.md §3 step 1 gives
    for co, vec, want in [(16, 8, 16), (24, 8, 24), (32, 8, 32), (48, 8, 24), (64, 8, 32), (64, 16, 64), (48, 16, 48), (24, 16, 24), (8, 16, 8)]:
      self.assertEqual(conv_rule.channel_upcast(co, vec), want, (co, vec))

  def test_x_upcast_respects_the_register_budget(self):
    self.assertEqual(conv_rule.x_upcast(128, 2, 12), 4)  # 2 ymm vectors x 8 columns would need 16 accumulators
    self.assertEqual(conv_rule.x_upcast(128, 1, 24), 8)
    self.assertEqual(conv_rule.x_upcast(14, 4, 12), 2)
    self.assertEqual(conv_rule.x_upcast(7, 4, 12), 1)
    self.assertEqual(conv_rule.x_upcast(55, 2, 12), 5)

  def test_channels_widen_when_x_cannot_be_upcast(self):
    # squeezenet's last conv: 1000 channels on a 13x13 map: 1 vector x 1 column would be one FMA chain
    self.assertEqual(conv_rule.widen_channels(1000, 8, 1, 8, 12), 40)
    self.assertEqual(conv_rule.widen_channels(64, 32, 4, 8, 12), 32)  # enough accumulators already

  def test_steps_stay_within_tinygrads_limit(self):
    self.assertEqual(conv_rule._steps(24), [12, 2])
    self.assertEqual(conv_rule._steps(64), [16, 4])
    self.assertEqual(conv_rule._steps(16), [16])
    self.assertIsNone(conv_rule._steps(17 * 2))

  def test_large_weights_are_blocked_by_output_channels(self):
    # docs/cpu-kernels.md section 3: weights over 1 MiB are computed channel-block-major; the block b is 1-4 vectors
    # (half a vector when no whole one divides the channels), chosen for the most accumulated floats b * positions
    # within the blocked budget (14 ymm for v3, 30 zmm for v4)
    saved = dict(conv_rule._CFG)
    try:
      for vec, blocked, co, red, ow, want in [
        ((8, 12), 14, 1000, 512, 13, 8),  # squeezenet's classifier: 1 ymm x 13 positions
        ((8, 12), 14, 512, 2048, 7, 16),  # resnet50 7x7 stage: 2 ymm x 7 positions
        ((16, 24), 30, 512, 2048, 7, 64),  # v4: 4 zmm x 7 positions (a 512 KiB weight block)
        ((16, 24), 30, 1000, 512, 13, 8),  # no multiple of 16 divides 1000: half a zmm
        ((16, 24), 30, 512, 4608, 7, 16),  # 3x3 512->512: a 4-zmm block would be 1.2 MiB, over BLOCK_MAX_BYTES
        ((8, 12), 14, 256, 1024, 14, None),  # exactly 1 MiB of weights: channel-last as before
        ((8, 12), 14, 128, 1152, 28, None),  # 590 KiB
      ]:
        conv_rule._CFG.update(vec=vec, blocked=blocked)
        self.assertEqual(conv_rule.block_plan(co, red, ow), want, (vec, co, red, ow))
    finally:
      conv_rule._CFG.clear()
      conv_rule._CFG.update(saved)

  def test_positions_upcast_takes_any_divisor_within_budget(self):
    self.assertEqual(conv_rule.positions_upcast(13, 1, 14), 13)
    self.assertEqual(conv_rule.positions_upcast(13, 2, 14), 1)
    self.assertEqual(conv_rule.positions_upcast(7, 2, 14), 7)
    self.assertEqual(conv_rule.positions_upcast(14, 2, 14), 7)
    self.assertEqual(conv_rule.positions_upcast(28, 1, 30), 14)

  def test_vector_widths(self):
    self.assertEqual(conv_rule.vector_floats("x86_64", "x86-64-v3"), (8, 12))
    self.assertEqual(conv_rule.vector_floats("x86_64", "x86-64-v4"), (16, 24))
    self.assertEqual(conv_rule.vector_floats("arm64", "cortex-a76"), (4, 24))


class Baselines(unittest.TestCase):
  def test_defaults_and_refusals(self):
    self.assertEqual(resolve_baseline("cpu-x86_64", None), "x86-64-v3")
    self.assertEqual(resolve_baseline("cpu-aarch64", None), "cortex-a76")
    self.assertEqual(resolve_baseline("cpu-aarch64", "armv8.2-a"), "armv8.2-a")
    with self.assertRaises(ExportError):
      resolve_baseline("cpu-x86_64", "cortex-a76")
    with self.assertRaises(ExportError):
      resolve_baseline("cpu-aarch64", "x86-64-v4")

  def test_a_baseline_this_cpu_cannot_run_is_refused_before_the_capture(self):
    from unittest import mock

    from mrt import cpu_compile

    v3 = set(cpu_compile._V3_FLAGS)
    with mock.patch.object(cpu_compile.platform, "machine", return_value="x86_64"):
      with mock.patch.object(cpu_compile, "_cpuinfo_flags", return_value=v3):
        with self.assertRaises(ExportError) as e:
          resolve_baseline("cpu-x86_64", "x86-64-v4")
        self.assertIn("lacks avx512f", str(e.exception))
        self.assertEqual(resolve_baseline("cpu-x86_64", "x86-64-v3"), "x86-64-v3")
      with mock.patch.object(cpu_compile, "_cpuinfo_flags", return_value=v3 | set(cpu_compile._V4_FLAGS)):
        self.assertEqual(resolve_baseline("cpu-x86_64", "x86-64-v4"), "x86-64-v4")
      with mock.patch.object(cpu_compile, "_cpuinfo_flags", return_value={"sse2"}), self.assertRaises(ExportError):
        resolve_baseline("cpu-x86_64", "x86-64-v3")

  def test_host_names_a_supported_baseline(self):
    said = []
    got = resolve_baseline("cpu-x86_64", "host", said.append) if os.uname().machine == "x86_64" else "x86-64-v3"
    self.assertIn(got, ("x86-64-v3", "x86-64-v4"))
    if said:
      self.assertIn(got, said[0])

  def test_v4_asks_for_512_bit_vectors(self):
    self.assertEqual(cflags("x86_64", "x86-64-v4"), ["-march=x86-64-v4", "-mprefer-vector-width=512"])
    self.assertEqual(cflags("x86_64", "x86-64-v3"), ["-march=x86-64-v3"])
    self.assertEqual(cflags("arm64", "armv8.2-a"), ["-ffixed-x18", "-march=armv8.2-a"])


def _net(path: str):
  """Conv -> BatchNorm -> Relu -> MaxPool -> Conv(1x1) -> Add(const) -> Concat(with a 3x3 conv) -> GlobalAveragePool
  -> Flatten, with a second output taken in the middle (an NCHW consumer of a channel-last value)."""
  import onnx
  from onnx import TensorProto as T
  from onnx import helper as h
  from onnx import numpy_helper as nh

  rng = np.random.default_rng(7)

  def init(name, *shape, scale=0.3):
    return nh.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)

  inits = [
    init("w1", 8, 3, 3, 3),
    init("b1", 8),
    nh.from_array((rng.random(8) + 0.5).astype(np.float32), "s"),
    init("bb", 8),
    init("m", 8),
    nh.from_array((rng.random(8) + 0.5).astype(np.float32), "v"),
    init("w2", 16, 8, 1, 1),
    init("c", 1, 16, 1, 1),
    init("w3", 8, 8, 3, 3),
  ]
  nodes = [
    h.make_node("Conv", ["x", "w1", "b1"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    h.make_node("BatchNormalization", ["c1", "s", "bb", "m", "v"], ["n1"]),
    h.make_node("Relu", ["n1"], ["r1"]),
    h.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
    h.make_node("Conv", ["p1", "w2"], ["c2"], kernel_shape=[1, 1]),
    h.make_node("Add", ["c2", "c"], ["a2"]),
    h.make_node("Conv", ["p1", "w3"], ["c3"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    h.make_node("Concat", ["a2", "c3"], ["cat"], axis=1),
    h.make_node("GlobalAveragePool", ["cat"], ["g"]),
    h.make_node("Flatten", ["g"], ["y"]),
  ]
  g = h.make_graph(
    nodes,
    "layout",
    [h.make_tensor_value_info("x", T.FLOAT, [1, 3, 12, 16])],
    [h.make_tensor_value_info("y", T.FLOAT, [1, 24]), h.make_tensor_value_info("p1", T.FLOAT, [1, 8, 6, 8])],
    inits,
  )
  onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 13)]), path)


class LayoutPass(unittest.TestCase):
  def test_rewritten_graph_computes_the_same_outputs(self):
    import onnx
    import onnxruntime as ort
    from tinygrad import Tensor
    from tinygrad.nn.onnx import OnnxRunner

    from mrt.layout import rewrite

    with tempfile.TemporaryDirectory() as d:
      src = os.path.join(d, "net.onnx")
      _net(src)
      said = []
      dst = rewrite(src, os.path.join(d, "layout"), said.append)
      self.assertNotEqual(dst, src)
      self.assertIn("3 Conv", said[0])
      self.assertIn("1 MaxPool", said[0])
      m = onnx.load(dst)
      ops = [n.op_type for n in m.graph.node]
      self.assertNotIn("Conv", ops)
      self.assertEqual([i.name for i in m.graph.input], ["x"])
      self.assertEqual([o.name for o in m.graph.output], ["y", "p1"])
      packed = {i.name: i.dims for i in m.graph.initializer}
      self.assertIn([3, 3, 3, 8], [list(v) for v in packed.values()])  # w1 as [ky][kx][ci][co]
      x = np.random.default_rng(1).standard_normal((1, 3, 12, 16)).astype(np.float32)
      want = dict(zip(["y", "p1"], ort.InferenceSession(src, providers=["CPUExecutionProvider"]).run(["y", "p1"], {"x": x})))
      got = OnnxRunner(dst)({"x": Tensor(x)})
      for n in ("y", "p1"):
        g = got[n].numpy()
        self.assertEqual(g.shape, want[n].shape, n)
        np.testing.assert_allclose(g, want[n], atol=1e-4, rtol=1e-4, err_msg=n)

  def test_large_conv_is_channel_block_major_and_computes_the_same(self):
    # a stride-2 3x3 first conv on a 3-channel NCHW input, then a 512->1024 1x1 conv (2 MiB of weights) on its 7x7
    # map and a global pool: the 1x1 conv gets co_block and a [cb][ky][kx][ci][b] weight; outputs vs onnxruntime
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto as T
    from onnx import helper as h
    from onnx import numpy_helper as nh
    from tinygrad import Tensor
    from tinygrad.nn.onnx import OnnxRunner

    from mrt.layout import rewrite

    rng = np.random.default_rng(3)
    w1 = (rng.standard_normal((512, 3, 3, 3)) * 0.3).astype(np.float32)
    w2 = (rng.standard_normal((1024, 512, 1, 1)) / np.sqrt(512)).astype(np.float32)
    b2 = rng.standard_normal(1024).astype(np.float32)
    nodes = [
      h.make_node("Conv", ["x", "w1"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2]),
      h.make_node("Relu", ["c1"], ["r1"]),
      h.make_node("Conv", ["r1", "w2", "b2"], ["c2"], kernel_shape=[1, 1]),
      h.make_node("Relu", ["c2"], ["y"]),
      h.make_node("GlobalAveragePool", ["y"], ["g"]),
    ]
    g = h.make_graph(
      nodes,
      "blocked",
      [h.make_tensor_value_info("x", T.FLOAT, [1, 3, 14, 14])],
      [h.make_tensor_value_info("y", T.FLOAT, [1, 1024, 7, 7]), h.make_tensor_value_info("g", T.FLOAT, [1, 1024, 1, 1])],
      [nh.from_array(w1, "w1"), nh.from_array(w2, "w2"), nh.from_array(b2, "b2")],
    )
    saved = dict(conv_rule._CFG)
    try:
      conv_rule._CFG.update(vec=(8, 12), blocked=14)
      with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "net.onnx")
        onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 13)]), src)
        said = []
        dst = rewrite(src, os.path.join(d, "layout"), said.append)
        self.assertIn("1 with large weights channel-block-major", said[0])
        m = onnx.load(dst)
        convs = [n for n in m.graph.node if n.op_type == "MrtConvNhwc"]
        blocks = [[a.i for a in n.attribute if a.name == "co_block"] for n in convs]
        self.assertEqual(blocks, [[], [16]])  # the first conv's 41 KiB weight stays channel-last
        inits = {i.name: nh.to_array(i) for i in m.graph.initializer}
        packed = inits[convs[1].input[1]]
        self.assertEqual(packed.shape, (64, 1, 1, 512, 16))
        # element [cb][0][0][ci][j] is the ONNX weight of output channel cb*16 + j, input channel ci
        np.testing.assert_array_equal(packed[5, 0, 0, 17, 3], w2[5 * 16 + 3, 17, 0, 0])
        np.testing.assert_array_equal(packed[:, 0, 0, :, :].transpose(0, 2, 1).reshape(1024, 512), w2[:, :, 0, 0])
        x = np.random.default_rng(1).standard_normal((1, 3, 14, 14)).astype(np.float32)
        want = dict(zip(["y", "g"], ort.InferenceSession(src, providers=["CPUExecutionProvider"]).run(["y", "g"], {"x": x})))
        got = OnnxRunner(dst)({"x": Tensor(x)})
        for n in ("y", "g"):
          self.assertEqual(got[n].shape, want[n].shape, n)
          np.testing.assert_allclose(got[n].numpy(), want[n], atol=1e-4, rtol=1e-4, err_msg=n)
    finally:
      conv_rule._CFG.clear()
      conv_rule._CFG.update(saved)

  def test_depthwise_convs_are_channel_last_and_compute_the_same(self):
    # openpilot 0.8.5's driver-monitoring net is a MobileNet-style chain: 1x1 expansion, depthwise 3x3 / 5x5 (stride
    # 1 and 2), 1x1 projection. The depthwise convs (group = channels) become MrtDwConvNhwc with [ky][kx][C] weights;
    # a grouped conv that is not depthwise (group 2 of 4 channels each) keeps NCHW. Compiled with the rule installed
    # (the depthwise kernels take it: UPCAST along the channels), outputs vs onnxruntime.
    import onnx
    import onnxruntime as ort
    import tinygrad.codegen as codegen
    from onnx import TensorProto as T
    from onnx import helper as h
    from onnx import numpy_helper as nh
    from tinygrad import Tensor
    from tinygrad.helpers import Context
    from tinygrad.nn.onnx import OnnxRunner

    from mrt.layout import rewrite

    rng = np.random.default_rng(5)

    def init(name, *shape):
      return nh.from_array((rng.standard_normal(shape) * 0.3).astype(np.float32), name)

    nodes = [
      h.make_node("Conv", ["x", "we"], ["e"], kernel_shape=[1, 1]),
      h.make_node("Relu", ["e"], ["er"]),
      h.make_node("Conv", ["er", "wd3", "bd3"], ["d3"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=16),
      h.make_node("Relu", ["d3"], ["d3r"]),
      h.make_node("Conv", ["d3r", "wd5"], ["d5"], kernel_shape=[5, 5], pads=[2, 2, 2, 2], strides=[2, 2], group=16),
      h.make_node("Conv", ["d5", "wp", "bp"], ["y"], kernel_shape=[1, 1]),
      h.make_node("Conv", ["y", "wg"], ["z"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=2),
    ]
    g = h.make_graph(
      nodes,
      "dw",
      [h.make_tensor_value_info("x", T.FLOAT, [1, 4, 10, 24])],
      [h.make_tensor_value_info("y", T.FLOAT, [1, 8, 5, 12]), h.make_tensor_value_info("z", T.FLOAT, [1, 8, 5, 12])],
      [
        init("we", 16, 4, 1, 1),
        init("wd3", 16, 1, 3, 3),
        init("bd3", 16),
        init("wd5", 16, 1, 5, 5),
        init("wp", 8, 16, 1, 1),
        init("bp", 8),
        init("wg", 8, 4, 3, 3),
      ],
    )
    from tests.rule_spy import recording

    saved_cfg, saved_opts = dict(conv_rule._CFG), codegen.apply_opts
    try:
      conv_rule.install("x86_64", "x86-64-v3")
      with recording(conv_rule, "rule_opts") as taken, tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "net.onnx")
        onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 13)]), src)
        said = []
        dst = rewrite(src, os.path.join(d, "layout"), said.append)
        self.assertIn("2 depthwise, weights [ky][kx][C]", said[0])
        m = onnx.load(dst)
        dws = [n for n in m.graph.node if n.op_type == "MrtDwConvNhwc"]
        self.assertEqual(len(dws), 2)
        self.assertEqual([n.op_type for n in m.graph.node].count("Conv"), 1)  # the group-2 conv stays NCHW
        inits = {i.name: nh.to_array(i) for i in m.graph.initializer}
        wd5 = nh.to_array(next(i for i in g.initializer if i.name == "wd5"))
        packed = inits[dws[1].input[1]]
        self.assertEqual(packed.shape, (5, 5, 16))
        np.testing.assert_array_equal(packed[3, 1, 7], wd5[7, 0, 3, 1])  # [ky][kx][c] from [c][0][ky][kx]
        x = np.random.default_rng(2).standard_normal((1, 4, 10, 24)).astype(np.float32)
        want = dict(zip(["y", "z"], ort.InferenceSession(src, providers=["CPUExecutionProvider"]).run(["y", "z"], {"x": x})))
        with Context(CACHELEVEL=0, PARALLEL=0):  # compile in this process (its hooks), not from a cache or a worker
          got = OnnxRunner(dst)({"x": Tensor(x)})
          got = {n: got[n].numpy() for n in ("y", "z")}
        for n in ("y", "z"):
          self.assertEqual(got[n].shape, want[n].shape, n)
          np.testing.assert_allclose(got[n], want[n], atol=1e-4, rtol=1e-4, err_msg=n)
    finally:
      codegen.apply_opts = saved_opts
      conv_rule._CFG.clear()
      conv_rule._CFG.update(saved_cfg)
      conv_rule.CONVS.clear()
    # the 1x1 convs and both depthwise ones: 16 channels (2 ymm) along the innermost axis
    self.assertGreaterEqual(len(taken), 4, taken)

  def test_graph_without_rewritable_conv_is_left_alone(self):
    from mrt.layout import rewrite

    models = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "models")
    with tempfile.TemporaryDirectory() as d:
      src = os.path.join(models, "policy.onnx")
      self.assertEqual(rewrite(src, d), src)


if __name__ == "__main__":
  unittest.main()
