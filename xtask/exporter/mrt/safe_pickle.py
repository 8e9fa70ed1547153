"""Restricted pickle reader: loads a tinygrad compile3/openpilot pickle as plain records, executing no code from it.

`pickle.Unpickler.find_class` is the only way a pickle names code to call (GLOBAL/STACK_GLOBAL/INST/OBJ/EXT*). Here it
maps an allow-list of tinygrad class names (the layouts of tinygrad 0.12-0.14) to inert `Record` types of this module
and `builtins.bytearray` to `bytearray`; every other name is refused with one line (`SafePickleError`). A `Record`
stores the constructor arguments (REDUCE/NEWOBJ) and the BUILD state it is given and does nothing else, so no tinygrad
code is imported or run and reading works whatever tinygrad version (or none) is installed. Persistent ids are
refused too. The caller interprets the records (mrt/qcom_cl.py).
"""

import io
import pickle

# (module, name) pairs a tinygrad 0.12-0.14 TinyJit pickle may reference. Each becomes an inert Record type.
ALLOWED = frozenset(
  {
    ("tinygrad.engine.jit", "TinyJit"),
    ("tinygrad.engine.jit", "_TinyJit"),
    ("tinygrad.engine.jit", "CapturedJit"),
    ("tinygrad.engine.realize", "ExecItem"),
    ("tinygrad.engine.realize", "CompiledRunner"),
    ("tinygrad.engine.realize", "BufferCopy"),
    ("tinygrad.engine.realize", "BufferXfer"),
    ("tinygrad.engine.realize", "ViewOp"),
    ("tinygrad.device", "Buffer"),
    ("tinygrad.dtype", "DType"),
    ("tinygrad.dtype", "PtrDType"),
    ("tinygrad.dtype", "ImageDType"),
    ("tinygrad.dtype", "AddrSpace"),
    ("tinygrad.dtype", "ConstFloat"),
    ("tinygrad.dtype", "InvalidType"),
    ("tinygrad.renderer", "ProgramSpec"),
    ("tinygrad.renderer", "Estimates"),
    ("tinygrad.tensor", "Tensor"),
    ("tinygrad.uop", "Ops"),
    ("tinygrad.uop.ops", "Ops"),
    ("tinygrad.uop.ops", "UOp"),
    ("tinygrad.uop.ops", "AxisType"),
    ("tinygrad.uop.ops", "KernelInfo"),
    ("tinygrad.uop.ops", "ParamArg"),
    ("tinygrad.codegen.opt", "Opt"),
    ("tinygrad.codegen.opt", "OptOps"),
    ("tinygrad.codegen.opt.kernel", "Opt"),
    ("tinygrad.codegen.opt.kernel", "OptOps"),
    ("tinygrad.helpers", "Metadata"),
    ("tinygrad.shape.shapetracker", "ShapeTracker"),
    ("tinygrad.shape.view", "View"),
  }
)


class SafePickleError(Exception):
  """The pickle cannot be read by the restricted reader; str() is one line. `refused` is the (module, name) the
  pickle referenced when that was the reason."""

  def __init__(self, msg: str, refused: tuple[str, str] | None = None):
    super().__init__(msg)
    self.refused = refused


class Record:
  """An object from the pickle as data: `cls` is "module.name", `args` the constructor arguments, `state` the BUILD
  state (None when there was none)."""

  cls = "?"

  def __new__(klass, *args, **kwargs):
    r = object.__new__(klass)
    r.args, r.kwargs, r.state = args, kwargs, None
    return r

  def __init__(self, *args, **kwargs):
    pass

  def __setstate__(self, state):
    self.state = state

  @property
  def name(self) -> str:
    return self.cls.rsplit(".", 1)[1]

  def field(self, key, default=None):
    """`key` from a dict state, or from the dict in a (None, dict) slot state."""
    s = self.state
    if isinstance(s, tuple) and len(s) == 2 and isinstance(s[1], dict):
      s = s[1] if s[0] is None else {**s[0], **s[1]}
    return s.get(key, default) if isinstance(s, dict) else default

  def __repr__(self):
    return f"<{self.cls} {len(self.args)} args>"


_TYPES = {key: type(key[1], (Record,), {"cls": f"{key[0]}.{key[1]}", "__slots__": ()}) for key in ALLOWED}
# Record subclasses need a __dict__ for args/kwargs/state; __slots__ = () on the subclass keeps the base's dict.


class _Restricted(pickle.Unpickler):
  def find_class(self, module, name):
    if (module, name) == ("builtins", "bytearray"):
      return bytearray
    t = _TYPES.get((module, name))
    if t is None:
      raise SafePickleError(
        f"pickle references {module}.{name}, which the restricted reader does not allow (only tinygrad's own classes)", (module, name)
      )
    return t

  def persistent_load(self, pid):
    raise SafePickleError("pickle uses persistent ids, which the restricted reader does not allow")


def loads(data: bytes, buffers=None):
  """Read `data` (pickle opcodes; out-of-band `buffers` for PICKLE_OOB files) into plain Python values and Records."""
  try:
    return _Restricted(io.BytesIO(data), buffers=buffers).load()
  except SafePickleError:
    raise
  except RecursionError:
    raise SafePickleError("pickle nests too deeply to read") from None
  except Exception as e:  # malformed opcode stream: one line, no traceback
    raise SafePickleError(f"cannot read pickle: {type(e).__name__}: {' '.join(str(e).split())[:200]}") from None


def walk(obj, seen=None):
  """Every Record reachable from `obj` (through Records' args/kwargs/state, lists, tuples, dicts), each once."""
  seen = set() if seen is None else seen
  stack = [obj]
  while stack:
    o = stack.pop()
    if isinstance(o, (list, tuple)):
      stack.extend(o)
    elif isinstance(o, dict):
      stack.extend(o.keys())
      stack.extend(o.values())
    elif isinstance(o, Record):
      if id(o) in seen:
        continue
      seen.add(id(o))
      yield o
      stack.extend((o.args, o.kwargs, o.state))
