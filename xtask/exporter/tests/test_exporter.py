#!/usr/bin/env python3
"""Tests for the modelrt exporter (run with the exporter venv python; needs clang, and libllvm19 for the AMD test):

  PYTHONPATH=xtask/exporter python -m unittest discover -s xtask/exporter/tests -t xtask/exporter   # from the repo root
  MODELRT_EXPORT_SLOW=1 ...     # also the slower adreno --image determinism test
(`cargo xtask ci` runs the first line; the tests import the exporter as the package `mrt` and this folder as `tests`.)

Each test runs export.py as a subprocess exactly like `cargo xtask compile` does and checks exit codes, the one-line
errors, byte-identical repeated exports, and numerical agreement with onnxruntime through check_manifest.py (an
independent ELF loader + ctypes replayer that does not import tinygrad) and, for cpu-aarch64, check_manifest_aarch64.py
(qemu-aarch64).
"""

import filecmp
import glob
import json
import os
import pickle
import struct
import subprocess
import sys
import tempfile
import unittest
from typing import ClassVar

HERE = os.path.dirname(os.path.abspath(__file__))
EXPORTER = os.path.dirname(HERE)  # export.py and the mrt package; tools/ holds the test-data generators
TOOLS = os.path.join(EXPORTER, "tools")
MODELS = os.path.join(EXPORTER, "..", "models")
PY = sys.executable
# the environment for a `python -c` child that imports the exporter (scripts run by path find it next to themselves)
WITH_EXPORTER = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (EXPORTER, os.environ.get("PYTHONPATH")) if p)}


def skip_or_fail(test: unittest.TestCase, reason: str):
  """A missing prerequisite: fails under CI (CI set, or MODELRT_REQUIRE_PYTHON=1, as `cargo xtask ci` runs us), else a
  visible skip, also appended to $MODELRT_SKIP_LOG like the Rust tests' skips (tests/src/skip.rs)."""
  ci = os.environ.get("CI", "") not in ("", "0", "false") or os.environ.get("MODELRT_REQUIRE_PYTHON") == "1"
  line = f"SKIPPED test_exporter::{test.id().split('.')[-1]}: {reason}"
  print(line, file=sys.stderr)
  if log := os.environ.get("MODELRT_SKIP_LOG"):
    with open(log, "a") as f:
      f.write(line + "\n")
  if ci:
    test.fail(f"{reason}, and CI runs every test")
  test.skipTest(reason)


def export(*args, timeout=600):
  return subprocess.run([PY, os.path.join(EXPORTER, "export.py"), *args], capture_output=True, text=True, timeout=timeout)


def check(out_dir, onnx_path=None):
  cmd = [PY, os.path.join(HERE, "check_manifest.py"), out_dir] + (["--onnx", onnx_path] if onnx_path else [])
  return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


def same_tree(a, b) -> bool:
  cmp = filecmp.dircmp(a, b)

  def ok(c):
    return not (c.left_only or c.right_only or c.diff_files or c.funny_files) and all(ok(s) for s in c.subdirs.values())

  # dircmp compares shallowly by stat; force byte comparison of every file
  files = [os.path.relpath(os.path.join(d, f), a) for d, _, fs in os.walk(a) for f in fs]
  return ok(cmp) and all(filecmp.cmp(os.path.join(a, f), os.path.join(b, f), shallow=False) for f in files)


def make_unsupported_model(path):
  import onnx
  from onnx import TensorProto, helper

  g = helper.make_graph(
    [helper.make_node("Det", ["x"], ["y"])],
    "det",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 3])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [])],
  )
  onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)


def make_constantofshape_model(path):
  """light_densenet121's weight pattern: ConstantOfShape whose `value` attribute is a shape-(1,) tensor (not a scalar, so
  tinygrad does not const-fold it). tinygrad realizes each attribute on the device in call 0 and the captured kernels read
  it as a held buffer; on NULL targets its bytes must come from the ONNX attribute. Covers the three TensorProto encodings
  (float_data, raw_data, int64_data)."""
  import numpy as np
  import onnx
  from onnx import TensorProto, helper, numpy_helper

  shp = numpy_helper.from_array(np.array([2, 8], dtype=np.int64), "shp")
  values = {
    "c1": helper.make_tensor("value", TensorProto.FLOAT, [1], [0.5]),
    "c2": helper.make_tensor("value", TensorProto.FLOAT, [1], np.float32([0.25]).tobytes(), raw=True),
    "c3i": helper.make_tensor("value", TensorProto.INT64, [1], [3]),
  }
  nodes = [helper.make_node("ConstantOfShape", ["shp"], [out], value=v) for out, v in values.items()]
  nodes += [
    helper.make_node("Cast", ["c3i"], ["c3"], to=TensorProto.FLOAT),
    helper.make_node("Mul", ["x", "c1"], ["m"]),
    helper.make_node("Add", ["m", "c2"], ["a"]),
    helper.make_node("Mul", ["a", "c3"], ["y"]),
  ]
  g = helper.make_graph(
    nodes,
    "constantofshape",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])],
    [shp],
  )
  onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
  # expected initial bytes of each attribute buffer, straight from the values above
  return {"c1": struct.pack("<f", 0.5), "c2": struct.pack("<f", 0.25), "c3i": struct.pack("<q", 3)}


def global_op(module, name):
  return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


class ErrorTests(unittest.TestCase):
  def assert_user_error(self, r, *needles):
    self.assertEqual(r.returncode, 2, r.stderr)
    last = r.stderr.strip().splitlines()[-1]
    self.assertTrue(last.startswith("error: "), last)
    for n in needles:
      self.assertIn(n, last)

  def test_missing_model(self):
    self.assert_user_error(export("--onnx", "/nonexistent/m.onnx", "--target", "cpu-x86_64", "--out", "/tmp/x"), "model not found")

  def test_wrong_target(self):
    r = export("--onnx", os.path.join(MODELS, "policy.onnx"), "--target", "tpu-v9", "--out", "/tmp/x")
    self.assert_user_error(r, "unsupported target 'tpu-v9'", "cpu-x86_64")

  def test_native_baseline_rejected(self):
    r = export("--onnx", os.path.join(MODELS, "policy.onnx"), "--target", "cpu-x86_64", "--cpu-baseline", "native", "--out", "/tmp/x")
    self.assert_user_error(r, "never 'native'")

  def test_unsupported_op_uses_tinygrad_message(self):
    with tempfile.TemporaryDirectory() as d:
      make_unsupported_model(os.path.join(d, "det.onnx"))
      r = export("--onnx", os.path.join(d, "det.onnx"), "--target", "cpu-x86_64", "--out", os.path.join(d, "o"))
      self.assert_user_error(r, "op='Det' is not supported")

  def test_hcq2_environment_rejected(self):
    env = dict(os.environ, HCQ2="1")
    r = subprocess.run(
      [PY, os.path.join(EXPORTER, "export.py"), "--onnx", os.path.join(MODELS, "policy.onnx"), "--target", "cpu-x86_64", "--out", "/tmp/x"],
      capture_output=True,
      text=True,
      env=env,
      timeout=60,
    )
    self.assert_user_error(r, "HCQ2")

  def _pickle_error(self, data, *needles):
    with tempfile.TemporaryDirectory() as d:
      p = os.path.join(d, "m.pkl")
      with open(p, "wb") as f:
        f.write(data)
      self.assert_user_error(export("--pickle", p, "--out", os.path.join(d, "o")), *needles)

  def test_old_tinygrad_pickle_names_versions(self):
    # a <= 0.12-style CapturedJit: 6 constructor fields (ret, jit_cache[ExecItem], input_replace, ...)
    data = (
      b"\x80\x02"
      + global_op("tinygrad.engine.jit", "CapturedJit")
      + b"(N]"
      + global_op("tinygrad.engine.realize", "ExecItem")
      + b")Ra"
      + b"NNNNt"
      + b"R."
    )
    self._pickle_error(data, "exec-items layout (tinygrad 0.10 to v0.12.0")

  def test_0_13_pickle_names_versions(self):
    data = b"\x80\x02" + global_op("tinygrad.engine.jit", "CapturedJit") + b"(NNNNtR."
    self._pickle_error(data, "unknown TinyJit layout; the closest known is the linear-index layout (tinygrad v0.12.0 from 2026-04-16")

  def test_not_a_pickle_and_truncated_oob(self):
    self._pickle_error(b"hello world, definitely not a pickle", "neither a pickle nor a PICKLE_OOB")
    ops = pickle.dumps(None, protocol=5)
    self._pickle_error(struct.pack("<q", len(ops)) + ops + struct.pack("<q", 100) + b"abc", "truncated PICKLE_OOB buffer")

  def test_pickle_refuses_foreign_callables(self):
    data = (
      b"\x80\x02"
      + global_op("tinygrad.engine.jit", "CapturedJit")
      + b"(NNNNtR"
      + global_op("tinygrad.uop.ops", "ParamArg")
      + b"0"
      + global_op("os", "system")
      + b"(X\x04\x00\x00\x00truetR."
    )
    self._pickle_error(data, "os.system", "does not allow")


def export_model(name, d, *extra, target="cpu-x86_64"):
  """Build make_correctness_models' `name` in d and export it; returns (completed process, onnx path, out dir)."""
  from tools import make_correctness_models as mcm

  path = mcm.make(name, d)
  out = os.path.join(d, f"{name}-{target}")
  return export("--onnx", path, "--target", target, "--reference", "--out", out, *extra), path, out


def manifest_io(out):
  with open(os.path.join(out, "manifest.json")) as f:
    m = json.load(f)
  return {i["name"]: (i["dtype"], i["shape"]) for i in m["inputs"]}, {o["name"]: (o["dtype"], o["shape"]) for o in m["outputs"]}, m


class CompileCorrectnessTests(unittest.TestCase):
  """Graphs that once compiled into silently wrong bundles or crashed. Every expected value is onnxruntime's:
  check_manifest.py replays the manifest without tinygrad and compares with onnxruntime on fresh inputs."""

  # The graphs tests/tests/cpu/compile_correctness.rs does not compile (it runs the rest end to end through
  # `xtask compile` and the CPU backend against onnxruntime), plus three it does, kept here for this test's own
  # check: the manifest replayed without tinygrad on fresh inputs (two outputs, float64, integer division).
  ACCEPTED = (
    "view_space_to_depth",
    "view_split",
    "input_1d_batchnorm",
    "input_1d_broadcast",
    "shape_of_input_is_fine",
    "view_concat_two_outputs",
    "dtype_float64",
    "int_division",
  )

  def test_every_class_matches_onnxruntime_on_cpu(self):
    for name in self.ACCEPTED:
      with self.subTest(model=name), tempfile.TemporaryDirectory() as d:
        r, path, out = export_model(name, d)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("self-check:", r.stderr)
        self.assertIn("cross-check: tinygrad's result equals onnxruntime's", r.stderr)
        # check_manifest's fresh inputs may hold zero divisors, on which onnxruntime refuses integer Div/Mod
        c = check(out) if name == "int_division" else check(out, path)
        self.assertEqual(c.returncode, 0, c.stdout + c.stderr)

  def test_null_target_lowering_matches_onnxruntime(self):
    # the offline (NULL device) flow has no self-check; its lowering is the same code, replayed here for x86-64
    for name in ("view_depth_to_space", "view_transpose", "constant_output", "input_0d_clip", "dtype_float16"):
      with self.subTest(model=name), tempfile.TemporaryDirectory() as d:
        r, path, out = export_model(name, d, target="cpu-x86_64-null")
        self.assertEqual(r.returncode, 0, r.stderr)
        c = check(out, path)
        self.assertEqual(c.returncode, 0, c.stdout + c.stderr)

  def test_model_dtypes_are_kept_and_compile3_dtypes_on_request(self):
    with tempfile.TemporaryDirectory() as d:
      r, _, out = export_model("dtype_float16", d)
      self.assertEqual(r.returncode, 0, r.stderr)
      ins, outs, _ = manifest_io(out)
      self.assertEqual(ins["x"][0], "float16")
      self.assertEqual(outs["z"][0], "float16")
      r, _, out = export_model("dtype_float64", d)
      ins, outs, _ = manifest_io(out)
      self.assertEqual((ins["x"][0], outs["z"][0]), ("float64", "float64"))
      r, _, out = export_model("dtype_float16", d, "--compile3-dtypes")
      self.assertEqual(r.returncode, 0, r.stderr)
      ins, outs, m = manifest_io(out)
      self.assertEqual((ins["x"][0], outs["z"][0]), ("float32", "float32"))
      self.assertEqual(m["producer"]["flags"]["DTYPES"], "compile3")

  def test_zero_and_one_dimensional_shapes_are_recorded(self):
    with tempfile.TemporaryDirectory() as d:
      r, _, out = export_model("input_0d_clip", d)
      self.assertEqual(r.returncode, 0, r.stderr)
      ins, _, _ = manifest_io(out)
      self.assertEqual(ins["lo"], ("float32", []))
      r, _, out = export_model("output_0d", d)
      self.assertEqual(r.returncode, 0, r.stderr)
      _, outs, _ = manifest_io(out)
      self.assertEqual(outs["z"], ("float32", []))
      r, _, out = export_model("input_1d_broadcast", d)
      self.assertEqual(r.returncode, 0, r.stderr)
      ins, _, _ = manifest_io(out)
      self.assertEqual(ins["y"], ("float32", [4]))
      r, _, out = export_model("constant_size", d)
      self.assertEqual(r.returncode, 0, r.stderr)
      _, outs, _ = manifest_io(out)
      self.assertEqual(outs["n"], ("int64", []))

  def test_shape_like_inputs_are_refused_with_the_fix(self):
    for name, inp, op in (("shape_input_reshape", "s", "Reshape"), ("shape_input_via_cast_pad", "p", "Pad")):
      with self.subTest(model=name), tempfile.TemporaryDirectory() as d:
        r, _, out = export_model(name, d)
        ErrorTests.assert_user_error(self, r, f"input '{inp}'", op, f"--const {inp}=FILE.npy")
        self.assertFalse(os.path.exists(os.path.join(out, "manifest.json")))

  def test_const_folds_a_fixed_value(self):
    import hashlib

    import numpy as np

    with tempfile.TemporaryDirectory() as d:
      val = np.array([3, 4], dtype=np.int64)
      np.save(os.path.join(d, "s.npy"), val)
      r, path, out = export_model("shape_input_reshape", d, "--const", f"s={os.path.join(d, 's.npy')}")
      self.assertEqual(r.returncode, 0, r.stderr)
      ins, outs, m = manifest_io(out)
      self.assertEqual(list(ins), ["x"])
      self.assertEqual(outs["z"], ("float32", [3, 4]))
      self.assertEqual(m["producer"]["flags"]["const.s"], hashlib.sha256(val.tobytes()).hexdigest())
      # onnxruntime on the original model with s=[3,4] is the reference for the folded bundle
      import onnxruntime as ort

      x = np.random.default_rng(5).standard_normal((2, 6)).astype(np.float32)
      want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x, "s": val})[0]
      with open(os.path.join(out, m["reference"]["inputs"]["x"]), "rb") as f:
        ref_in = np.frombuffer(f.read(), np.float32).reshape(2, 6)
      with open(os.path.join(out, m["reference"]["outputs"]["z"]), "rb") as f:
        ref_out = np.frombuffer(f.read(), np.float32).reshape(3, 4)
      np.testing.assert_array_equal(ref_out, ref_in.reshape(3, 4))
      self.assertEqual(want.shape, (3, 4))
      c = check(out)
      self.assertEqual(c.returncode, 0, c.stdout + c.stderr)
      np.save(os.path.join(d, "bad.npy"), val.astype(np.int32))
      r, _, _ = export_model("shape_input_reshape", d, "--const", f"s={os.path.join(d, 'bad.npy')}")
      ErrorTests.assert_user_error(self, r, "--const s", "int32", "int64")
      r, _, _ = export_model("shape_input_reshape", d, "--const", f"nope={os.path.join(d, 's.npy')}")
      ErrorTests.assert_user_error(self, r, "no graph input named 'nope'")

  def test_taint_analysis(self):
    import onnx

    from mrt.baked import baked_inputs
    from tools import make_correctness_models as mcm

    with tempfile.TemporaryDirectory() as d:

      def found(name):
        return baked_inputs(onnx.load(mcm.make(name, d)), [i.name for i in onnx.load(mcm.make(name, d)).graph.input])

      self.assertEqual(found("shape_of_input_is_fine"), [])  # Shape depends on the shape only
      self.assertEqual([f[:3] for f in found("shape_input_via_cast_pad")], [("p", "Pad", 1)])
      self.assertEqual([f[:3] for f in found("shape_input_reshape")], [("s", "Reshape", 1)])
      self.assertEqual(found("input_0d_clip"), [])  # Clip's limits are tensors in tinygrad, not constants

  def test_constant_models_hold_their_outputs(self):
    with tempfile.TemporaryDirectory() as d:
      r, _, out = export_model("constant_eyelike", d)
      self.assertEqual(r.returncode, 0, r.stderr)
      self.assertIn("do not depend on any input value", r.stderr)
      _, _, m = manifest_io(out)
      self.assertEqual(m["kernels"], [])
      self.assertEqual([o["op"] for o in m["ops"]], ["copy"])

  def test_known_wrong_ops_are_refused_unless_trusted(self):
    with tempfile.TemporaryDirectory() as d:
      r, _, _ = export_model("known_wrong_lpnorm", d)
      ErrorTests.assert_user_error(self, r, "node '#0' (LpNormalization)", "test_l2normalization_axis_0", "--trust-tinygrad")
      r, _, out = export_model("known_wrong_lpnorm", d, "--trust-tinygrad")
      self.assertEqual(r.returncode, 0, r.stderr)
      _, _, m = manifest_io(out)
      self.assertEqual(m["producer"]["flags"]["TRUST_TINYGRAD"], "1")

  def test_cross_check_refuses_a_result_onnxruntime_disagrees_with(self):
    import numpy as np

    from mrt.targets import ExportError
    from mrt.verify import check_against_onnxruntime
    from tools import make_correctness_models as mcm

    with tempfile.TemporaryDirectory() as d:
      path = mcm.make("input_1d_broadcast", d)
      x, y = np.ones((2, 4), np.float32), np.arange(4, dtype=np.float32)
      lines = []
      check_against_onnxruntime(path, {"x": x, "y": y}, {"z": x * y}, False, lines.append)  # right: accepted
      self.assertIn("cross-check", lines[-1])
      with self.assertRaises(ExportError) as e:
        check_against_onnxruntime(path, {"x": x, "y": y}, {"z": x * y + 1e-2}, False, lines.append)
      self.assertIn("disagrees with onnxruntime", str(e.exception))

  def test_random_ops_are_refused_and_random_indices_not_cross_checked(self):
    with tempfile.TemporaryDirectory() as d:
      r, _, _ = export_model("random_op", d)
      ErrorTests.assert_user_error(self, r, "RandomNormalLike", "draws random numbers")
      r, _, _ = export_model("scatter_indices_input", d)
      self.assertEqual(r.returncode, 0, r.stderr)
      self.assertIn("not cross-checked with onnxruntime: random capture values are not valid ScatterElements indices", r.stderr)

  def test_sequence_output_is_refused(self):
    import onnx
    from onnx import TensorProto, helper

    with tempfile.TemporaryDirectory() as d:
      g = helper.make_graph(
        [helper.make_node("SequenceConstruct", ["x", "x"], ["s"])],
        "seq",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_sequence_value_info("s", TensorProto.FLOAT, [2])],
      )
      p = os.path.join(d, "seq.onnx")
      onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), p)
      r = export("--onnx", p, "--target", "cpu-x86_64", "--out", os.path.join(d, "o"))
      ErrorTests.assert_user_error(self, r, "output 's' is a sequence_type, not a tensor")

  def test_internal_error_is_one_line_with_exit_3(self):
    import contextlib
    import io

    import export as export_mod

    with tempfile.TemporaryDirectory() as d:
      err = io.StringIO()
      try:
        raise RuntimeError("boom\nsecond line")
      except RuntimeError as e:
        with contextlib.redirect_stderr(err):
          code = export_mod.internal_error(e, d)
      self.assertEqual(code, 3)
      lines = err.getvalue().strip().splitlines()
      self.assertEqual(len(lines), 1, lines)
      self.assertTrue(lines[0].startswith("error: the exporter failed on this model: RuntimeError: boom second line"), lines[0])
      with open(os.path.join(d, "exporter-traceback.txt")) as f:
        self.assertIn("Traceback", f.read())


def make_qdq_model(d: str, kind: str, seed: int) -> str:
  """A QDQ uint8 model (onnxruntime static quantisation, seeded random weights and calibration; tools/dsp_models.py):
  `mobilenet` is the MobileNetV2-shaped CI net at 16x16, `conv` one 3x3 convolution at 8x8."""
  import onnx
  from onnx import helper

  from tools import dsp_models as mdm

  if kind == "mobilenet":
    model, shape = mdm.mobilenet(16, False, seed), [1, 3, 16, 16]
  else:
    net = mdm.Net(seed)
    net.nodes.append(helper.make_node("Identity", [net.conv("input", 3, 8, 3, 1, relu6=False)], ["logits"]))
    model, shape = mdm._model(net, [1, 3, 8, 8], [1, 8, 8, 8]), [1, 3, 8, 8]
  fp, qp = os.path.join(d, f"{kind}-float.onnx"), os.path.join(d, f"{kind}-qdq.onnx")
  onnx.save(model, fp)
  mdm.quantize(fp, qp, shape, seed)
  return qp


def ort_run(path: str, feeds: dict, fuse: bool = True):
  import onnxruntime as ort

  o = ort.SessionOptions()
  o.log_severity_level = 3
  if not fuse:
    o.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
  return ort.InferenceSession(path, o, providers=["CPUExecutionProvider"]).run(None, feeds)[0]


def initializer(path: str, name: str):
  import onnx
  from onnx import numpy_helper

  return next(numpy_helper.to_array(i) for i in onnx.load(path).graph.initializer if i.name == name)


# export.py with tinygrad's OnnxRunner made wrong by argv[1] steps of argv[2] on the first element of 'logits': tinygrad
# is patched once the exporter has pinned the environment (check_versions), so capture, self-checks and the eager result
# all see the same wrong answer, as they would with a real tinygrad bug
WRONG_TINYGRAD = """
import sys
import export  # found through PYTHONPATH (WITH_EXPORTER)
versions = export.check_versions
def check_versions(*a):
  r = versions(*a)
  import tinygrad.nn.onnx as tgo
  call = tgo.OnnxRunner.__call__
  def wrong(self, *args, **kw):
    out = dict(call(self, *args, **kw))
    y = out["logits"]
    first = (y.flatten().ones_like().cumsum() == 1).reshape(y.shape)
    out["logits"] = y + first.where(float(sys.argv[1]) * float(sys.argv[2]), 0.0)
    return out
  tgo.OnnxRunner.__call__ = wrong
  return r
export.check_versions = check_versions
sys.exit(export.main(sys.argv[3:]))
"""


class QuantisedCrossCheckTests(unittest.TestCase):
  """QDQ graphs are cross-checked with onnxruntime in quantisation steps (mrt/quant_check.py), not skipped with
  --trust-tinygrad: a right compile passes and `modelrt verify`'s rule accepts it, a wrong answer is refused."""

  def test_qdq_model_compiles_without_trust_and_verifies_within_its_tolerance(self):
    import numpy as np

    from mrt.quant_check import FLAG, K_STEPS
    from tests import check_manifest

    with tempfile.TemporaryDirectory() as d:
      # model seed 4: on the capture inputs tinygrad and onnxruntime differ by one step in 2 of the 10 logits
      path = make_qdq_model(d, "mobilenet", 4)
      out = os.path.join(d, "out")
      r = export("--onnx", path, "--target", "cpu-x86_64", "--reference", "--out", out)
      self.assertEqual(r.returncode, 0, r.stderr)
      self.assertIn("cross-check (quantised): 'logits'", r.stderr)
      _, _, m = manifest_io(out)
      self.assertNotIn("TRUST_TINYGRAD", m["producer"]["flags"])
      self.assertEqual(m["producer"]["flags"]["ORT_TOLERANCE"], FLAG)
      ref = m["reference"]
      rep = check_manifest.Replayer(out)
      x = np.frombuffer(rep.blob(ref["inputs"]["input"]), np.float32).reshape(1, 3, 16, 16)
      want = np.frombuffer(rep.blob(ref["outputs"]["logits"]), np.float32).reshape(1, 10)
      np.testing.assert_array_equal(want, ort_run(path, {"input": x}))
      # the tolerance: K steps of the logits' DequantizeLinear scale plus onnxruntime's own fused/unfused spread
      step = float(initializer(path, "logits_scale"))
      own = float(np.max(np.abs(ort_run(path, {"input": x}, fuse=False) - want))) / step
      self.assertAlmostEqual(ref["atol"], (K_STEPS + round(own)) * step, places=6)
      got = rep.run({"input": x})["logits"]
      self.assertFalse(np.allclose(got, want, atol=1e-4, rtol=1e-4), "this model was meant to differ from onnxruntime")
      self.assertLessEqual(float(np.max(np.abs(got - want))) / step, 1 + 1e-3)
      # `modelrt verify`'s rule |got - want| <= atol + rtol |want| (core/src/verify.rs) accepts the bundle ...
      self.assertTrue(np.all(np.abs(got - want) <= ref["atol"] + ref["rtol"] * np.abs(want)))
      # ... and refuses one whose first convolution reads its weights in the wrong order
      w = next(b for b in m["buffers"] if b["label"] == "onnx:w1_quantized")
      rep.bufs[w["id"]][1][:] = rep.bufs[w["id"]][1][::-1].copy()
      bad = rep.run({"input": x})["logits"]
      self.assertFalse(np.all(np.abs(bad - want) <= ref["atol"] + ref["rtol"] * np.abs(want)))

  def test_a_wrong_quantised_result_is_refused_with_one_line(self):
    with tempfile.TemporaryDirectory() as d:
      path = make_qdq_model(d, "conv", 1)
      step = float(initializer(path, "conv2_scale"))  # Conv -> Q -> DQ(conv2_scale) -> Identity -> logits
      out = os.path.join(d, "out")
      argv = ["--onnx", path, "--target", "cpu-x86_64", "--out", out]
      r = subprocess.run([PY, "-c", WRONG_TINYGRAD, "5", repr(step), *argv], capture_output=True, text=True, timeout=600, env=WITH_EXPORTER)
      ErrorTests.assert_user_error(self, r, "output 'logits'", "beyond the quantisation tolerance", "5 quantisation steps")
      self.assertFalse(os.path.exists(os.path.join(out, "manifest.json")))
      r = subprocess.run([PY, "-c", WRONG_TINYGRAD, "1", repr(step), *argv], capture_output=True, text=True, timeout=600, env=WITH_EXPORTER)
      self.assertEqual(r.returncode, 0, r.stderr)  # one step is within what onnxruntime itself varies by

  def test_tolerance_bounds_and_step_detection(self):
    import numpy as np
    import onnx
    from onnx import TensorProto, helper

    from mrt.quant_check import FLAG, output_steps
    from mrt.targets import ExportError
    from mrt.verify import check_against_onnxruntime

    with tempfile.TemporaryDirectory() as d:
      path = make_qdq_model(d, "mobilenet", 4)
      step = float(initializer(path, "logits_scale"))
      self.assertEqual(float(output_steps(onnx.load(path))["logits"].scale.max()), step)
      feeds = {"input": np.random.default_rng(0).standard_normal((1, 3, 16, 16)).astype(np.float32)}
      want = ort_run(path, feeds)
      self.assertEqual(check_against_onnxruntime(path, feeds, {"logits": want}, False, lambda _: None), {"ORT_TOLERANCE": FLAG})
      for shift, needle in (
        (np.eye(1, 10, 3, dtype=np.float32) * 5, "5 quantisation steps"),
        (np.full((1, 10), 2, np.float32), "root mean square 2 steps"),
      ):
        with self.subTest(needle=needle), self.assertRaises(ExportError) as e:
          check_against_onnxruntime(path, feeds, {"logits": want + shift * step}, False, lambda _: None)
        self.assertIn(needle, str(e.exception))
        self.assertNotIn("\n", str(e.exception))

    # integer outputs of QuantizeLinear step by 1; MatMulInteger's exact int32 result and a float graph's outputs have none
    def graph(nodes, out_type, inits=()):
      return helper.make_model(
        helper.make_graph(
          nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])], [helper.make_tensor_value_info("y", out_type, [4])], list(inits)
        )
      )

    s = helper.make_tensor("s", TensorProto.FLOAT, [], [0.5])
    self.assertEqual(output_steps(graph([helper.make_node("QuantizeLinear", ["x", "s"], ["y"])], TensorProto.UINT8, [s]))["y"].scale.max(), 1)
    self.assertEqual(output_steps(graph([helper.make_node("Relu", ["x"], ["y"])], TensorProto.FLOAT)), None)
    mm_int = graph(
      [helper.make_node("Cast", ["x"], ["q"], to=TensorProto.UINT8), helper.make_node("MatMulInteger", ["q", "q"], ["y"])], TensorProto.INT32
    )
    self.assertEqual(output_steps(mm_int), {})


class ExportTests(unittest.TestCase):
  def test_cpu_exports_match_onnxruntime_and_are_deterministic(self):
    for m in ("policy", "vision", "dmonitor"):
      with self.subTest(model=m), tempfile.TemporaryDirectory() as d:
        onnx_path = os.path.join(MODELS, f"{m}.onnx")
        a, b = os.path.join(d, "a"), os.path.join(d, "b")
        for out in (a, b):
          r = export("--onnx", onnx_path, "--target", "cpu-x86_64", "--out", out, "--reference")
          self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(same_tree(a, b), f"{m}: two exports differ")
        c = check(a, onnx_path)
        self.assertEqual(c.returncode, 0, c.stdout + c.stderr)
        self.assertIn("PASS", c.stdout)

  def test_null_flow_with_init_phase_matches_onnxruntime(self):
    # the NULL-device recipe (python consts from CPU, init phase, weights from ONNX) compiled for x86 so it can be replayed
    with tempfile.TemporaryDirectory() as d:
      onnx_path = os.path.join(MODELS, "policy.onnx")
      r = export("--onnx", onnx_path, "--target", "cpu-x86_64-null", "--image", "--out", d, "--reference")
      self.assertEqual(r.returncode, 0, r.stderr)
      with open(os.path.join(d, "manifest.json")) as f:
        m = json.load(f)
      self.assertTrue(any(o["phase"] == "init" for o in m["ops"]), "IMAGE=1 must produce one-time (init) kernels")
      self.assertTrue(all(b["blob"] for b in m["buffers"] if b["kind"] == "weight"))
      c = check(d, onnx_path)
      self.assertEqual(c.returncode, 0, c.stdout + c.stderr)

  def test_null_targets_take_node_tensor_attributes_from_onnx(self):
    # regression: light_densenet121 failed on every NULL target with "buffer 3 (device, 4 bytes) is read before written but
    # has no data source" because ConstantOfShape's `value` attribute tensors were not recognised as ONNX data
    with tempfile.TemporaryDirectory() as d:
      onnx_path = os.path.join(d, "cos.onnx")
      want = make_constantofshape_model(onnx_path)
      for target in ("cpu-x86_64-null", "cpu-aarch64", "adreno-a630", "amd-gfx1100"):
        with self.subTest(target=target):
          out = os.path.join(d, target)
          r = export("--onnx", onnx_path, "--target", target, "--out", out, "--reference")
          last = (r.stderr.strip().splitlines() or [""])[-1]
          if target.startswith("amd-") and r.returncode != 0 and "LLVM" in last:
            skip_or_fail(self, "libllvm19 not installed")
          self.assertEqual(r.returncode, 0, r.stderr)
          with open(os.path.join(out, "manifest.json")) as f:
            m = json.load(f)
          got = {}
          for b in m["buffers"]:
            if b["kind"] != "weight":
              continue
            with open(os.path.join(out, b["blob"]), "rb") as f:
              got[b["label"]] = f.read()
          self.assertEqual(got, {f"onnx:ConstantOfShape({k}).value": v for k, v in want.items()})
      again = os.path.join(d, "again")
      self.assertEqual(export("--onnx", onnx_path, "--target", "cpu-x86_64-null", "--out", again, "--reference").returncode, 0)
      self.assertTrue(same_tree(os.path.join(d, "cpu-x86_64-null"), again), "two exports differ")
      c = check(os.path.join(d, "cpu-x86_64-null"), onnx_path)  # the NULL flow replayed on x86 vs onnxruntime
      self.assertEqual(c.returncode, 0, c.stdout + c.stderr)
      self.assertIn("PASS", c.stdout)
      import shutil

      if shutil.which("qemu-aarch64") and shutil.which("aarch64-linux-gnu-gcc"):
        c = subprocess.run(
          [PY, os.path.join(HERE, "check_manifest_aarch64.py"), os.path.join(d, "cpu-aarch64")], capture_output=True, text=True, timeout=300
        )
        self.assertEqual(c.returncode, 0, c.stdout + c.stderr)
        self.assertIn("PASS", c.stdout)

  def test_aarch64_export_runs_under_qemu(self):
    import shutil

    if not (shutil.which("qemu-aarch64") and shutil.which("aarch64-linux-gnu-gcc")):
      skip_or_fail(self, "qemu-aarch64 / cross gcc missing")
    with tempfile.TemporaryDirectory() as d:
      r = export("--onnx", os.path.join(MODELS, "dmonitor.onnx"), "--target", "cpu-aarch64", "--out", d, "--reference")
      self.assertEqual(r.returncode, 0, r.stderr)
      c = subprocess.run([PY, os.path.join(HERE, "check_manifest_aarch64.py"), d], capture_output=True, text=True, timeout=600)
      self.assertEqual(c.returncode, 0, c.stdout + c.stderr)
      self.assertIn("PASS", c.stdout)

  def test_adreno_export_is_deterministic_and_decoded(self):
    with tempfile.TemporaryDirectory() as d:
      onnx_path = os.path.join(MODELS, "policy.onnx")
      args = ["--image"] if os.environ.get("MODELRT_EXPORT_SLOW") else []
      a, b = os.path.join(d, "a"), os.path.join(d, "b")
      for out in (a, b):
        r = export("--onnx", onnx_path, "--target", "adreno-a630", *args, "--out", out)
        self.assertEqual(r.returncode, 0, r.stderr)
      self.assertTrue(same_tree(a, b))
      with open(os.path.join(a, "manifest.json")) as f:
        m = json.load(f)
      for k in m["kernels"]:
        ir3 = k["meta"]["ir3"]
        self.assertEqual(os.path.getsize(os.path.join(a, k["binary"])), ir3["image_size"])  # binary = ISA only
        self.assertEqual(ir3["image_size"] % 4, 0)
        self.assertEqual(os.path.getsize(os.path.join(a, ir3["immediates"])) % 4, 0)
        self.assertEqual(len(ir3["tex_to_image"]), ir3["tex_cnt"])

  def test_amd_descriptor_fields(self):
    with tempfile.TemporaryDirectory() as d:
      r = export("--onnx", os.path.join(MODELS, "policy.onnx"), "--target", "amd-gfx1100", "--out", d)
      # Skip only when libLLVM itself is missing (tinygrad then cannot find the library); `cargo xtask ci` installs
      # libllvm19, so there this test always runs.
      no_llvm = not any(glob.glob(f"/usr/lib/*/libLLVM-{v}.so*") or glob.glob(f"/usr/lib/*/libLLVM.so.{v}*") for v in range(18, 22))
      if no_llvm and os.environ.get("MODELRT_REQUIRE_PYTHON") != "1":
        skip_or_fail(self, "libllvm19 not installed")
      self.assertEqual(r.returncode, 0, r.stderr)
      with open(os.path.join(d, "manifest.json")) as f:
        m = json.load(f)
      for k in m["kernels"]:
        amd = k["meta"]["amd"]
        with open(os.path.join(d, k["binary"]), "rb") as f:
          lib = f.read()
        self.assertEqual(struct.unpack_from("<H", lib, 18)[0], 0xE0)  # EM_AMDGPU
        self.assertEqual(struct.unpack_from("<I", lib, 48)[0] & 0xFF, 0x41)  # gfx1100 mach
        self.assertEqual(amd["wavefront_size"], 32)
        self.assertTrue(amd["kernel_code_properties"] & 0x400)  # wave32
        n_buf = sum(p["kind"] == "buffer" for p in k["params"])
        self.assertGreaterEqual(amd["kernarg_size"], 8 * n_buf)  # u64 pointer per buffer param

  def test_pickle_import_plain_and_oob(self):
    with tempfile.TemporaryDirectory() as d:
      onnx_path = os.path.join(MODELS, "policy.onnx")
      env = dict(os.environ, DEV="CPU:CLANG:x86_64,x86-64-v3")
      for oob in ([], ["--oob"]):
        pkl = os.path.join(d, f"m{len(oob)}.pkl")
        subprocess.run([PY, os.path.join(TOOLS, "make_test_pickle.py"), onnx_path, pkl, *oob], check=True, capture_output=True, env=env, timeout=300)
        out = os.path.join(d, f"o{len(oob)}")
        r = export("--pickle", pkl, "--out", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        c = check(out, onnx_path)
        self.assertEqual(c.returncode, 0, c.stdout + c.stderr)

  def test_native_cpu_pickle_says_how_to_recapture(self):
    # tinygrad's default DEV=CPU compiles with -march=native; the pickle cannot say which CPU that was
    with tempfile.TemporaryDirectory() as d:
      pkl = os.path.join(d, "native.pkl")
      subprocess.run(
        [PY, os.path.join(TOOLS, "make_test_pickle.py"), os.path.join(MODELS, "policy.onnx"), pkl],
        check=True,
        capture_output=True,
        env=dict(os.environ, DEV="CPU"),
        timeout=300,
      )
      ErrorTests.assert_user_error(self, export("--pickle", pkl, "--out", os.path.join(d, "o")), "-march=native", "DEV=CPU:CLANG:x86_64,x86-64-v3")


class StateTests(unittest.TestCase):
  """Stateful JITs (mrt/state.py): a queue advanced with assign becomes a state buffer with its exact initial bytes, and
  the manifest, replayed step after step by check_manifest's independent replayer, equals tinygrad's own replay of the
  unpickled jit. Before mrt/state.py, a queue the jit also returned became an output buffer without its bytes and a
  queue passed in as an input stayed an input whose updates were lost."""

  CPU: ClassVar[dict] = dict(os.environ, DEV="CPU:CLANG:x86_64,x86-64-v3")

  def _pickle(self, d, variant, steps=4):
    pkl = os.path.join(d, f"{variant}.pkl")
    subprocess.run(
      [PY, os.path.join(TOOLS, "make_state_pickle.py"), variant, pkl, str(steps)], check=True, capture_output=True, env=self.CPU, timeout=300
    )
    import numpy as np

    return pkl, np.load(pkl + ".init.npy"), np.load(pkl + ".replay.npz")

  def _replay(self, out, golden, n_out):
    import numpy as np

    from tests.check_manifest import Replayer

    r = Replayer(out)
    for i, x in enumerate(golden["x"]):
      got = r.run({"x": x})
      for k in range(n_out):
        np.testing.assert_array_equal(got[f"output{k}"], golden[f"out{k}"][i], err_msg=f"step {i} output{k}")
    return r

  def test_held_queue_returned_by_the_jit_keeps_its_captured_bytes(self):
    import numpy as np

    with tempfile.TemporaryDirectory() as d:
      pkl, init, golden = self._pickle(d, "held")
      out = os.path.join(d, "o")
      r = export("--pickle", pkl, "--out", out)
      self.assertEqual(r.returncode, 0, r.stderr)
      self.assertIn("state: 1 buffer(s) persist", r.stderr)
      with open(os.path.join(out, "manifest.json")) as f:
        m = json.load(f)
      st = [b for b in m["buffers"] if b["kind"] == "state"]
      self.assertEqual(len(st), 1)
      with open(os.path.join(out, st[0]["blob"]), "rb") as f:
        self.assertEqual(f.read(), init.tobytes())
      self.assertNotIn(st[0]["id"], [o["buffer"] for o in m["outputs"]])  # the returned queue is a copy of the state
      rep = self._replay(out, golden, 3)
      q = rep.bufs[st[0]["id"]][1].view(np.float32).reshape(init.shape)
      np.testing.assert_array_equal(q, golden["q"])

  def test_queue_passed_as_input_becomes_state_or_is_refused(self):
    import numpy as np

    with tempfile.TemporaryDirectory() as d:
      pkl, init, golden = self._pickle(d, "input")
      out = os.path.join(d, "o")
      ErrorTests.assert_user_error(self, export("--pickle", pkl, "--out", out), "advances input(s) q", "--state-init")
      ErrorTests.assert_user_error(
        self, export("--pickle", pkl, "--out", out, "--state-init", "q=zeros", "--state-init", "x=zeros"), "--state-init names x"
      )
      r = export("--pickle", pkl, "--out", out, "--state-init", f"q={pkl}.init.npy")
      self.assertEqual(r.returncode, 0, r.stderr)
      with open(os.path.join(out, "manifest.json")) as f:
        m = json.load(f)
      self.assertEqual([i["name"] for i in m["inputs"]], ["x"])
      st = [b for b in m["buffers"] if b["kind"] == "state"]
      self.assertEqual([b["label"] for b in st], ["state:q"])
      rep = self._replay(out, golden, 1)
      np.testing.assert_array_equal(rep.bufs[st[0]["id"]][1].view(np.float32).reshape(init.shape), golden["q"])
      self.assertFalse(np.array_equal(golden["q"], init))  # the steps really moved the queue

  def test_tinygrad_script_refuses_a_captured_queue(self):
    with tempfile.TemporaryDirectory() as d:
      script = os.path.join(d, "held.py")
      with open(script, "w") as f:
        f.write(
          "import numpy as np\nfrom tinygrad import Tensor\n"
          "def build():\n  q = Tensor(np.ones((3, 4), np.float32)).contiguous().realize()\n"
          "  def fn(x):\n    q.assign(q[1:].cat(x.reshape(1, 4), dim=0).contiguous())\n    return q.sum(0).contiguous()\n"
          "  return {'fn': fn, 'inputs': {'x': np.zeros(4, np.float32)}}\n"
        )
      ErrorTests.assert_user_error(
        self,
        export("--tinygrad", f"{script}:build", "--target", "cpu-x86_64", "--out", os.path.join(d, "o")),
        "advances tensors it captured",
        "'state'",
      )


if __name__ == "__main__":
  unittest.main()
