"""Layout detection and the program description on openpilot 0.11's seven real pickles (qcom/testdata/openpilot-0.11/)
and the launch-size rule for fractional global sizes (docs/hw/adreno-kgsl-pm4.md §18.1).

Expected values come from the data README (which tinygrad built each pickle, what its `lib` holds) and from the
kernels' own OpenCL C (`get_global_id(d); /* N */` comments give the global work per dimension), not from the code
under test.
"""

import gzip
import os
import re
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
EXPORTER = os.path.dirname(HERE)
DATA = os.path.join(EXPORTER, "..", "..", "qcom", "testdata", "openpilot-0.11")
sys.path.insert(0, EXPORTER)

from mrt import pickle_layout, pickle_program, qcom_cl, safe_pickle  # noqa: E402
from mrt.targets import ExportError  # noqa: E402

# pickle -> layout, from the README's tinygrad versions and the layout dates
EXPECTED = {
  "tg0.12-329_warp_1928x1208_tinygrad": "exec-items",
  "tg0.12-329_dm_warp_1928x1208_tinygrad": "exec-items",
  "tg0.12-455_warp_1928x1208_tinygrad": "exec-items",
  "tg0.12-455_dm_warp_1928x1208_tinygrad": "exec-items",
  "tg0.12-455_sunnypilot_warp_1928x1208_b2_tinygrad": "exec-items",
  "tg0.12-1606_dm_warp_1928x1208_tinygrad": "linear-index",
  "tg0.13.0-288_cpu_dm_warp_1928x1208_tinygrad": "linear-param",
}


def read(stem):
  with gzip.open(os.path.join(DATA, f"{stem}.pkl.gz")) as f:
    return safe_pickle.read(f.read())


def global_work(src: str) -> list[int]:
  g = [1, 1, 1]
  for d, n in re.findall(r"get_global_id\((\d)\);\s*/\*\s*(\d+)\s*\*/", src):
    g[int(d)] = int(n)
  return g


class RealLayouts(unittest.TestCase):
  def test_every_pickle_has_its_layout(self):
    for stem, want in EXPECTED.items():
      obj, names = read(stem)
      lay, _ = pickle_layout.detect(obj, names)
      self.assertEqual(lay.key, want, stem)

  def test_qcom_programs_and_their_launch_sizes(self):
    # every QCOM kernel launch: groups*local (or the stored thread count) is the source's global work
    for stem, want in EXPECTED.items():
      if "cpu" in stem:
        continue
      obj, names = read(stem)
      _, cj = pickle_layout.detect(obj, names)
      prog = pickle_program.from_exec_items(cj) if want == "exec-items" else pickle_program.from_linear(cj, want)[0]
      self.assertTrue(qcom_cl.is_qcom_cl(prog), stem)
      ks = [s.kernel for s in prog.steps if s.kernel is not None]
      self.assertTrue(ks)
      for k in ks:
        groups, local, threads = qcom_cl.launch_sizes(k, k.name)
        work = threads or [g * loc for g, loc in zip(groups, local)]
        self.assertEqual(work, global_work(k.src), f"{stem} {k.name}")
        # the README: v0.12.0-455's QCOM libs are OpenCL C source, the others Qualcomm binaries
        self.assertEqual(qcom_cl.source_only(k.lib), "455" in stem, f"{stem} {k.name}")

  def test_329_road_warp_has_fractional_launches(self):
    obj, names = read("tg0.12-329_warp_1928x1208_tinygrad")
    _, cj = pickle_layout.detect(obj, names)
    ks = [s.kernel for s in pickle_program.from_exec_items(cj).steps if s.kernel is not None]
    frac = [k for k in ks if any(isinstance(g, float) for g in k.global_size)]
    self.assertEqual([k.name for k in frac], ["E_10_32768_3"] * 2)
    self.assertEqual(qcom_cl.launch_sizes(frac[0], "x"), ([128, 3, 1], [256, 4, 1], [32768, 10, 1]))


class LaunchSizes(unittest.TestCase):
  def k(self, g, loc):
    return pickle_program.Kernel("k", "QCOM", None, None, g, loc, [], set(), False)

  def test_rule(self):
    self.assertEqual(qcom_cl.launch_sizes(self.k([120, 3.75, 1], [4, 256, 1]), "x"), ([120, 4, 1], [4, 256, 1], [480, 960, 1]))
    self.assertEqual(qcom_cl.launch_sizes(self.k([60, 60, 1], [8, 16, 1]), "x"), ([60, 60, 1], [8, 16, 1], None))
    self.assertEqual(qcom_cl.launch_sizes(self.k([4.0, 1, 1], [8, 1, 1]), "x"), ([4, 1, 1], [8, 1, 1], None))
    for g, loc in (([1 / 3, 1, 1], [2, 1, 1]), ([2.5, 1, 1], [3, 1, 1]), ([-1, 1, 1], [1, 1, 1]), ([1, 1, 1], [1.5, 1, 1])):
      with self.assertRaises(ExportError):
        qcom_cl.launch_sizes(self.k(g, loc), "x")

  def test_source_only(self):
    self.assertTrue(qcom_cl.source_only(b"__kernel void E_1(__global float* a) {}"))
    self.assertTrue(qcom_cl.source_only(None))
    self.assertFalse(qcom_cl.source_only(b"\x1e\x00\x00\x00\n\x00\x00\x00\x02\x00"))


if __name__ == "__main__":
  unittest.main()
