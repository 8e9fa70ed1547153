"""Tests for reading openpilot's real DEV=QCOM (Qualcomm CL) pickles without running their code: mrt/safe_pickle.py
(the restricted reader) and mrt/qcom_cl.py (schedule -> manifest), on the two real warp pickles in
qcom/testdata/qcom-cl/ and on hostile pickles.

Expected values come from outside the code under test: the data README (12 steps = 2 copies + 10 launches of 5
kernels; 1 copy + 1 launch of E_960_480_3), the kernels' binaries and OpenCL sources extracted next to the pickles
(byte equality), and each source's own comments giving the global work size per dimension (`/* 32768 */`).
"""

import gzip
import json
import os
import pickle
import re
import subprocess
import sys
import tempfile
import unittest
from typing import ClassVar

HERE = os.path.dirname(os.path.abspath(__file__))
EXPORTER = os.path.dirname(HERE)
DATA = os.path.join(EXPORTER, "..", "..", "qcom", "testdata", "qcom-cl")
PY = sys.executable
ROAD, DM = "v0.10.4_warp_1928x1208_tinygrad", "v0.10.4_dm_warp_1928x1208_tinygrad"


def export(pkl_bytes: bytes, out: str) -> subprocess.CompletedProcess:
  path = os.path.join(out, "model.pkl")
  with open(path, "wb") as f:
    f.write(pkl_bytes)
  return subprocess.run([PY, os.path.join(EXPORTER, "export.py"), "--pickle", path, "--out", os.path.join(out, "m")], capture_output=True, text=True)


def real(stem: str) -> bytes:
  with gzip.open(os.path.join(DATA, f"{stem}.pkl.gz")) as f:
    return f.read()


def global_work(src: str) -> list[int]:
  """Global work size per dimension from the source's `get_global_id(d); /* N */` comments (1 when absent)."""
  g = [1, 1, 1]
  for d, n in re.findall(r"get_global_id\((\d)\);\s*/\*\s*(\d+)\s*\*/", src):
    g[int(d)] = int(n)
  return g


class RealPickles(unittest.TestCase):
  manifests: ClassVar[dict] = {}

  @classmethod
  def setUpClass(cls):
    cls.tmp = tempfile.TemporaryDirectory()
    for stem in (ROAD, DM):
      out = os.path.join(cls.tmp.name, stem)
      os.makedirs(out)
      r = export(real(stem), out)
      assert r.returncode == 0, r.stderr
      with open(os.path.join(out, "m", "manifest.json")) as f:
        cls.manifests[stem] = (json.load(f), os.path.join(out, "m"))

  @classmethod
  def tearDownClass(cls):
    cls.tmp.cleanup()

  def check_schedule(self, stem: str, copies: int, launches: int, names: list[str]):
    m, d = self.manifests[stem]
    ops = m["ops"]
    self.assertEqual(sum(o["op"] == "copy" for o in ops), copies)
    self.assertEqual(sum(o["op"] == "kernel" for o in ops), launches)
    self.assertEqual(sorted(k["name"] for k in m["kernels"]), sorted(names))
    self.assertEqual(m["target"], {"kind": "adreno", "chip": 630, "image": False, "half": False})
    for k in m["kernels"]:
      self.assertEqual(k["meta"], {"qcomcl": {}})
      with open(os.path.join(d, k["binary"]), "rb") as f, open(os.path.join(DATA, f"{stem}.{k['name']}.adreno.bin"), "rb") as g:
        self.assertEqual(f.read(), g.read(), f"{k['name']}: binary kept byte for byte")
      with open(os.path.join(d, k["source"]), "rb") as f, open(os.path.join(DATA, f"{stem}.{k['name']}.cl"), "rb") as g:
        src = g.read()
        self.assertEqual(f.read(), src)
      for o in ops:
        if o["op"] == "kernel" and m["kernels"][o["kernel"]] is k:
          gw = [gs * ls for gs, ls in zip(o["global"], o["local"])]
          self.assertEqual(gw, global_work(src.decode()), f"{k['name']}: global x local matches the source's comments")
          self.assertEqual(len(o["args"]), len(k["params"]))
          for a in o["args"]:
            self.assertEqual(a["size"], m["buffers"][a["buffer"]]["size"])
    return m

  def test_road_warp(self):
    m = self.check_schedule(ROAD, 2, 10, ["E_10_32768_3", "E_128_64_4", "E_128_64_4n1", "E_131072_3", "E_256_128_4"])
    self.assertEqual([i["name"] for i in m["inputs"]], [f"input{k}" for k in range(6)])
    self.assertEqual(len(m["outputs"]), 4)
    # The two 3x3 float transforms are copied in from NPY inputs at the start of each camera's part.
    copies = [o for o in m["ops"] if o["op"] == "copy"]
    for c in copies:
      src = m["buffers"][c["src"]["buffer"]]
      self.assertEqual((src["kind"], src["size"], src["dtype"], c["size"]), ("input", 36, "float32", 36))
    self.assertEqual(m["ops"][0]["op"], "copy")
    # Buffers read but never written hold the pickle's bytes (two more 3x3 float constants).
    weights = [b for b in m["buffers"] if b["kind"] == "weight"]
    self.assertEqual([(b["size"], b["dtype"]) for b in weights], [(36, "float32")] * 2)

  def test_driver_warp(self):
    m = self.check_schedule(DM, 1, 1, ["E_960_480_3"])
    self.assertEqual([(i["shape"], i["dtype"]) for i in m["inputs"]], [([4804608], "uint8"), ([3, 3], "float32")])
    self.assertEqual([(o["shape"], o["dtype"]) for o in m["outputs"]], [([1, 1382400], "uint8")])
    self.assertEqual([(o["global"], o["local"]) for o in m["ops"] if o["op"] == "kernel"], [([15, 60, 1], [32, 16, 1])])

  def test_reader_imports_no_tinygrad(self):
    code = (
      "import gzip,sys; from mrt import safe_pickle, qcom_cl, pickle_layout, pickle_program; "
      f"o, names = safe_pickle.read(gzip.open({os.path.join(DATA, DM + '.pkl.gz')!r}).read()); "
      "lay, cj = pickle_layout.detect(o, names); assert lay.key == 'exec-items', lay; "
      "assert qcom_cl.is_qcom_cl(pickle_program.from_exec_items(cj)); "
      "assert not any(m.startswith('tinygrad') for m in sys.modules), 'tinygrad imported'; print('ok')"
    )
    r = subprocess.run([PY, "-c", code], capture_output=True, text=True, env={**os.environ, "PYTHONPATH": EXPORTER})
    self.assertEqual(r.stdout.strip(), "ok", r.stderr)


class Evil:
  """Pickles to `os.system("touch MARKER")` when loaded by a plain unpickler."""

  def __init__(self, marker):
    self.marker = marker

  def __reduce__(self):
    return (os.system, (f"touch {self.marker}",))


class Hostile(unittest.TestCase):
  def run_hostile(self, payload_fn):
    with tempfile.TemporaryDirectory() as d:
      marker = os.path.join(d, "pwned")
      r = export(payload_fn(marker), d)
      self.assertFalse(os.path.exists(marker), "the pickle's code ran")
      self.assertNotEqual(r.returncode, 0)
      lines = r.stderr.strip().splitlines()
      self.assertEqual(len([ln for ln in lines if ln.startswith("error:")]), 1, r.stderr)
      self.assertNotIn("Traceback", r.stderr)
      return lines[-1]

  def test_os_system_reduce_is_refused(self):
    line = self.run_hostile(lambda m: pickle.dumps(Evil(m), protocol=4))
    self.assertRegex(line, r"^error: pickle references (posix|os)\.system, which the restricted reader does not allow")

  def test_os_system_inside_allowed_classes_is_refused(self):
    # TinyJit(os.system("touch MARKER")) in protocol-2 opcodes: an allowed tinygrad name around the payload.
    def build(marker):
      cmd = f"touch {marker}".encode()
      return b"\x80\x02ctinygrad.engine.jit\nTinyJit\n" + b"cos\nsystem\nX" + len(cmd).to_bytes(4, "little") + cmd + b"\x85R" + b"\x85R."

    line = self.run_hostile(build)
    self.assertRegex(line, r"^error: pickle references os\.system, which the restricted reader does not allow")

  def test_truncated_real_pickle_is_one_line(self):
    with tempfile.TemporaryDirectory() as d:
      r = export(real(DM)[:100000], d)
      self.assertNotEqual(r.returncode, 0)
      self.assertNotIn("Traceback", r.stderr)
      self.assertTrue(r.stderr.strip().splitlines()[-1].startswith("error:"), r.stderr)


if __name__ == "__main__":
  unittest.main()
