"""A coverage-guided fuzzer (atheris, libFuzzer) for modelrt's Python API: `modelrt.load` and `Model.run`.

Each input picks one of five modes and builds, from the fuzzer's bytes, what a hostile or careless caller could pass:
  run     an input and an output array made by a chain of layout/dtype/shape changes (Fortran order, strided and
          negatively strided views, broadcast and zero-stride views, unaligned and bytearray/bytes-backed buffers,
          read-only, wrong dtypes and byte orders, wrong, zero-size and 0-d shapes, lists, scalars, object arrays),
          optionally viewed as an ndarray subclass whose Python-level methods lie (copy, __array__, shape, dtype,
          flags, ...) or, while the run is under way, resize other arrays, raise, or do both;
  arena   inputs and outputs as views of one uint8 arena at fuzzed offsets (disjoint, overlapping, adjacent);
  dict    feeds/outputs dicts with str-subclass keys whose __eq__ resizes arrays or raises, non-str keys, unknown,
          missing and duplicated entries, the same array for two roles;
  thread  a second Python thread resizing the lent arrays (refcheck=False) while the run has released the GIL;
  load    a bundle file of fuzzed bytes (garbage, the bundle truncated, with flipped or appended bytes, signed or not)
          loaded with odd arguments (device, threads, trusted_keys, mmap); a model read with mmap=False keeps running
          after its file is overwritten.

The property (an `AssertionError` is the fuzzer's crash): a call either raises TypeError or ValueError (load also
FileNotFoundError, OverflowError or modelrt.Error; never "internal error", the message of a caught panic) or
succeeds; an input numpy calls the right dtype and shape is read as numpy sees it (the output equals that of a
plain C-contiguous copy, run separately), an output is written only when it is a C-contiguous writeable array of
the right dtype and shape, and not one byte outside the outputs changes (arena mode); a bundle that is not the
signed one is refused by a trust store of its key. A crash of the process (SIGSEGV, abort) is a finding too.

Only the harness is coverage-instrumented (atheris.instrument_func): the extension is a Rust library without
SanitizerCoverage, so the feedback is the harness's branches, i.e. which kinds of argument were built.

Environment: MRT_FUZZ_BUNDLE (a CPU bundle with at least one input and output: run.sh gives core/fuzz's small seed
bundle on x86_64, targets/assets/demo-<arch>.mrt elsewhere),
MRT_FUZZ_SIGNED (that bundle signed), MRT_FUZZ_KEY (the signer's .pub) and MRT_FUZZ_OTHER_KEY (another key's .pub),
MRT_FUZZ_SCRATCH (a directory for bundle files). `targets/python/fuzz/run.sh` sets them up; docs/fuzzing.md.
"""

import os
import sys
import threading
import time
from pathlib import Path

import atheris
import numpy as np

import modelrt

BUNDLE = Path(os.environ["MRT_FUZZ_BUNDLE"])
SIGNED = Path(os.environ["MRT_FUZZ_SIGNED"])
KEY = Path(os.environ["MRT_FUZZ_KEY"])
OTHER_KEY = Path(os.environ["MRT_FUZZ_OTHER_KEY"])
SCRATCH = Path(os.environ["MRT_FUZZ_SCRATCH"])

RUN_ERRORS = (TypeError, ValueError)
LOAD_ERRORS = (TypeError, ValueError, OverflowError, FileNotFoundError, modelrt.Error)
DTYPES = [np.float32, np.float64, np.float16, np.int32, np.uint32, np.int8, np.uint8, np.int64, np.bool_, np.complex64]


class Finding(AssertionError):
  """A broken property: atheris reports it as a crash with the input that caused it."""


def check(cond: bool, what: str) -> None:
  if not cond:
    raise Finding(what)


def same(a, b) -> bool:
  """`a == b`, outside the instrumented functions: atheris hooks their comparisons (feeding operands to libFuzzer's
  tables), which for the kilobytes of array and bundle bytes compared here only costs memory and time."""
  return a == b


def changed_outside(before: bytes, after: bytes, written) -> bool:
  """Whether a byte outside the mask `written` differs between `before` and `after` (not instrumented, as `same`)."""
  changed = np.frombuffer(before, np.uint8) != np.frombuffer(after, np.uint8)
  return bool((changed & ~written).any())


def no_panic(e: BaseException) -> None:
  check("internal error" not in str(e), f"a caught panic: {e}")


MODEL = modelrt.load(BUNDLE, device="cpu")
INS, OUTS = MODEL.inputs, MODEL.outputs
BUNDLE_BYTES = BUNDLE.read_bytes()
SIGNED_BYTES = SIGNED.read_bytes()
check(len(INS) >= 1 and len(OUTS) >= 1, "the bundle needs an input and an output")


def plain(feeds: dict) -> dict:
  """Output bytes for `feeds` (name -> array of the right dtype and shape) from plain C-contiguous copies."""
  fresh = {t.name: np.array(np.ndarray.view(feeds[t.name], np.ndarray), dtype=t.dtype, order="C") for t in INS}
  return {k: np.ndarray.tobytes(v) for k, v in MODEL.run(fresh).items()}


RNG = np.random.default_rng(37)
BASES = []
for _ in range(8):
  x = {t.name: (RNG.standard_normal(t.shape) * RNG.integers(1, 50)).astype(t.dtype) for t in INS}
  BASES.append((x, {n: np.ndarray.tobytes(a) for n, a in x.items()}, plain(x)))


def expected(feeds: dict, base: int) -> dict:
  """The outputs for valid `feeds`: the base's when the values are the base's, else a separate plain run."""
  _, xbytes, want = BASES[base]
  views = {t.name: np.ndarray.view(feeds[t.name], np.ndarray) for t in INS}
  if all(np.ascontiguousarray(views[n]).tobytes() == xbytes[n] for n in xbytes):
    return want
  return plain(views)


# --- hostile behaviour, armed only while a run is under way ---------------------------------------------------------

ARMED = [False]
VICTIMS: list = []  # arrays of the call, owning their data, that hostile callbacks resize
BYSTANDER = np.zeros(8, np.float32)  # an array of nobody's, resized too (Python code allocating mid-call)
TOUCHED = [0]  # hostile callbacks that changed a victim during the current call


def attack(mode: int) -> None:
  if not ARMED[0]:
    return
  BYSTANDER.resize(BYSTANDER.size % 64 + 8, refcheck=False)
  for v in list(VICTIMS):
    try:
      if mode % 3 == 0:
        v.resize(max(1, v.size // 2), refcheck=False)
      elif mode % 3 == 1:
        shape = v.shape
        v.resize(v.size * 2 + 1, refcheck=False)
        v.resize(shape, refcheck=False)
      else:
        v.resize(0, refcheck=False)
      TOUCHED[0] += 1
    except ValueError:
      pass  # pinned by the run: numpy refuses
  if mode >= 3:
    raise RuntimeError("hostile callback")


class Sub(np.ndarray):
  pass


class Lying(np.ndarray):
  """Python-level methods that return something else."""

  def copy(self, order="C"):
    return np.zeros(1, np.float32)

  def __array__(self, *a, **k):
    return np.zeros(1, np.float32)

  def astype(self, *a, **k):
    return np.zeros(1, np.float32)

  def reshape(self, *a, **k):
    return np.zeros(1, np.float32)

  def tobytes(self, *a, **k):
    return b"\0"

  def __len__(self):
    return 1


class LyingAttrs(np.ndarray):
  """Attributes that lie about the array; the extension reads numpy's header, not these."""

  shape = property(lambda self: (1,))
  dtype = property(lambda self: np.dtype(np.uint8))
  strides = property(lambda self: (1,))
  nbytes = property(lambda self: 1 << 40)
  size = property(lambda self: 1)
  ndim = property(lambda self: 1)
  itemsize = property(lambda self: 1)
  flags = property(lambda self: np.zeros(1).flags)


def hostile(mode: int):
  class Hostile(np.ndarray):
    def __array_finalize__(self, obj):
      attack(mode)

    def copy(self, order="C"):
      attack(mode)
      return np.ndarray.copy(self, order)

    def __array__(self, *a, **k):
      attack(mode)
      return np.ndarray.view(self, np.ndarray)

  return Hostile


CLASSES = [Sub, Lying, LyingAttrs] + [hostile(m) for m in range(6)]


# --- building arrays ------------------------------------------------------------------------------------------------


def wide(x: np.ndarray, axis: int, step: int, offset: int) -> np.ndarray:
  """`x` as a strided view (every `step`-th element along `axis` of a bigger array, from `offset`)."""
  if x.ndim == 0:
    return x
  axis %= x.ndim
  shape = list(x.shape)
  shape[axis] = x.shape[axis] * step + offset
  big = np.zeros(shape, x.dtype)
  idx = [slice(None)] * x.ndim
  idx[axis] = slice(offset, offset + x.shape[axis] * step, step)
  big[tuple(idx)] = x
  return big[tuple(idx)]


def transform(fdp, x):
  """One layout, dtype or shape change of `x` (an ndarray, or something else once a step made it so)."""
  if not isinstance(x, np.ndarray):
    return x
  op = fdp.ConsumeIntInRange(0, 17)
  n = x.ndim
  if op == 0:
    return np.asfortranarray(x)
  if op == 1:
    return wide(x, fdp.ConsumeIntInRange(0, 7), fdp.ConsumeIntInRange(1, 4), fdp.ConsumeIntInRange(0, 3))
  if op == 2 and n:
    axis = fdp.ConsumeIntInRange(0, n - 1)
    idx = [slice(None)] * n
    idx[axis] = slice(None, None, -1)
    return np.ascontiguousarray(x[tuple(idx)])[tuple(idx)]
  if op == 3:
    r = np.array(x)
    r.flags.writeable = False
    return r
  if op == 4:
    off = fdp.ConsumeIntInRange(0, 63)
    buf = np.zeros(x.nbytes + 128, np.uint8)
    o = (-buf.ctypes.data) % 64 + off
    out = buf[o : o + x.nbytes].view(x.dtype).reshape(x.shape)
    out[...] = x
    return out
  if op == 5:
    raw = np.ascontiguousarray(x).tobytes()
    backing = [bytearray(raw), raw, memoryview(bytearray(raw))][fdp.ConsumeIntInRange(0, 2)]
    return np.frombuffer(backing, x.dtype).reshape(x.shape)
  if op == 6:
    return x.astype(DTYPES[fdp.ConsumeIntInRange(0, len(DTYPES) - 1)])
  if op == 7:
    return x.astype(x.dtype.newbyteorder())
  if op == 8 and x.dtype.itemsize == 4:
    return x.view(np.int32)
  if op == 9:
    return x.reshape(-1)
  if op == 10:
    return x[None]
  if op == 11 and n and x.shape[-1] > 1:
    return x[..., : x.shape[-1] // 2]
  if op == 12:
    shape = list(x.shape) or [1]
    shape[fdp.ConsumeIntInRange(0, len(shape) - 1)] = 0
    return np.zeros(shape, x.dtype)
  if op == 13 and n:
    # Broadcast (zero strides, read-only): values change, layout is valid.
    idx = tuple(slice(0, 1) if fdp.ConsumeBool() else slice(None) for _ in range(n))
    return np.broadcast_to(x[idx], x.shape)
  if op == 14 and n:
    return np.ascontiguousarray(x.T).T if n > 1 else x
  if op == 15:
    return [x.tolist(), float(x.flat[0]) if x.size else 0.0, None, x.astype(object), x.tobytes()][fdp.ConsumeIntInRange(0, 4)]
  if op == 16:
    return np.array(1.0, x.dtype)
  if op == 17 and n:
    return np.lib.stride_tricks.as_strided(x, x.shape, (0,) * n)  # every element aliases the first
  return x


def build(fdp, x: np.ndarray):
  """A variant of `x`: up to three changes, then maybe a subclass view."""
  v = x.copy()
  for _ in range(fdp.ConsumeIntInRange(0, 3)):
    try:
      v = transform(fdp, v)
    except (TypeError, ValueError, OverflowError, AttributeError):
      break  # numpy refuses that change of this array (a view of an object array, a cast that overflows): stop here
  if isinstance(v, np.ndarray) and fdp.ConsumeBool():
    v = np.ndarray.view(v, CLASSES[fdp.ConsumeIntInRange(0, len(CLASSES) - 1)])
  return v


def valid_input(v, t) -> bool:
  if not isinstance(v, np.ndarray):
    return False
  b = np.ndarray.view(v, np.ndarray)
  return b.dtype == t.dtype and b.shape == tuple(t.shape)


def valid_output(v, t) -> bool:
  if not valid_input(v, t):
    return False
  b = np.ndarray.view(v, np.ndarray)
  return b.flags.c_contiguous and b.flags.writeable


def snapshot(v):
  """What `v` holds (base-class bytes), or None for a non-array."""
  return np.ndarray.tobytes(np.ndarray.view(v, np.ndarray)) if isinstance(v, np.ndarray) else None


def call(feeds, outputs):
  """MODEL.run with hostile callbacks armed; (result, error, touched)."""
  TOUCHED[0] = 0
  ARMED[0] = True
  try:
    return MODEL.run(feeds, outputs), None, TOUCHED[0]
  except RUN_ERRORS as e:
    no_panic(e)
    return None, e, TOUCHED[0]
  except RuntimeError as e:  # a hostile callback's own exception propagates
    check(str(e) == "hostile callback", f"unexpected {type(e).__name__}: {e}")
    return None, e, TOUCHED[0]
  finally:
    ARMED[0] = False


def outputs_hold(given: dict, want: dict) -> None:
  for t in OUTS:
    a = np.ndarray.view(given[t.name], np.ndarray)
    check(a.shape == tuple(t.shape), f"output {t.name} has shape {a.shape} after a successful run")
    check(a.tobytes() == want[t.name], f"output {t.name} holds wrong bytes")


# --- modes ----------------------------------------------------------------------------------------------------------


def fuzz_run(fdp) -> None:
  base = fdp.ConsumeIntInRange(0, len(BASES) - 1)
  x = BASES[base][0]
  feeds = {t.name: build(fdp, x[t.name]) for t in INS}
  with_outputs = fdp.ConsumeBool()
  outputs = None
  if with_outputs:
    outputs = {t.name: build(fdp, np.zeros(t.shape, t.dtype)) for t in OUTS}
  VICTIMS[:] = []
  if outputs is not None and fdp.ConsumeBool():
    VICTIMS.extend(v for v in outputs.values() if isinstance(v, np.ndarray) and v.base is None)
  valid = all(valid_input(feeds[t.name], t) for t in INS) and (outputs is None or all(valid_output(outputs[t.name], t) for t in OUTS))
  want = expected(feeds, base) if valid else None
  before = {n: snapshot(v) for n, v in (outputs or {}).items()}
  result, err, touched = call(feeds, outputs)
  VICTIMS[:] = []
  if touched or isinstance(err, RuntimeError):
    # A callback changed arrays or raised mid-call: refusing is right, succeeding must still be correct.
    if result is not None and want is not None:
      outputs_hold(result, want)
    return
  if not valid:
    check(err is not None, "an invalid argument was accepted")
    for n, b in before.items():
      check(same(snapshot(outputs[n]), b), f"refused run wrote output {n}")
    return
  check(err is None, f"a valid call was refused: {err!r}")
  outputs_hold(result, want)
  if outputs is not None:
    check(result is outputs, "run with outputs returns that dict")


def fuzz_arena(fdp) -> None:
  """Inputs and outputs as views of one arena; run must never write a byte outside its outputs."""
  base = fdp.ConsumeIntInRange(0, len(BASES) - 1)
  x = BASES[base][0]
  sizes = [t.nbytes for t in INS] + [t.nbytes for t in OUTS]
  size = fdp.ConsumeIntInRange(1, 2 * sum(sizes) + 64)
  arena = np.frombuffer(bytearray(fdp.ConsumeBytes(64).ljust(64, b"\x5a") * (size // 64 + 1)), np.uint8)[:size]
  arena = np.array(arena)  # owns its memory, writeable

  def view(t):
    if t.nbytes > size:
      return np.zeros(t.shape, t.dtype)
    off = fdp.ConsumeIntInRange(0, size - t.nbytes)
    if fdp.ConsumeBool():
      off -= off % t.dtype.itemsize
    return np.ndarray(t.shape, t.dtype, buffer=arena, offset=off)

  outs = {t.name: view(t) for t in OUTS}
  ins = {}
  for t in INS:
    v = view(t)
    v[...] = x[t.name]
    ins[t.name] = v
  ranges = [(v.ctypes.data, v.ctypes.data + v.nbytes) for v in outs.values() if v.base is not None]
  shared = any(a[0] < b[1] and b[0] < a[1] for i, a in enumerate(ranges) for b in ranges[i + 1 :])
  feeds_now = {n: np.array(v) for n, v in ins.items()}
  want = expected(feeds_now, base)
  before = arena.tobytes()
  _, err, _ = call(ins, outs)
  after = arena.tobytes()
  lo = arena.ctypes.data
  written = np.zeros(size, bool)
  for v in outs.values():
    if v.base is not None:
      written[v.ctypes.data - lo : v.ctypes.data - lo + v.nbytes] = True
  check(not changed_outside(before, after, written), "run wrote arena bytes outside its outputs")
  if shared:
    check(err is not None, "outputs sharing memory were accepted")
    check(same(before, after), "a refused run wrote the arena")
    return
  check(err is None, f"disjoint arena views were refused: {err!r}")
  outputs_hold(outs, want)


class Key(str):
  """A str key equal to a tensor name whose comparison runs Python code."""

  mode = 0

  def __hash__(self):
    return str.__hash__(self)

  def __eq__(self, other):
    attack(self.mode)
    return str.__eq__(self, other)


def fuzz_dict(fdp) -> None:
  base = fdp.ConsumeIntInRange(0, len(BASES) - 1)
  x = BASES[base][0]
  out = {t.name: np.zeros(t.shape, t.dtype) for t in OUTS}
  VICTIMS[:] = list(out.values())

  def entries(names, arrays):
    d = {}
    for n in names:
      kind = fdp.ConsumeIntInRange(0, 5)
      if kind == 0:
        continue  # missing
      if kind == 1:
        k = Key(n)
        k.mode = fdp.ConsumeIntInRange(0, 5)
        d[k] = arrays[n]
      else:
        d[n] = arrays[n]
    for _ in range(fdp.ConsumeIntInRange(0, 2)):
      d[[1, b"x", None, "unknown", (1,)][fdp.ConsumeIntInRange(0, 4)]] = np.zeros(1)
    return d

  feeds = entries([t.name for t in INS], x)
  outputs = entries([t.name for t in OUTS], out) if fdp.ConsumeBool() else None
  as_list = fdp.ConsumeIntInRange(0, 15) == 0
  if as_list:
    try:
      MODEL.run(list(feeds.items()))
    except TypeError as e:
      no_panic(e)
      return
    raise Finding("a list of feeds was accepted")
  exact = set(feeds) == {t.name for t in INS} and (outputs is None or set(outputs) == {t.name for t in OUTS})
  result, err, touched = call(feeds, outputs)
  VICTIMS[:] = []
  if touched or isinstance(err, RuntimeError):
    if result is not None:
      outputs_hold(result, BASES[base][2])
    return
  if not exact:
    check(err is not None, "wrong names were accepted")
    return
  check(err is None, f"a valid call was refused: {err!r}")
  outputs_hold(result, BASES[base][2])


THREAD_VICTIMS: list = []
THREAD_LOCK = threading.Lock()
THREAD_GO = threading.Event()  # set while a thread-mode input runs


def resizer() -> None:
  while True:
    THREAD_GO.wait()
    with THREAD_LOCK:
      for a in list(THREAD_VICTIMS):
        shape = a.shape
        try:
          a.resize(a.size * 2, refcheck=False)
        except ValueError:
          continue  # pinned by a run
        a.resize(shape, refcheck=False)
    time.sleep(0)  # let the main thread in, so that its runs meet these attempts


def fuzz_thread(fdp) -> None:
  base = fdp.ConsumeIntInRange(0, len(BASES) - 1)
  x = {n: a.copy() for n, a in BASES[base][0].items()}  # own their data: numpy would reallocate them
  out = {t.name: np.zeros(t.shape, t.dtype) for t in OUTS}
  with THREAD_LOCK:
    THREAD_VICTIMS[:] = list(x.values()) + list(out.values())
  interval = sys.getswitchinterval()
  sys.setswitchinterval(1e-6)
  THREAD_GO.set()
  try:
    for _ in range(fdp.ConsumeIntInRange(1, 8)):
      try:
        MODEL.run(x, out)
      except ValueError as e:
        no_panic(e)  # caught between a resize and its undo: refused, nothing read
        continue
      with THREAD_LOCK:
        outputs_hold(out, BASES[base][2])
  finally:
    THREAD_GO.clear()
    sys.setswitchinterval(interval)
    with THREAD_LOCK:
      THREAD_VICTIMS[:] = []


def fuzz_load(fdp) -> None:
  kind = fdp.ConsumeIntInRange(0, 6)
  if kind == 0:
    data = fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 4096))
  else:
    data = bytearray(SIGNED_BYTES if kind in (4, 5) else BUNDLE_BYTES)
    if kind in (1, 5):
      for _ in range(fdp.ConsumeIntInRange(1, 4)):
        i = fdp.ConsumeIntInRange(0, len(data) - 1)
        data[i] ^= fdp.ConsumeIntInRange(1, 255)
    elif kind == 2:
      data = data[: fdp.ConsumeIntInRange(0, len(data) - 1)]
    elif kind == 3:
      data += fdp.ConsumeBytes(fdp.ConsumeIntInRange(1, 256)) or b"\0"
    data = bytes(data)
  path = SCRATCH / f"b{os.getpid()}.mrt"
  path.write_bytes(data)
  where = [str(path), path, SCRATCH, SCRATCH / "missing.mrt", str(path) + "\0x", bytes(path), 7][
    fdp.ConsumeIntInRange(0, 6) if fdp.ConsumeIntInRange(0, 3) == 0 else 0
  ]
  device = ["cpu", "auto", "", "gpu", "cpu\0", "\u00fc", "qcom-emu"][fdp.ConsumeIntInRange(0, 6)]
  threads = [None, 1, 2, 0, -1, 2**70, 1.5, "2"][fdp.ConsumeIntInRange(0, 7)]
  store_kind = fdp.ConsumeIntInRange(0, 8)
  garbage = SCRATCH / "garbage.pub"
  garbage.write_bytes(b"modelrt-ed25519-public zz\n")
  keys = [None, [KEY], [str(KEY)], [KEY.parent], [OTHER_KEY], [], [SCRATCH / "none.pub"], [garbage], "x"][store_kind]
  mmap = [True, False, 0, 1, None, "yes"][fdp.ConsumeIntInRange(0, 5)]
  try:
    m = modelrt.load(where, device=device, threads=threads, trusted_keys=keys, mmap=mmap)
  except LOAD_ERRORS as e:
    no_panic(e)
    return
  trusted = store_kind in (1, 2, 3)
  check(not trusted or same(data, SIGNED_BYTES), "the trust store accepted a bundle it did not sign")
  check(store_kind != 4, "a bundle was accepted by a store of another key")
  check(store_kind < 5, f"a load with trusted_keys={keys!r} (no usable key) succeeded")
  if not (same(data, BUNDLE_BYTES) or same(data, SIGNED_BYTES)):
    return  # loaded, but its code is not the bundle's own: not run
  if mmap is False or mmap == 0:
    path.write_bytes(b"\0" * 64)  # read at load: the model does not see this
  x, _, want = BASES[fdp.ConsumeIntInRange(0, len(BASES) - 1)]
  got = {k: np.ndarray.tobytes(v) for k, v in m.run(x).items()}
  check(same(got, want), "a loaded copy of the bundle computes something else")


MODES = [fuzz_run] * 6 + [fuzz_arena] * 3 + [fuzz_dict] * 2 + [fuzz_thread, fuzz_load, fuzz_load]


def one_input(data: bytes) -> None:
  fdp = atheris.FuzzedDataProvider(data)
  MODES[fdp.ConsumeIntInRange(0, len(MODES) - 1)](fdp)


def main() -> None:
  for f in (fuzz_run, fuzz_arena, fuzz_dict, fuzz_thread, fuzz_load, transform, build, one_input):
    globals()[f.__name__] = atheris.instrument_func(f)
  MODES[:] = [globals()[f.__name__] for f in MODES]
  threading.Thread(target=resizer, daemon=True).start()
  atheris.Setup(sys.argv, one_input)
  atheris.Fuzz()


if __name__ == "__main__":
  main()
