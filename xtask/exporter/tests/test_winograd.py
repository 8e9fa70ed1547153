"""Tests of the Winograd pass (mrt/winograd*.py; docs/cpu-kernels.md, "Winograd convolutions").

- The transform matrices against their defining identities: exactly in rationals (the bilinear algorithm computes
  correlation), in float64 on random tiles against direct correlation, and against the published F(4x4,3x3) matrices
  of Lavin & Gray ("Fast Algorithms for Convolutional Neural Networks", 2016) up to the per-row sign a construction may
  choose.
- Which convs qualify and the speed rule's boundaries (pure Python).
- One compile of a small resnet-style net for cpu-x86_64 (a 64→64 3x3 stride-1 conv that the rule rewrites, a stride-2
  conv and an 8-channel conv that keep the direct form), replayed by check_manifest.py against onnxruntime.
- The pass in tinygrad on the host CPU: `off` changes no runner, a conv whose check misses the tolerance keeps the
  direct form and says so, and a padded conv with a non-multiple-of-4 output matches onnxruntime.
"""

import json
import os
import re
import subprocess
import tempfile
import unittest
from fractions import Fraction

import numpy as np

from mrt import winograd
from mrt.winograd_math import M, N, as_array, correlate_tile, fold_weights, transforms
from tests.test_exporter import PY, WITH_EXPORTER, check, export, skip_or_fail

# Lavin & Gray 2016, F(4x4, 3x3) with points 0, ±1, ±2 and infinity.
LAVIN_BT = [
  [4, 0, -5, 0, 1, 0],
  [0, -4, -4, 1, 1, 0],
  [0, 4, -4, -1, 1, 0],
  [0, -2, -1, 2, 1, 0],
  [0, 2, -1, -2, 1, 0],
  [0, 4, 0, -5, 0, 1],
]
LAVIN_G = [
  [Fraction(1, 4), 0, 0],
  [Fraction(-1, 6), Fraction(-1, 6), Fraction(-1, 6)],
  [Fraction(-1, 6), Fraction(1, 6), Fraction(-1, 6)],
  [Fraction(1, 24), Fraction(1, 12), Fraction(1, 6)],
  [Fraction(1, 24), Fraction(-1, 12), Fraction(1, 6)],
  [0, 0, 1],
]
LAVIN_AT = [[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]]


def correlate_1d(g, d):
  return np.array([sum(g[k] * d[i + k] for k in range(len(g))) for i in range(len(d) - len(g) + 1)])


class Transforms(unittest.TestCase):
  def test_bilinear_identity_is_exact(self):
    # sum_j At[i][j] G[j][k] Bt[j][l] must be 1 where l = i + k and 0 elsewhere, exactly, for any valid point set
    for points in [(0, 1, -1, 2, -2), (0, 1, -1, Fraction(1, 2), Fraction(-1, 2)), (0, 1, -1, 2, Fraction(-1, 2))]:
      at, g, bt = transforms(points=points)
      for i in range(M):
        for k in range(3):
          for lo in range(N):
            got = sum(at[i][j] * g[j][k] * bt[j][lo] for j in range(N))
            self.assertEqual(got, 1 if lo == i + k else 0, (points, i, k, lo))

  def test_random_tiles_match_direct_correlation_in_float64(self):
    at, g, bt = (as_array(a) for a in transforms())
    rng = np.random.default_rng(1)
    for _ in range(100):
      f, d = rng.standard_normal(3), rng.standard_normal(N)
      np.testing.assert_allclose(at @ ((g @ f) * (bt @ d)), correlate_1d(f, d), rtol=0, atol=1e-12)
      f2, d2 = rng.standard_normal((3, 3)), rng.standard_normal((N, N))
      direct = np.array([[np.sum(f2 * d2[y : y + 3, x : x + 3]) for x in range(M)] for y in range(M)])
      np.testing.assert_allclose(correlate_tile(at, g, bt, f2, d2), direct, rtol=0, atol=1e-12)

  def test_matrices_are_lavin_grays_up_to_row_sign(self):
    at, g, bt = transforms()
    self.assertEqual(at, [[Fraction(x) for x in row] for row in LAVIN_AT])
    for j in range(N):
      sign = 1 if bt[j] == [Fraction(x) for x in LAVIN_BT[j]] else -1
      self.assertEqual(bt[j], [Fraction(sign * x) for x in LAVIN_BT[j]], f"Bt row {j}")
      self.assertEqual(g[j], [Fraction(sign * x) for x in LAVIN_G[j]], f"G row {j} (scaled with Bt's row)")

  def test_points_must_be_distinct_and_enough(self):
    with self.assertRaises(ValueError):
      transforms(points=(0, 1, 1, 2, -2))
    with self.assertRaises(ValueError):
      transforms(points=(0, 1, -1, 2))

  def test_folded_weights_layout(self):
    g = as_array(transforms()[1])
    w = np.random.default_rng(2).standard_normal((5, 3, 3, 3)).astype(np.float32)
    u = fold_weights(w, g)
    self.assertEqual((u.shape, u.dtype), ((N * N, 5, 3), np.float32))
    for k, c in [(0, 0), (4, 2), (2, 1)]:
      want = g @ w[k, c].astype(np.float64) @ g.T
      np.testing.assert_allclose(u[:, k, c].reshape(N, N), want, rtol=1e-6, atol=1e-7)

    # the GEMM reads U with the output channels innermost (mrt/winograd_ops.py pack_u): [36, C, K]
    from mrt.winograd_ops import pack_u

    p = pack_u(u)
    self.assertEqual((p.shape, p.dtype, p.flags["C_CONTIGUOUS"]), ((N * N, 3, 5), np.float32, True))
    for k, c in [(0, 0), (4, 2), (2, 1)]:
      np.testing.assert_array_equal(p[:, c, k], u[:, k, c])


class Qualify(unittest.TestCase):
  def test_refusals(self):
    f32 = np.float32
    ok = {"pads": [1, 1, 1, 1]}
    self.assertIsNone(winograd.shape_refusal((1, 8, 9, 9), (8, 8, 3, 3), f32, ok))
    self.assertIsNone(winograd.shape_refusal((1, 8, 9, 9), (8, 8, 3, 3), f32, {"auto_pad": "SAME_UPPER"}))
    cases = {
      "kernel": ((1, 8, 9, 9), (8, 8, 5, 5), f32, ok),
      "strides": ((1, 8, 9, 9), (8, 8, 3, 3), f32, {**ok, "strides": [2, 2]}),
      "dilations": ((1, 8, 9, 9), (8, 8, 3, 3), f32, {**ok, "dilations": [2, 2]}),
      "group": ((1, 8, 9, 9), (4, 4, 3, 3), f32, {**ok, "group": 2}),
      "float16": ((1, 8, 9, 9), (8, 8, 3, 3), np.float16, ok),
      "padding": ((1, 8, 9, 9), (8, 8, 3, 3), f32, {"pads": [1, -1, 1, 1]}),
      "2-D": ((1, 8, 9), (8, 8, 3), f32, ok),
    }
    for what, args in cases.items():
      self.assertIsNotNone(winograd.shape_refusal(*args), what)

  def test_pads(self):
    self.assertEqual(winograd.conv_pads("NOTSET", [0, 1, 2, 1], 5, 5), (0, 1, 2, 1))
    self.assertEqual(winograd.conv_pads("VALID", [9, 9, 9, 9], 5, 5), (0, 0, 0, 0))
    self.assertEqual(winograd.conv_pads("SAME_LOWER", None, 5, 5), (1, 1, 1, 1))
    self.assertIsNone(winograd.conv_pads("NOTSET", [1, 1, 1], 5, 5))

  def test_rule_boundaries(self):
    # docs/bench.md (rule 2, vs the channel-last direct convs): 24→24 at 128 tiles won on v3 and v4, 16→16 at 512
    # tiles lost on both, 64→64 at 4 tiles lost on v3; 128→128 and 512→512 at 4 tiles won
    self.assertEqual((winograd.MIN_CHANNELS, winograd.MIN_TILES, winograd.WIDE_CHANNELS), (24, 16, 128))
    self.assertTrue(winograd.faster(24, 24, 128, vec=8))
    self.assertTrue(winograd.faster(64, 64, 16, vec=8))
    self.assertTrue(winograd.faster(512, 512, 16, vec=8))
    self.assertFalse(winograd.faster(16, 16, 512, vec=8))
    self.assertFalse(winograd.faster(3, 16, 2048, vec=8))
    self.assertFalse(winograd.faster(64, 16, 196, vec=8))
    self.assertFalse(winograd.faster(64, 64, 4, vec=8))
    self.assertTrue(winograd.faster(128, 128, 4, vec=8))
    self.assertTrue(winograd.faster(512, 512, 1, vec=8))
    self.assertFalse(winograd.faster(512, 64, 4, vec=8))
    # rule 3: few-tile wide convs only with 8-float vectors (x86-64-v3); with zmm the blocked direct conv wins
    self.assertTrue(winograd.faster(512, 512, 4, vec=8))
    self.assertFalse(winograd.faster(512, 512, 4, vec=16))
    self.assertTrue(winograd.faster(256, 256, 16, vec=16))
    self.assertEqual(winograd.tiles(56, 56), 196)
    self.assertEqual(winograd.tiles(7, 7), 4)
    self.assertEqual(winograd.tiles(13, 13, 2), 32)

  def test_takes_follows_the_rule_and_the_output_size(self):
    pads = {"pads": [1, 1, 1, 1]}
    try:
      winograd.configure("auto", "cpu-x86_64", None)
      self.assertTrue(winograd.takes((64, 64, 3, 3), pads, (1, 64, 16, 16)))  # 16 tiles
      self.assertFalse(winograd.takes((64, 64, 3, 3), pads, (1, 64, 8, 8)))  # 4 tiles
      self.assertFalse(winograd.takes((64, 64, 3, 3), {"pads": [0, 0, 0, 0]}, (1, 64, 14, 14)))  # 12x12: 9 tiles
      self.assertTrue(winograd.takes((64, 64, 3, 3), {"pads": [0, 0, 0, 0]}, (1, 64, 15, 15)))  # 13x13: 16 tiles
      self.assertFalse(winograd.takes((64, 64, 3, 3), pads, None))  # unknown size: the layout pass keeps it
      self.assertFalse(winograd.takes((64, 64, 3, 3), {**pads, "strides": [2, 2]}, (1, 64, 56, 56)))
      self.assertFalse(winograd.takes((16, 16, 3, 3), pads, (1, 16, 64, 64)))
      winograd.configure("on", "cpu-x86_64", None)
      self.assertTrue(winograd.takes((16, 16, 3, 3), pads, None))
      winograd.configure("auto", "cpu-aarch64", None)  # not measured on aarch64: auto takes nothing there
      self.assertFalse(winograd.takes((64, 64, 3, 3), pads, (1, 64, 56, 56)))
      winograd.configure("on", "cpu-aarch64", None)
      self.assertTrue(winograd.takes((64, 64, 3, 3), pads, (1, 64, 56, 56)))
    finally:
      winograd.configure("off", "cpu-x86_64", None)

  def test_mode_and_target(self):
    from mrt.targets import ExportError

    with self.assertRaises(ExportError):
      winograd.configure("maybe", "cpu-x86_64", None)
    with self.assertRaises(ExportError):
      winograd.configure("on", "adreno-a630", None)
    winograd.configure("auto", "amd-gfx1100", None)  # the default on a GPU target: silently off
    self.assertEqual(winograd._state["mode"], "off")
    winograd.configure("off", "cpu-x86_64", None)

  def test_cli_errors_are_one_line(self):
    with tempfile.TemporaryDirectory() as tmp:
      model = os.path.join(tmp, "m.onnx")
      with open(model, "wb") as f:
        f.write(b"not read: the flag is refused first")
      for args, want in [
        (["--onnx", model, "--target", "adreno-a630", "--winograd", "on"], "error: --winograd on applies to cpu-* targets, not adreno-a630"),
        (["--pickle", model, "--winograd", "off"], "error: --beam, --beam-cache and --winograd apply to ONNX models, not --pickle"),
        (["--onnx", model, "--target", "cpu-x86_64", "--winograd", "maybe"], "error: argument --winograd: invalid choice: 'maybe'"),
      ]:
        r = export(*args, "--out", os.path.join(tmp, "out"))
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertTrue(r.stderr.startswith(want), r.stderr)


def _conv(name, x, w, b, cout, cin, stride, pads, rng):
  from onnx import numpy_helper

  inits = [
    numpy_helper.from_array((rng.standard_normal((cout, cin, 3, 3)) / np.sqrt(9 * cin)).astype(np.float32), w),
    numpy_helper.from_array((0.1 * rng.standard_normal(cout)).astype(np.float32), b),
  ]
  from onnx import helper

  return helper.make_node("Conv", [x, w, b], [name], strides=[stride, stride], pads=pads, kernel_shape=[3, 3]), inits


def small_net(path: str):
  """A resnet-style block at 56x56: 8→64 (below the rule), 64→64 with a residual (rewritten), 64→64 stride 2."""
  from onnx import TensorProto, helper, save

  rng = np.random.default_rng(7)
  n1, i1 = _conv("c1", "x", "w1", "b1", 64, 8, 1, [1, 1, 1, 1], rng)
  n2, i2 = _conv("c2", "r1", "w2", "b2", 64, 64, 1, [1, 1, 1, 1], rng)
  n3, i3 = _conv("c3", "s", "w3", "b3", 64, 64, 2, [1, 1, 1, 1], rng)
  nodes = [
    n1,
    helper.make_node("Relu", ["c1"], ["r1"]),
    n2,
    helper.make_node("Add", ["c2", "r1"], ["a"]),
    helper.make_node("Relu", ["a"], ["s"]),
    n3,
  ]
  graph = helper.make_graph(
    nodes,
    "wino_net",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 56, 56])],
    [helper.make_tensor_value_info("c3", TensorProto.FLOAT, None)],
    i1 + i2 + i3,
  )
  save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)


def _have_onnx() -> bool:
  try:
    import onnx  # noqa: F401

    return True
  except ImportError:
    return False


class Compile(unittest.TestCase):
  def test_small_net_for_cpu_matches_onnxruntime(self):
    if not _have_onnx():
      skip_or_fail(self, "onnx is not installed (run with the exporter venv's python)")
    with tempfile.TemporaryDirectory() as tmp:
      model, out = os.path.join(tmp, "net.onnx"), os.path.join(tmp, "out")
      small_net(model)
      r = export("--onnx", model, "--target", "cpu-x86_64", "--out", out, "--reference")  # the default: auto
      self.assertEqual(r.returncode, 0, r.stderr[-2000:])
      self.assertIn("winograd: conv 'c2' (64→64 channels, 56x56) as F(4x4,3x3)", r.stderr)
      self.assertNotIn("winograd: conv 'c1'", r.stderr)  # 8 input channels: below the rule
      with open(os.path.join(out, "manifest.json")) as f:
        m = json.load(f)
      self.assertEqual(m["producer"]["flags"]["WINOGRAD"], f"auto-r{winograd.RULE_VERSION}:c2")
      labels = {b["label"] for b in m["buffers"]}
      self.assertIn("onnx:winograd(c2).U", labels)  # the folded weights are the bundle's weight...
      self.assertNotIn("onnx:w2", labels)  # ...and the untransformed ones are not in it
      self.assertTrue(any(x.startswith("onnx:w1") for x in labels), labels)  # c1: direct (channel-last, prepacked)
      c = check(out, model)
      self.assertEqual(c.returncode, 0, c.stdout[-2000:] + c.stderr[-2000:])
      self.assertIn("PASS", c.stdout)
      self._gemm_uses_ymm(os.path.join(out, "blobs"))

  def _gemm_uses_ymm(self, blobs: str):
    """The GEMM (the kernel reading U, 36*64*64 floats) is laid out channel-last and gets the kernel option rule:
    its object code multiplies with full ymm vectors on the default x86-64-v3 baseline (llvm-objdump-19, an
    independent disassembler; the tiles-innermost layout had xmm FMAs only, docs/cpu-kernels.md section 6)."""
    try:
      subprocess.run(["llvm-objdump-19", "--version"], capture_output=True, check=True)
    except (OSError, subprocess.CalledProcessError):
      skip_or_fail(self, "no llvm-objdump-19 (Debian package llvm-19)")
    gemm = []
    for f in sorted(os.listdir(blobs)):
      if f.endswith(".src"):
        with open(os.path.join(blobs, f)) as src:
          if re.search(r"restrict data\d+_147456\b", src.read()):
            gemm.append(f)
    self.assertEqual(len(gemm), 1, gemm)
    asm = subprocess.run(["llvm-objdump-19", "-d", os.path.join(blobs, gemm[0][: -len(".src")] + ".bin")], capture_output=True, text=True)
    fmas = [ln for ln in asm.stdout.splitlines() if "vfmadd" in ln or "vfnmadd" in ln]
    ymm = [ln for ln in fmas if "ymm" in ln]
    self.assertGreaterEqual(len(ymm), 8, fmas[:8])
    self.assertEqual(len(fmas), len(ymm), [ln for ln in fmas if "ymm" not in ln][:4])


# run by TinygradPass in a child (tinygrad reads its environment at import): prints one JSON line
_CHILD = r"""
import json, os, sys
import numpy as np
from tinygrad.nn.onnx import OnnxRunner
from mrt import winograd
from tests.test_winograd import conv_model
out, logs = {}, []
path = sys.argv[1]
conv_model(path, 40, 36, 13, 11, [1, 0, 2, 1])
winograd.configure("off", "cpu-x86_64", logs.append)
r = OnnxRunner(path)
before = r.onnx_ops
out["off_unchanged"] = winograd.install(r, path).onnx_ops is before
winograd.configure("on", "cpu-x86_64", logs.append)
w = winograd._initializers(path)["w"]
b = winograd._initializers(path)["b"]
opts = {"pads": [1, 0, 2, 1]}
err, ok = winograd.numerics_error(w, b, (1, 40, 13, 11), opts, (1, 0, 2, 1))
out["err"], out["ok"] = err, ok
winograd.TOL = err / 10  # a tolerance this conv misses: the rewrite must be refused, and said so
why = winograd._decide(("y", (1, 40, 13, 11)), "y", w, b, (1, 40, 13, 11), opts, (1, 0, 2, 1))
out["why"], out["logs"], out["flags"] = why, logs, winograd.producer_flags()
print(json.dumps(out))
"""


def conv_model(path: str, cin: int, cout: int, h: int, w: int, pads):
  from onnx import TensorProto, helper, save

  node, inits = _conv("y", "x", "w", "b", cout, cin, 1, pads, np.random.default_rng(3))
  x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, cin, h, w])
  graph = helper.make_graph([node], "conv", [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
  save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)


class TinygradPass(unittest.TestCase):
  def test_off_check_and_refusal(self):
    if not _have_onnx():
      skip_or_fail(self, "onnx is not installed (run with the exporter venv's python)")
    with tempfile.TemporaryDirectory() as tmp:
      env = {**WITH_EXPORTER, "DEV": "CPU"}
      r = subprocess.run([PY, "-c", _CHILD, os.path.join(tmp, "c.onnx")], capture_output=True, text=True, timeout=300, env=env)
      self.assertEqual(r.returncode, 0, r.stderr[-2000:])
      res = json.loads(r.stdout.strip().splitlines()[-1])
    self.assertTrue(res["off_unchanged"])
    # padded (1, 0, 2, 1), 13x11 input: a 14x9 output, neither a multiple of 4, within the bundle's tolerance
    self.assertTrue(res["ok"], res)
    self.assertLess(res["err"], 1e-4)
    self.assertGreater(res["err"], 0.0)  # float32 Winograd is not bit-exact: a zero would mean nothing was compared
    self.assertIn("misses onnxruntime", res["why"])
    self.assertTrue(any("conv 'y' keeps the direct form" in m for m in res["logs"]), res["logs"])
    self.assertEqual(res["flags"], {})


if __name__ == "__main__":
  unittest.main()
