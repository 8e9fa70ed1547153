"""The modelrt wheel from Python (unittest; run by tests/tests/api/python_api.rs with the wheel installed).

The Rust test prepares the expected values with tools independent of this API and passes them in environment variables:
  MRT_DEMO_BUNDLE  a bundle with an embedded onnxruntime reference (targets/assets/demo-x86_64.mrt)
  MRT_DEMO_DIR     input{i}.npy (its reference inputs), cli{i}.npy (`modelrt run --device cpu` outputs),
                   ref{i}.npy (the embedded onnxruntime outputs), tol.txt ("atol rtol")
  MRT_STATE_BUNDLE a stateful bundle (targets/python/tests/stateful.py), input `x`, output `y`, state `acc`
  MRT_STATE_DIR    x.npy (N steps stacked), y.npy (`modelrt run --steps N` outputs), acc.npy (`--dump-state`)
  MRT_EMULATED     a file of lines DEVICE<TAB>BUNDLE<TAB>DIR: the stateful program compiled for an emulated device, DIR as
                   MRT_STATE_DIR but from `modelrt run --device DEVICE` (MODELRT_AMD_FIRMWARE_DIR set for usb-emu)
  MRT_DSP_BUNDLE   a small stateless hexagon-v65 bundle with an embedded onnxruntime reference
  MRT_DSP_DIR      as MRT_DEMO_DIR, with cli{i}.npy from `modelrt run --device dsp-emu`
  MRT_SIGNED_DIR   keys/modelrt-signing.pub, signed.mrt (the demo signed with it), foreign.mrt (signed with another
                   key), changed.mrt (signed, then a weight byte changed and the CRCs resealed), unsigned.mrt
  MRT_PIPELINE_BUNDLE  the modeld pipeline bundle (xtask/models/modeld_pipeline.py, CPU)
  MRT_PIPELINE_DIR     NAME.npy per input (frames stacked), cli/OUTPUT.npy (`modelrt run --steps N` outputs, stacked),
                       state/LABEL.npy (`--dump-state` after the last frame; LABEL with characters other than letters,
                       digits and -_. replaced by _)
  MRT_SLICED_BUNDLE  a copy bundle x -> y (6 float32) whose output carries the slices head 0:2, tail 2:6 and the
                     checkpoint "test-checkpoint/1" (format 2.4; tests/src/multi_fixture.rs `sliced_copy`)
  MRT_MULTI_DIR    multi.mrt (a multi-device container: roles a and b, copy-only CPU parts x -> y -> z), x.npy (frames
                   stacked), z.npy (`modelrt run --device cpu,cpu --steps N` outputs)
"""

import os
import re
import sys
import threading
import unittest
from pathlib import Path

import numpy as np

import modelrt

DEMO = Path(os.environ["MRT_DEMO_BUNDLE"])
DEMO_DIR = Path(os.environ["MRT_DEMO_DIR"])
STATE = Path(os.environ["MRT_STATE_BUNDLE"])
STATE_DIR = Path(os.environ["MRT_STATE_DIR"])


def rss_bytes() -> int:
  """Resident set size now (/proc/self/statm, in pages)."""
  return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def aligned(a: np.ndarray, offset: int) -> np.ndarray:
  """A copy of `a` whose data starts `offset` bytes past a 64-byte boundary."""
  buf = np.zeros(a.nbytes + 128, np.uint8)
  o = (-buf.ctypes.data) % 64 + offset
  out = buf[o : o + a.nbytes].view(a.dtype).reshape(a.shape)
  out[...] = a
  return out


def demo_feeds(m: modelrt.Model) -> dict:
  return {t.name: np.load(DEMO_DIR / f"input{i}.npy") for i, t in enumerate(m.inputs)}


class Cpu(unittest.TestCase):
  @classmethod
  def setUpClass(cls):
    cls.m = modelrt.load(DEMO, device="cpu")

  def test_tensor_infos_describe_the_bundle(self):
    for i, t in enumerate(self.m.inputs):
      a = np.load(DEMO_DIR / f"input{i}.npy")
      self.assertEqual((t.shape, t.dtype), (a.shape, a.dtype), t.name)
      self.assertIsInstance(t.shape, tuple)
      self.assertIsInstance(t.dtype, np.dtype)
    for i, t in enumerate(self.m.outputs):
      a = np.load(DEMO_DIR / f"cli{i}.npy")
      self.assertEqual((t.shape, t.dtype), (a.shape, a.dtype), t.name)
    self.assertEqual(self.m.states, [])
    info = self.m.info()
    self.assertEqual(info["device_choice"], "cpu")
    self.assertFalse(info["emulated"])
    self.assertEqual([d["name"] for d in info["inputs"]], [t.name for t in self.m.inputs])
    self.assertIn("cpu", self.m.device.lower())

  def test_outputs_equal_the_cli_bit_for_bit_and_onnxruntime_within_tolerance(self):
    got = self.m.run(demo_feeds(self.m))
    self.assertEqual(list(got), [t.name for t in self.m.outputs])
    atol, rtol = (float(x) for x in (DEMO_DIR / "tol.txt").read_text().split())
    for i, t in enumerate(self.m.outputs):
      cli = np.load(DEMO_DIR / f"cli{i}.npy")
      self.assertEqual(got[t.name].tobytes(), cli.tobytes(), f"{t.name} differs from `modelrt run`")
      ref = np.load(DEMO_DIR / f"ref{i}.npy")
      np.testing.assert_allclose(got[t.name].astype(np.float64), ref.astype(np.float64), atol=atol, rtol=rtol, err_msg=t.name)
    timing = self.m.last_timing
    self.assertEqual(set(timing), {"step", "enqueue", "device", "upload", "download"})
    self.assertGreater(timing["step"], 0.0)

  def test_preallocated_outputs_are_written_in_place(self):
    outs = {t.name: np.full(t.shape, 7, t.dtype) for t in self.m.outputs}
    got = self.m.run(demo_feeds(self.m), outputs=outs)
    for i, t in enumerate(self.m.outputs):
      self.assertIs(got[t.name], outs[t.name])
      self.assertEqual(outs[t.name].tobytes(), np.load(DEMO_DIR / f"cli{i}.npy").tobytes())

  def test_inputs_are_read_in_place_when_they_can_be_and_copied_with_a_reason_otherwise(self):
    t = self.m.inputs[0]
    a = np.load(DEMO_DIR / "input0.npy")
    want = np.load(DEMO_DIR / "cli0.npy").tobytes()
    wide = np.zeros((*a.shape[:-1], a.shape[-1] * 2), a.dtype)
    wide[..., ::2] = a
    frozen = aligned(a, 0)
    frozen.flags.writeable = False
    cases = [
      (aligned(a, 0), "zero-copy"),
      (aligned(a, 4), "copied: the buffer is not aligned like the arena range (64-byte alignment needed)"),
      (frozen, "copied: read-only"),
      (wide[..., ::2], "copied: not C-contiguous"),
    ]
    for x, how in cases:
      got = self.m.run({t.name: x})
      self.assertEqual(self.m.last_input_paths, {t.name: how})
      self.assertEqual(got[self.m.outputs[0].name].tobytes(), want, how)

  def test_verify_passes_against_the_embedded_reference(self):
    r = self.m.verify()
    self.assertEqual(list(r), [t.name for t in self.m.outputs])
    self.assertTrue(all(v["ok"] and v["mismatches"] == 0 and v["count"] > 0 for v in r.values()), r)

  def test_bad_feeds_raise_the_right_exception_naming_the_input(self):
    feeds = demo_feeds(self.m)
    t = self.m.inputs[0]
    good = feeds[t.name]
    cases = [
      ({k: v for k, v in feeds.items() if k != t.name}, ValueError, f"missing input '{t.name}'"),
      ({**feeds, "nope": good}, ValueError, "unknown input 'nope'"),
      ({**feeds, 3: good}, TypeError, "input names must be str"),
      ({**feeds, t.name: good.astype(np.float64)}, TypeError, f"input '{t.name}' has dtype float64; expected {t.dtype}"),
      ({**feeds, t.name: good.reshape(-1)}, ValueError, f"input '{t.name}' has shape ({good.size},); expected"),
      ({**feeds, t.name: good.tolist()}, TypeError, f"input '{t.name}' must be a numpy.ndarray"),
    ]
    for bad, exc, msg in cases:
      with self.assertRaises(exc) as cm:
        self.m.run(bad)
      self.assertIn(msg, str(cm.exception))
    with self.assertRaises(TypeError):
      self.m.run([good])
    # An array instead of the dict: the error says what to pass.
    with self.assertRaises(TypeError) as cm:
      self.m.run(good)
    self.assertIn(f"inputs must be a dict mapping each input name to a numpy array, e.g. {{'{t.name}': array", str(cm.exception))
    self.assertIn("got ndarray", str(cm.exception))

  def test_bad_outputs_raise_naming_the_output(self):
    feeds = demo_feeds(self.m)
    o = self.m.outputs[0]
    outs = {t.name: np.empty(t.shape, t.dtype) for t in self.m.outputs}
    ro = np.empty(o.shape, o.dtype)
    ro.flags.writeable = False
    strided = np.empty((*o.shape[:-1], o.shape[-1] * 2), o.dtype)[..., ::2]
    cases = [
      ({k: v for k, v in outs.items() if k != o.name}, ValueError, f"missing output '{o.name}'"),
      ({**outs, o.name: np.empty(o.shape, np.float64)}, TypeError, f"output '{o.name}' has dtype float64"),
      ({**outs, o.name: np.empty((1, *o.shape), o.dtype)}, ValueError, f"output '{o.name}' has shape"),
      ({**outs, o.name: strided}, ValueError, f"output '{o.name}' is not C-contiguous"),
      ({**outs, o.name: ro}, ValueError, f"output '{o.name}' is read-only"),
    ]
    for bad, exc, msg in cases:
      with self.assertRaises(exc) as cm:
        self.m.run(feeds, outputs=bad)
      self.assertIn(msg, str(cm.exception))


class Stateful(unittest.TestCase):
  def test_steps_equal_modelrt_run_steps_bit_for_bit(self):
    m = modelrt.load(STATE, device="cpu", threads=1)
    xs, want = np.load(STATE_DIR / "x.npy"), np.load(STATE_DIR / "y.npy")
    self.assertEqual([s.name for s in m.states], ["state:acc"])
    for _ in range(2):  # the second pass after reset_state repeats the first exactly
      for i in range(len(xs)):
        y = m.run({"x": xs[i]})["y"]
        self.assertEqual(y.tobytes(), want[i].tobytes(), f"step {i}")
      self.assertEqual(m.read_state("state:acc").tobytes(), np.load(STATE_DIR / "acc.npy").tobytes())
      m.reset_state()
    self.assertFalse(np.array_equal(m.run({"x": xs[1]})["y"], want[1]), "state carries over: step 0 with step 1's input differs")

  def test_refcounts_and_rss_stay_flat_over_10000_runs(self):
    m = modelrt.load(STATE, device="cpu", threads=1)
    feeds = {"x": np.load(STATE_DIR / "x.npy")[0]}
    outs = {"y": np.empty((1, 8), np.float32)}
    arrays = (feeds["x"], outs["y"])
    refs = [sys.getrefcount(a) for a in arrays]
    for _ in range(500):
      m.run(feeds)
      m.run(feeds, outputs=outs)
    base = rss_bytes()
    for _ in range(5000):
      m.run(feeds)
      m.run(feeds, outputs=outs)
    grown = rss_bytes() - base
    self.assertEqual([sys.getrefcount(a) for a in arrays], refs)
    self.assertLess(grown, 1 << 20, f"RSS grew {grown} bytes over 10000 runs")

  def test_state_and_load_errors(self):
    m = modelrt.load(STATE, device="cpu")
    with self.assertRaises(KeyError) as cm:
      m.read_state("acc")
    self.assertIn("state:acc", str(cm.exception))
    with self.assertRaises(modelrt.Error) as cm:
      m.verify()
    self.assertIn("no embedded reference", str(cm.exception))
    self.assertTrue(issubclass(modelrt.Error, RuntimeError))
    with self.assertRaises(ValueError) as cm:
      modelrt.load(STATE, device="gpu")
    self.assertIn('unknown device "gpu"', str(cm.exception))
    # The errors speak Python: device=None, not NULL or --device.
    self.assertIn("(or device=None for auto)", str(cm.exception))
    self.assertNotIn("NULL", str(cm.exception))
    # device=None is auto, threads=0 automatic, as `--threads 0` on the CLI.
    self.assertEqual(modelrt.load(STATE, device=None).info()["device_choice"], "auto")
    self.assertEqual(modelrt.load(STATE, device="cpu", threads=0).device, modelrt.load(STATE, device="cpu").device)
    with self.assertRaises(FileNotFoundError):
      modelrt.load(STATE_DIR / "missing.mrt")
    with self.assertRaises(modelrt.Error) as cm:
      modelrt.load(STATE_DIR / "x.npy")
    self.assertIn("x.npy", str(cm.exception))

  def test_a_trust_store_loads_signed_bundles_and_refuses_the_rest(self):
    signed = Path(os.environ["MRT_SIGNED_DIR"])
    keys = signed / "keys"
    for store in [[keys], [keys / "modelrt-signing.pub"], [str(keys)]]:
      m = modelrt.load(signed / "signed.mrt", device="cpu", trusted_keys=store)
      self.assertEqual(m.verify().keys(), modelrt.load(DEMO, device="cpu").verify().keys())
    for name, why in [
      ("unsigned.mrt", "the bundle is not signed"),
      ("foreign.mrt", "the bundle is signed by a key that is not trusted"),
      ("changed.mrt", "the signature does not match the bundle's bytes"),
    ]:
      with self.assertRaises(modelrt.Error) as cm:
        modelrt.load(signed / name, device="cpu", trusted_keys=[keys])
      self.assertIn(f"bundle refused by the trust store: {why}", str(cm.exception))
      self.assertNotIn("\n", str(cm.exception))
    with self.assertRaises(ValueError) as cm:
      modelrt.load(signed / "signed.mrt", trusted_keys=[signed / "unsigned.mrt"])
    self.assertIn("not a modelrt public key file", str(cm.exception))
    with self.assertRaises(ValueError) as cm:
      modelrt.load(signed / "signed.mrt", trusted_keys=[keys / "modelrt-signing.key"])
    self.assertIn("not a modelrt public key file", str(cm.exception))
    # No trust store: unsigned bundles load as before.
    modelrt.load(signed / "unsigned.mrt", device="cpu")

  def test_a_model_refuses_use_from_another_thread_with_modelrt_error(self):
    m = modelrt.load(STATE, device="cpu")
    x = np.zeros((1, 8), np.float32)
    err = []

    def use():
      for call in (lambda: m.run({"x": x}), m.reset_state, lambda: m.read_state("state:acc"), m.verify):
        try:
          call()
        except BaseException as e:  # any type: which one is what is checked
          err.append((type(e), str(e)))  # not `e`: its traceback would keep this frame (and `own`) alive
      own = modelrt.load(STATE, device="cpu")  # a Model loaded in this thread works here
      err.append(own.run({"x": x})["y"])
      del own  # released on its own thread

    t = threading.Thread(target=use)
    t.start()
    t.join()
    self.assertEqual(len(err), 5)
    for ty, msg in err[:4]:
      self.assertIs(ty, modelrt.Error, msg)
      self.assertIn("belongs to the thread that loaded it", msg)
    np.testing.assert_array_equal(err[4], m.run({"x": x})["y"], "the owner thread still runs it")
    self.assertEqual([t.name for t in m.inputs], ["x"])


class NoAllocation(unittest.TestCase):
  def test_run_with_preallocated_outputs_allocates_nothing_in_rust(self):
    # modelrt._rust_allocations() counts every allocation through the extension's global allocator (Rust code:
    # the runtime, its CPU worker threads, PyO3, rust-numpy); Python's and numpy's own objects are not counted.
    before = modelrt._rust_allocations()
    m = modelrt.load(DEMO, device="cpu")
    self.assertGreater(modelrt._rust_allocations(), before, "the counter counts (loading allocates)")
    feeds = demo_feeds(m)
    lent = {t.name: aligned(a, 0) for t, a in zip(m.inputs, feeds.values())}
    outs = {t.name: np.empty(t.shape, t.dtype) for t in m.outputs}
    for f in (feeds, lent):
      m.run(f, outputs=outs)  # warm-up: first-run set-up may allocate
      before = modelrt._rust_allocations()
      for _ in range(1000):
        m.run(f, outputs=outs)
      self.assertEqual(modelrt._rust_allocations() - before, 0, "Rust allocations in 1000 runs")
    self.assertIn("zero-copy", m.last_input_paths.values())
    for i, t in enumerate(m.outputs):
      self.assertEqual(outs[t.name].tobytes(), np.load(DEMO_DIR / f"cli{i}.npy").tobytes())


def plain_run(m: modelrt.Model, x: np.ndarray) -> bytes:
  """The demo model's output for input `x`, from a plain C-contiguous copy."""
  t, o = m.inputs[0], m.outputs[0]
  return m.run({t.name: np.array(x, dtype=t.dtype, order="C")})[o.name].tobytes()


class Boundary(unittest.TestCase):
  """What a caller hands to run cannot make the extension read or write memory it was not given."""

  @classmethod
  def setUpClass(cls):
    cls.m = modelrt.load(DEMO, device="cpu")
    cls.t, cls.o = cls.m.inputs[0], cls.m.outputs[0]
    cls.x = np.random.default_rng(37).standard_normal(cls.t.shape).astype(cls.t.dtype)
    cls.want = plain_run(cls.m, cls.x)

  def strided(self, x: np.ndarray, cls=np.ndarray) -> np.ndarray:
    wide = np.zeros((*x.shape[:-1], x.shape[-1] * 2), x.dtype)
    wide[..., ::2] = x
    return wide.view(cls)[..., ::2]

  def test_a_subclass_copy_never_decides_what_run_reads(self):
    calls = []

    class Evil(np.ndarray):
      def copy(self, order="C"):  # a 1-element "copy" made run read heap bytes past it
        calls.append(order)
        return np.zeros(1, self.dtype)

    evil = self.strided(self.x, Evil)
    self.assertIsInstance(evil, Evil)
    self.assertFalse(evil.flags.c_contiguous)
    got = self.m.run({self.t.name: evil})[self.o.name].tobytes()
    self.assertEqual(calls, [], "run called the subclass's copy()")
    self.assertEqual(got, self.want)
    self.assertEqual(self.m.last_input_paths, {self.t.name: "copied: not C-contiguous"})

  def test_a_callback_cannot_resize_an_output_after_it_was_checked(self):
    out = np.empty(self.o.shape, self.o.dtype)

    class Resizer(np.ndarray):
      def copy(self, order="C"):  # ran after the output's range was recorded: an out-of-bounds write
        out.resize(1, refcheck=False)
        return np.array(np.asarray(self), order="C")

    x = self.strided(self.x, Resizer)
    try:
      self.m.run({self.t.name: x}, outputs={self.o.name: out})
    except ValueError as e:
      self.assertIn(self.o.name, str(e))
    self.assertEqual(out.shape, self.o.shape, "the output was resized during run")
    self.assertEqual(out.tobytes(), self.want)

  def test_another_thread_cannot_resize_lent_arrays_while_the_gil_is_released(self):
    import time

    x = self.x.copy()  # owns its data, so numpy would reallocate it
    out = np.empty(self.o.shape, self.o.dtype)
    shapes = {id(x): x.shape, id(out): out.shape}
    stop, refused, resized = threading.Event(), [0], [0]

    def resizer():
      while not stop.is_set():
        for a in (x, out):
          try:
            a.resize(a.size * 2, refcheck=False)
          except ValueError as e:
            self.assertIn("referenced", str(e))
            refused[0] += 1
          else:  # not inside a run: put it back
            resized[0] += 1
            a.resize(shapes[id(a)], refcheck=False)
        time.sleep(0)  # let the main thread in, so that its runs meet these attempts

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    th = threading.Thread(target=resizer)
    th.start()
    ok = runs = 0
    try:
      while runs < 5000 and not (runs >= 200 and refused[0] and ok):
        runs += 1
        try:
          self.m.run({self.t.name: x}, outputs={self.o.name: out})
        except ValueError:
          pass  # caught between a resize and its undo: refused, nothing read
        else:
          ok += 1
          self.assertEqual(out.tobytes(), self.want)
    finally:
      stop.set()
      th.join()
      sys.setswitchinterval(interval)
    self.assertGreater(refused[0], 0, f"no resize was refused during {runs} runs ({resized[0]} succeeded)")
    self.assertGreater(ok, 0)

  def test_load_without_mmap_reads_the_file_and_survives_its_truncation(self):
    import shutil
    import tempfile

    self.assertTrue(self.m.info()["mapped"])
    with tempfile.TemporaryDirectory() as d:
      path = Path(d) / "demo.mrt"
      shutil.copyfile(DEMO, path)
      m = modelrt.load(path, device="cpu", mmap=False)
      self.assertFalse(m.info()["mapped"])
      with open(path, "r+b") as f:
        f.truncate(0)  # a mapped model would die of SIGBUS touching its weights now
      got = m.run({self.t.name: self.x})[self.o.name].tobytes()
      self.assertEqual(got, self.want)

  def test_odd_arrays_are_read_or_refused_never_misread(self):
    """A seeded randomized property test (the coverage-guided search is targets/python/fuzz/fuzz_api.py): every
    variant of an input or output array is either used exactly as numpy sees it or refused with TypeError or
    ValueError; a run never reads or writes bytes other than the array's own."""
    rng = np.random.default_rng(2037)
    t, o = self.t, self.o

    class Sub(np.ndarray):
      pass

    class Lying(np.ndarray):
      def copy(self, order="C"):
        return np.zeros(1, self.dtype)

      def __array__(self, *a, **k):
        return np.zeros(1, np.float32)

    def variants(x: np.ndarray):
      yield "c", x.copy(), True
      yield "fortran", np.asfortranarray(x), True
      yield "strided", self.strided(x), True
      yield "reversed", x[..., ::-1].copy()[..., ::-1], True
      yield "subclass", x.copy().view(Sub), True
      yield "lying-subclass", self.strided(x, Lying), True
      yield "lying-c", x.copy().view(Lying), True
      ro = x.copy()
      ro.flags.writeable = False
      yield "read-only", ro, True
      yield "unaligned", aligned(x, int(rng.integers(1, 64))), True
      yield "bytearray", np.frombuffer(bytearray(x.tobytes()), x.dtype).reshape(x.shape), True
      yield "float64", x.astype(np.float64), False
      yield "int32", x.astype(np.int32), False
      yield "byteswapped", x.astype(x.dtype.newbyteorder()), False
      yield "flat", x.reshape(-1), False
      yield "extra-dim", x[None], False
      yield "zero-size", np.zeros((0, *x.shape[1:]), x.dtype), False
      yield "zero-size-dim", np.zeros((*x.shape[:-1], 0), x.dtype), False
      yield "scalar", np.float32(1.0), False
      yield "0-d", np.array(1.0, x.dtype), False
      yield "half-view", x[:, : x.shape[1] // 2], False
      yield "list", [1.0] * 4, False

    for i in range(60):
      x = rng.standard_normal(t.shape).astype(t.dtype) * float(rng.integers(1, 100))
      want = plain_run(self.m, x)
      for name, v, valid in variants(x):
        with self.subTest(step=i, variant=name):
          if valid:
            got = self.m.run({t.name: v})[o.name].tobytes()
            self.assertEqual(got, want)
          else:
            with self.assertRaises((TypeError, ValueError)):
              self.m.run({t.name: v})
      # Outputs: only a C-contiguous writeable array of the right dtype and shape is written.
      y = np.zeros(o.shape, o.dtype)
      out_cases = [
        ("c", np.empty(o.shape, o.dtype), True),
        ("subclass", np.empty(o.shape, o.dtype).view(Sub), True),
        ("lying", np.empty(o.shape, o.dtype).view(Lying), True),
        ("view", np.empty((2, *o.shape), o.dtype)[1], True),
        ("strided", self.strided(y), False),
        ("reversed", np.empty(o.shape, o.dtype)[..., ::-1], False),
        ("zero-size", np.empty((0,), o.dtype), False),
        ("float16", np.empty(o.shape, np.float16), False),
        ("flat", np.empty(int(np.prod(o.shape)), o.dtype), False),
      ]
      for name, v, valid in out_cases[int(rng.integers(0, 3)) :]:
        with self.subTest(step=i, output=name):
          if valid:
            self.m.run({t.name: x}, outputs={o.name: v})
            self.assertEqual(np.ndarray.tobytes(v), want)
          else:
            with self.assertRaises((TypeError, ValueError)):
              self.m.run({t.name: x}, outputs={o.name: v})


class Emulated(unittest.TestCase):
  def test_emulated_devices_step_like_the_cli(self):
    lines = Path(os.environ["MRT_EMULATED"]).read_text().splitlines()
    self.assertTrue(lines)
    cpu = np.load(STATE_DIR / "y.npy")
    for line in lines:
      device, bundle, d = line.split("\t")
      with self.subTest(device=device):
        m = modelrt.load(bundle, device=device, firmware_dir=os.environ["MODELRT_AMD_FIRMWARE_DIR"])
        self.assertTrue(m.info()["emulated"])
        self.assertEqual(m.info()["device_choice"], device)
        xs, want = np.load(Path(d) / "x.npy"), np.load(Path(d) / "y.npy")
        got = np.stack([m.run({"x": x})["y"] for x in xs])
        self.assertEqual(got.tobytes(), want.tobytes(), f"{device} differs from `modelrt run --device {device}`")
        if device == "usb-emu":
          # A wrong firmware_dir is named as the Python parameter, not the CLI flag.
          with self.assertRaises(modelrt.Error) as cm:
            modelrt.load(bundle, device=device, firmware_dir="/no-such-firmware")
          self.assertIn('firmware_dir="/no-such-firmware" (no such directory)', str(cm.exception))
          self.assertNotIn("--firmware-dir", str(cm.exception))
        np.testing.assert_allclose(got, cpu, atol=1e-5, rtol=1e-5, err_msg=f"{device} vs cpu")
        self.assertEqual(m.read_state("state:acc").tobytes(), np.load(Path(d) / "acc.npy").tobytes())


class Dsp(unittest.TestCase):
  def test_dsp_emu_equals_the_cli_bit_for_bit_and_onnxruntime_within_tolerance(self):
    d = Path(os.environ["MRT_DSP_DIR"])
    m = modelrt.load(os.environ["MRT_DSP_BUNDLE"], device="dsp-emu")
    self.assertTrue(m.info()["emulated"])
    self.assertEqual(m.info()["device_choice"], "dsp-emu")
    got = m.run({t.name: np.load(d / f"input{i}.npy") for i, t in enumerate(m.inputs)})
    atol, rtol = (float(x) for x in (d / "tol.txt").read_text().split())
    for i, t in enumerate(m.outputs):
      self.assertEqual(got[t.name].tobytes(), np.load(d / f"cli{i}.npy").tobytes(), f"{t.name} differs from the CLI")
      ref = np.load(d / f"ref{i}.npy").astype(np.float64)
      np.testing.assert_allclose(got[t.name].astype(np.float64), ref, atol=atol, rtol=rtol, err_msg=t.name)


class Pipeline(unittest.TestCase):
  def test_modeld_pipeline_steps_frame_by_frame_like_modelrt_run_steps(self):
    d = Path(os.environ["MRT_PIPELINE_DIR"])
    m = modelrt.load(os.environ["MRT_PIPELINE_BUNDLE"], device="cpu")
    frames = {t.name: np.load(d / f"{t.name}.npy") for t in m.inputs}
    n = len(next(iter(frames.values())))
    self.assertGreaterEqual(n, 20)
    want = {t.name: np.load(d / "cli" / f"{t.name}.npy") for t in m.outputs}
    outs = {t.name: np.empty(t.shape, t.dtype) for t in m.outputs}
    for i in range(n):  # as modeld does: one call per frame, outputs into preallocated arrays
      m.run({k: v[i] for k, v in frames.items()}, outputs=outs)
      for k, a in outs.items():
        self.assertEqual(a.tobytes(), want[k][i].tobytes(), f"frame {i}: {k} differs from `modelrt run --steps`")
    self.assertTrue(m.states)
    for s in m.states:
      file = d / "state" / (re.sub(r"[^A-Za-z0-9_.-]", "_", s.name) + ".npy")
      self.assertEqual(m.read_state(s.name).tobytes(), np.load(file).tobytes(), f"state {s.name} after {n} frames")


class OutputSlices(unittest.TestCase):
  """Format 2.4's named output slices (`convert --metadata`), from a bundle the Rust side wrote by hand."""

  def test_slices_checkpoint_and_split_views(self):
    m = modelrt.load(os.environ["MRT_SLICED_BUNDLE"], device="cpu")
    self.assertEqual(m.output_slices, {"head": ("y", 0, 2), "tail": ("y", 2, 6)})
    self.assertEqual(m.checkpoint, "test-checkpoint/1")
    x = np.arange(6, dtype=np.float32) * 1.5 - 2.0
    out = m.run({"x": x})
    parts = m.split(out)
    self.assertEqual(sorted(parts), ["head", "tail"])
    np.testing.assert_array_equal(parts["head"], x[0:2])
    np.testing.assert_array_equal(parts["tail"], x[2:6])
    self.assertTrue(np.shares_memory(parts["tail"], out["y"]), "split returns views of the outputs")

  def test_a_bundle_without_slices_has_none(self):
    m = modelrt.load(DEMO, device="cpu")
    self.assertEqual(m.output_slices, {})
    self.assertIsNone(m.checkpoint)


class MultiDevice(unittest.TestCase):
  def test_a_device_list_loads_one_device_per_role_like_modelrt_run(self):
    d = Path(os.environ["MRT_MULTI_DIR"])
    m = modelrt.load(str(d / "multi.mrt"), device="cpu,cpu")
    self.assertEqual([t.name for t in m.inputs], ["x"])
    self.assertEqual([t.name for t in m.outputs], ["z"])
    x, want = np.load(d / "x.npy"), np.load(d / "z.npy")
    self.assertEqual(len(x), 3)
    for i in range(len(x)):
      z = m.run({"x": x[i]})["z"]
      self.assertEqual(z.tobytes(), want[i].tobytes(), f"frame {i}: z differs from `modelrt run --device cpu,cpu`")
      self.assertEqual(z.tobytes(), x[i].tobytes(), f"frame {i}: the copy-only parts carry x to z")

  def test_more_devices_than_roles_is_refused_naming_the_roles(self):
    d = Path(os.environ["MRT_MULTI_DIR"])
    with self.assertRaises(modelrt.Error) as cm:
      modelrt.load(str(d / "multi.mrt"), device="cpu,cpu,cpu")
    self.assertIn("3 devices given but this bundle has 2 device roles (a, b)", str(cm.exception))


if __name__ == "__main__":
  unittest.main()
