"""Crafted pickles against the restricted reader (mrt/safe_pickle.py) and `export.py --pickle`: every one is refused with
one `error:` line and no traceback, and nothing it names runs — each hostile payload would create a marker file if any
of its code were executed (a plain `pickle.loads` of it does create the marker, checked first, so the payloads are live).

Cases (docs/openpilot-pickles.md): inner pickles (a tinygrad runtime class whose `lib` is itself a pickle), `CPUProgram`, numpy's
reduce helpers, look-alike module names, huge bytearrays (by length argument and by a truncated length prefix),
cyclic containers, deep nesting, persistent ids; and the layout detection's one-line answer for an unknown layout.
"""

import contextlib
import os
import pickle
import struct
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
EXPORTER = os.path.dirname(HERE)
PY = sys.executable
sys.path.insert(0, EXPORTER)


def g(module: str, name: str) -> bytes:
  """Protocol-2 GLOBAL opcode."""
  return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def s(text: str) -> bytes:
  """BINUNICODE."""
  b = text.encode()
  return b"X" + struct.pack("<I", len(b)) + b


def system(marker: str) -> bytes:
  """`os.system("touch MARKER")` as opcodes (pushes its result)."""
  return g("os", "system") + s(f"touch {marker}") + b"\x85R"


def tinyjit_around(inner: bytes) -> bytes:
  """TinyJit(None, CapturedJit(INNER)) with allowed names around the payload."""
  return b"\x80\x02" + g("tinygrad.engine.jit", "TinyJit") + b"N" + g("tinygrad.engine.jit", "CapturedJit") + inner + b"\x85R\x86R."


def export(data: bytes, d: str) -> subprocess.CompletedProcess:
  path = os.path.join(d, "model.pkl")
  with open(path, "wb") as f:
    f.write(data)
  return subprocess.run([PY, os.path.join(EXPORTER, "export.py"), "--pickle", path, "--out", os.path.join(d, "m")], capture_output=True, text=True)


class Evil:
  """Pickles to `os.system("touch MARKER")` when loaded by a plain unpickler."""

  def __init__(self, marker):
    self.marker = marker

  def __reduce__(self):
    return (os.system, (f"touch {self.marker}",))


class Crafted(unittest.TestCase):
  def refused(self, build, live: bool = True) -> str:
    """Export the pickle `build(marker)`; assert one error line, no traceback, no marker; return the error line."""
    with tempfile.TemporaryDirectory() as d:
      marker = os.path.join(d, "ran")
      data = build(marker)
      if live:  # the payload really runs code when unpickled without restrictions
        with tempfile.TemporaryDirectory() as d2:
          m2 = os.path.join(d2, "ran")
          with contextlib.suppress(Exception):  # the payload may fail after it ran; only the marker matters
            pickle.loads(build(m2))
          self.assertTrue(os.path.exists(m2), "the crafted payload is not live")
      r = export(data, d)
      self.assertFalse(os.path.exists(marker), "code from the pickle ran")
      self.assertNotEqual(r.returncode, 0)
      self.assertNotIn("Traceback", r.stderr)
      errors = [ln for ln in r.stderr.splitlines() if ln.startswith("error:")]
      self.assertEqual(len(errors), 1, r.stderr)
      self.assertFalse(os.path.exists(os.path.join(d, "m", "manifest.json")), "a manifest was written")
      return errors[0]

  def test_inner_pickle_in_a_runtime_program(self):
    # tinygrad.runtime.ops_python.PythonProgram(name, lib) unpickles `lib` when constructed; here `lib` is a pickle
    # that runs os.system (checked live below), and an outer os.system call makes the whole payload live too.
    def build(marker):
      inner = pickle.dumps(Evil(marker), protocol=2)
      prog = g("tinygrad.runtime.ops_python", "PythonProgram") + s("E_1") + b"C" + bytes([len(inner)]) + inner + b"\x86R"
      return b"\x80\x02" + system(marker) + b"0" + tinyjit_around(prog)[2:]

    with tempfile.TemporaryDirectory() as d:
      m = os.path.join(d, "ran")
      pickle.loads(pickle.dumps(Evil(m), protocol=2))
      self.assertTrue(os.path.exists(m), "the inner pickle is not live")
    line = self.refused(build)
    self.assertRegex(line, r"^error: pickle references (posix|os)\.system, which the restricted reader does not allow")

  def test_inner_pickle_as_data_is_never_read(self):
    # A ProgramSpec whose `lib` holds a live pickle, as the one step of an exec-items jit_cache: the reader keeps the
    # bytes as bytes, the converter refuses the step, and the inner pickle never runs.
    def build(marker):
      inner = pickle.dumps(Evil(marker), protocol=2)
      spec = g("tinygrad.renderer", "ProgramSpec") + b")\x81}" + s("lib") + b"C" + bytes([len(inner)]) + inner + b"sb"
      return tinyjit_around_tuple([b"N", b"(" + spec + b"l", b"}", b"]", b"]", b"]"])

    line = self.refused(build, live=False)
    self.assertIn("step 0 is a tinygrad.renderer.ProgramSpec, not an ExecItem", line)

  def test_python_program_by_itself_is_refused_by_name(self):
    line = self.refused(lambda m: tinyjit_around(g("tinygrad.runtime.ops_python", "PythonProgram") + s("x") + b"\x85R"), live=False)
    self.assertIn("tinygrad.runtime.ops_python.PythonProgram", line)

  def test_cpu_program(self):
    line = self.refused(lambda m: tinyjit_around(g("tinygrad.runtime.ops_cpu", "CPUProgram") + s("E_1") + b"C\x01\xc3\x86R"), live=False)
    self.assertIn("tinygrad.runtime.ops_cpu.CPUProgram", line)

  def test_numpy_reduce_helpers(self):
    for mod, name in (("numpy.core.multiarray", "_reconstruct"), ("numpy", "frombuffer"), ("numpy", "load"), ("numpy.lib.npyio", "load")):
      line = self.refused(lambda m, mod=mod, name=name: tinyjit_around(g(mod, name) + s("x") + b"\x85R"), live=False)
      self.assertIn(f"{mod}.{name}", line)

  def test_look_alike_module_names(self):
    for mod in ("tinygrad.engine.jit ", "tinygrad_engine.jit", "tinygrad.engine.jitx", "tinygrad.engine.jit.os", "Tinygrad.engine.jit", "os"):
      data = b"\x80\x02" + g(mod, "TinyJit") + b"N\x85R."
      line = self.refused(lambda m, data=data: data, live=False)
      self.assertIn("which the restricted reader does not allow", line)
    # an allowed class name under a module it does not belong to
    line = self.refused(lambda m: b"\x80\x02" + g("tinygrad.engine.realize", "TinyJit") + b"N\x85R.", live=False)
    self.assertIn("tinygrad.engine.realize.TinyJit", line)

  def test_huge_bytearray_by_length(self):
    # bytearray(2**40): a 9-byte opcode that would allocate a terabyte
    data = tinyjit_around(g("builtins", "bytearray") + b"\x8a\x06\x00\x00\x00\x00\x00\x01\x85R")
    line = self.refused(lambda m: data, live=False)
    self.assertIn("bytearray", line)

  def test_huge_bytes_by_truncated_length_prefix(self):
    # BINBYTES8 claiming 2**40 bytes, followed by a few: refused before anything is allocated
    data = b"\x80\x04" + b"\x8e" + struct.pack("<Q", 1 << 40) + b"abc"
    line = self.refused(lambda m: data, live=False)
    self.assertIn("cannot read pickle", line)

  def test_cyclic_containers(self):
    # L = [L]; TinyJit(None, CapturedJit(L, L, {}, [], [], [])): the walkers stop, the exec-items reader refuses
    data = tinyjit_around_tuple([b"]q\x01h\x01a", b"h\x01", b"}", b"]", b"]", b"]"])
    line = self.refused(lambda m: data, live=False)
    self.assertIn("step 0 is a list, not an ExecItem", line)

  def test_cyclic_record_state(self):
    # a Tensor whose BUILD state holds the Tensor itself, returned by a CapturedJit: read without hanging, refused
    t = g("tinygrad.tensor", "Tensor") + b")\x81q\x02" + b"}" + s("uop") + b"h\x02sb"  # NEWOBJ, BINPUT 2, {uop: self}, BUILD
    data = tinyjit_around_tuple([t, b"]", b"}", b"]", b"]", b"]"])
    line = self.refused(lambda m: data, live=False)
    self.assertRegex(line, r"^error: ")

  def test_deep_nesting(self):
    data = b"\x80\x02" + b"(" * 100_000 + b"N" + b"t" * 100_000 + b"."
    line = self.refused(lambda m: data, live=False)
    self.assertIn("nests deeper", line)

  def test_persistent_id(self):
    data = b"\x80\x02" + s("x") + b"Q."
    line = self.refused(lambda m: data, live=False)
    self.assertIn("BINPERSID", line)

  def test_unknown_layout_names_the_closest(self):
    # a CapturedJit with 5 fields: no known layout; the line names the closest one
    data = tinyjit_around_tuple([b"N", b"]", b"}", b"]", b"]"])
    line = self.refused(lambda m: data, live=False)
    self.assertRegex(line, r"^error: unknown TinyJit layout; the closest known is the \S+ layout \(tinygrad")

  def test_metadata_pickle_is_not_a_tinyjit(self):
    data = pickle.dumps({"output_slices": {"plan": slice(0, 5, None)}}, protocol=4)
    line = self.refused(lambda m: data, live=False)
    self.assertIn("does not contain a tinygrad TinyJit", line)


def tinyjit_around_tuple(fields: list) -> bytes:
  """TinyJit(None, CapturedJit(*FIELDS)) (each field an opcode sequence pushing one value)."""
  return b"\x80\x02" + g("tinygrad.engine.jit", "TinyJit") + b"N" + g("tinygrad.engine.jit", "CapturedJit") + b"(" + b"".join(fields) + b"tR\x86R."


class ReaderBounds(unittest.TestCase):
  def test_bytearray_from_bytes_is_kept(self):
    from mrt import safe_pickle

    obj = safe_pickle.loads(pickle.dumps(bytearray(b"\x00\x01abc"), protocol=4))
    self.assertEqual(obj, bytearray(b"\x00\x01abc"))
    obj = safe_pickle.loads(pickle.dumps(bytearray(b"\xffxyz"), protocol=5))
    self.assertEqual(obj, bytearray(b"\xffxyz"))
    # protocol 2 spells a bytearray through _codecs.encode, which is not allowed
    with self.assertRaises(safe_pickle.SafePickleError):
      safe_pickle.loads(pickle.dumps(bytearray(b"\xffxyz"), protocol=2))

  def test_walk_stops_at_cycles(self):
    from mrt import safe_pickle

    lst = []
    lst.append(lst)
    d = {"a": lst}
    d["self"] = d
    self.assertEqual(list(safe_pickle.walk(d)), [])


if __name__ == "__main__":
  unittest.main()
