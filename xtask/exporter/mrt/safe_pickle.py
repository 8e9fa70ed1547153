"""Restricted pickle reader: loads a tinygrad TinyJit/openpilot pickle as plain records, executing no code from it.

`pickle.Unpickler.find_class` is the only way a pickle names code to call (GLOBAL/STACK_GLOBAL/INST/OBJ/EXT*). Here it
maps an allow-list of tinygrad class names (the layouts of tinygrad 0.12-0.14, docs/openpilot-pickles.md) to inert
`Record` types of this module, `builtins.bytearray` to a constructor that only copies bytes it is given and
`builtins.slice` to one that takes integers only (openpilot's metadata pickles); every
other name (numpy's reconstructors, `os.system`, tinygrad runtime classes such as `CPUProgram`, names that merely look
like tinygrad's) is refused with one line (`SafePickleError`). A `Record` stores the constructor arguments
(REDUCE/NEWOBJ) and the BUILD state it is given and does nothing else, so no tinygrad code is imported or run and
reading works whatever tinygrad version (or none) is installed. Persistent ids and extension codes are refused too.

Bounds, checked by a pass over the opcodes before anything is built (`pickletools.genops`, which reads each argument
from the file and so cannot be told to allocate more than the file holds): the file size, the opcode count, the MARK
nesting depth and the memo size; `bytearray` is only ever built from bytes already read from the file (never from an
integer length), and the walkers below stop at cycles. Bytes stay bytes: a field holding another pickle is never read
as one. The caller interprets the records (mrt/pickle_layout.py, mrt/pickle_program.py).
"""

import io
import pickle
import pickletools

MAX_FILE = 1 << 30  # bytes of opcodes (plus out-of-band buffers) read at all
MAX_OPS = 20_000_000  # opcodes: a 1 GiB pickle of small objects has fewer
MAX_DEPTH = 1000  # MARK nesting (and the reader's own recursion limit for nested records)
MAX_MEMO = 5_000_000  # memo entries

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
    ("tinygrad.uop.ops", "CallInfo"),
    ("tinygrad.uop.ops", "ProgramInfo"),
    ("tinygrad.codegen.opt", "Opt"),
    ("tinygrad.codegen.opt", "OptOps"),
    ("tinygrad.codegen.opt.kernel", "Opt"),
    ("tinygrad.codegen.opt.kernel", "OptOps"),
    ("tinygrad.helpers", "Metadata"),
    ("tinygrad.helpers", "Target"),
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
  state (None when there was none), `reduced` whether it was built by calling the class (REDUCE) rather than by
  `cls.__new__` (NEWOBJ)."""

  cls = "?"

  def __new__(klass, *args, **kwargs):
    r = object.__new__(klass)
    r.args, r.kwargs, r.state, r.reduced = args, kwargs, None, False
    return r

  def __init__(self, *args, **kwargs):
    # Only REDUCE (`cls(*args)`) calls __init__; NEWOBJ calls __new__ alone. mrt/materialize.py rebuilds each the same way.
    self.reduced = True

  def __setstate__(self, state):
    self.state = state

  @property
  def name(self) -> str:
    return self.cls.rsplit(".", 1)[1]

  def field(self, key, default=None):
    """`key` from a dict state, or from the dict in a (None, dict) slot state."""
    s = self.state
    if isinstance(s, tuple) and len(s) == 2 and isinstance(s[1], dict):
      s = s[1] if s[0] is None else ({**s[0], **s[1]} if isinstance(s[0], dict) else s[1])
    return s.get(key, default) if isinstance(s, dict) else default

  def __repr__(self):
    return f"<{self.cls} {len(self.args)} args>"


_TYPES = {key: type(key[1], (Record,), {"cls": f"{key[0]}.{key[1]}", "__slots__": ()}) for key in ALLOWED}
# Record subclasses need a __dict__ for args/kwargs/state; __slots__ = () on the subclass keeps the base's dict.


def _bytearray(*args):
  """`builtins.bytearray` as pickles use it: `bytearray(b"...")` (protocol 3+), `bytearray("...", "latin-1")`
  (protocol 2) or `bytearray()`. An integer length (which would allocate what the file never held) is refused."""
  if not args:
    return bytearray()
  if len(args) == 1 and isinstance(args[0], (bytes, bytearray)):
    return bytearray(args[0])
  if len(args) == 2 and isinstance(args[0], str) and args[1] == "latin-1":
    return bytearray(args[0], "latin-1")
  raise SafePickleError("pickle builds a bytearray from something other than bytes it holds (e.g. a length), which is refused")


def _slice(*args):
  """`builtins.slice` (openpilot's *_metadata.pkl output slices): ints or None only."""
  if len(args) > 3 or not all(a is None or (isinstance(a, int) and not isinstance(a, bool)) for a in args):
    raise SafePickleError("pickle builds a slice from something other than integers")
  return slice(*args)


class _Restricted(pickle.Unpickler):
  def __init__(self, f, buffers, names: set):
    super().__init__(f, buffers=buffers)
    self.names = names

  def find_class(self, module, name):
    self.names.add((module, name))
    if (module, name) in (("builtins", "bytearray"), ("__builtin__", "bytearray")):
      return _bytearray
    if (module, name) in (("builtins", "slice"), ("__builtin__", "slice")):
      return _slice
    t = _TYPES.get((module, name))
    if t is None:
      raise SafePickleError(
        f"pickle references {module}.{name}, which the restricted reader does not allow (only tinygrad's own classes)", (module, name)
      )
    return t

  def persistent_load(self, pid):
    raise SafePickleError("pickle uses persistent ids, which the restricted reader does not allow")


_REFUSED_OPS = {"PERSID", "BINPERSID", "EXT1", "EXT2", "EXT4"}


def _prescan(data: bytes):
  """Check the bounds above on the opcode stream without building anything."""
  if len(data) > MAX_FILE:
    raise SafePickleError(f"pickle is {len(data)} bytes, more than the reader's limit of {MAX_FILE}")
  depth = n = memo = 0
  try:
    for op, _arg, pos in pickletools.genops(data):
      n += 1
      if n > MAX_OPS:
        raise SafePickleError(f"pickle has more than {MAX_OPS} opcodes")
      if op.name in _REFUSED_OPS:
        raise SafePickleError(f"pickle uses {op.name} at byte {pos}, which the restricted reader does not allow")
      if op.name == "MARK":
        depth += 1
        if depth > MAX_DEPTH:
          raise SafePickleError(f"pickle nests deeper than {MAX_DEPTH} levels")
      elif op.name in ("TUPLE", "LIST", "DICT", "APPENDS", "SETITEMS", "ADDITEMS", "FROZENSET", "OBJ", "INST", "POP_MARK"):
        depth = max(depth - 1, 0)
      elif op.name in ("MEMOIZE", "PUT", "BINPUT", "LONG_BINPUT"):
        memo += 1
        if memo > MAX_MEMO:
          raise SafePickleError(f"pickle memoizes more than {MAX_MEMO} objects")
  except SafePickleError:
    raise
  except Exception as e:  # truncated or malformed opcodes
    raise SafePickleError(f"cannot read pickle: {' '.join(str(e).split())[:200]}") from None


def read(data: bytes, buffers=None):
  """(object, referenced (module, name) set) for `data` (pickle opcodes; out-of-band `buffers` for PICKLE_OOB)."""
  import sys

  _prescan(data)
  names: set = set()
  old = sys.getrecursionlimit()
  try:
    sys.setrecursionlimit(max(old, MAX_DEPTH * 4))
    return _Restricted(io.BytesIO(data), buffers, names).load(), names
  except SafePickleError:
    raise
  except RecursionError:
    raise SafePickleError("pickle nests too deeply to read") from None
  except Exception as e:  # malformed opcode stream: one line, no traceback
    raise SafePickleError(f"cannot read pickle: {type(e).__name__}: {' '.join(str(e).split())[:200]}") from None
  finally:
    sys.setrecursionlimit(old)


def loads(data: bytes, buffers=None):
  """Read `data` into plain Python values and Records (see `read`)."""
  return read(data, buffers)[0]


def walk(obj, seen=None):
  """Every Record reachable from `obj` (through Records' args/kwargs/state, lists, tuples, dicts), each once; cyclic
  containers are visited once."""
  seen = set() if seen is None else seen
  stack = [obj]
  while stack:
    o = stack.pop()
    if isinstance(o, (list, tuple, dict, Record)):
      if id(o) in seen:
        continue
      seen.add(id(o))
    if isinstance(o, (list, tuple)):
      stack.extend(o)
    elif isinstance(o, dict):
      stack.extend(o.keys())
      stack.extend(o.values())
    elif isinstance(o, Record):
      yield o
      stack.extend((o.args, o.kwargs, o.state))
