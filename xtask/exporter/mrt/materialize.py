"""Rebuild tinygrad 0.14 objects from the inert records of a linear-014 pickle (mrt/safe_pickle.py), so the existing
0.14 converter (mrt/manifest.py's build_manifest) can run on them — without tinygrad ever unpickling the file.

The pickle's opcodes are read once, by the restricted reader, which instantiates nothing. This module then calls the
constructors of a fixed list of tinygrad 0.14 *data* classes (`CLASSES`: UOp, DType, Buffer, ProgramInfo, …; no
runtime, compiler or program class) with the recorded arguments, the way the pickle's REDUCE/NEWOBJ opcodes would have,
and applies recorded BUILD states; device Buffers are re-homed onto the host (`PYTHON`) so their bytes are kept
without opening the device. Any other class name, a record whose class is not a class in tinygrad 0.14, or a
reference cycle through constructor arguments is refused with one line. The walk is iterative (no recursion limit to
hit on deep UOp graphs).
"""

import importlib

from mrt.safe_pickle import Record
from mrt.targets import TINYGRAD_VERSION, ExportError

# The tinygrad 0.14 classes a linear-014 TinyJit pickle names (tinygrad's own `_TinyJit.__reduce__` and friends).
CLASSES = frozenset(
  {
    ("tinygrad.engine.jit", "_TinyJit"),
    ("tinygrad.engine.jit", "CapturedJit"),
    ("tinygrad.device", "Buffer"),
    ("tinygrad.dtype", "DType"),
    ("tinygrad.dtype", "AddrSpace"),
    ("tinygrad.dtype", "ConstFloat"),
    ("tinygrad.dtype", "InvalidType"),
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
    ("tinygrad.helpers", "Metadata"),
    ("tinygrad.helpers", "Target"),
  }
)
HOST_PREFIXES = ("CPU", "NPY", "PYTHON", "DISK")


def _rehomed_buffer():
  from tinygrad.device import Buffer

  def make(device, size, dtype, opaque=None, options=None, initial_value=None, uop_refcount=0, base=None, offset=0, preallocate=False):
    if not isinstance(device, str) or not isinstance(size, int) or size < 0:
      raise ExportError("a Buffer in the pickle has no device/size")
    if opaque is not None:
      raise ExportError(f"a Buffer on {device} carries an opaque host object, which the reader does not rebuild")
    if initial_value is not None and not isinstance(initial_value, (bytes, bytearray)):
      raise ExportError(f"a Buffer on {device} has initial bytes of type {type(initial_value).__name__}")
    if device.split(":")[0] not in HOST_PREFIXES:
      device = "PYTHON"  # keep the bytes on the host, never open the target device
    if base is not None:
      device = base.device
    return Buffer(device, size, dtype, None, None if device == "PYTHON" else options, initial_value, uop_refcount, base, offset, preallocate)

  return make


def _constructors(records) -> dict:
  cons = {}
  for cls in {r.cls for r in records}:
    module, name = cls.rsplit(".", 1)
    if (module, name) not in CLASSES:
      raise ExportError(f"the pickle names {cls}, which the tinygrad {TINYGRAD_VERSION} converter does not rebuild")
    if (module, name) == ("tinygrad.device", "Buffer"):
      cons[cls] = _rehomed_buffer()
      continue
    try:
      obj = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
      raise ExportError(f"the pickle names {cls}, which tinygrad {TINYGRAD_VERSION} does not have") from None
    if not isinstance(obj, type):
      raise ExportError(f"{cls} is not a class in tinygrad {TINYGRAD_VERSION}")
    cons[cls] = obj
  return cons


def _set_state(obj, state):
  setstate = getattr(obj, "__setstate__", None)
  if setstate is not None and getattr(type(obj), "__setstate__", None) is not getattr(object, "__setstate__", None):
    setstate(state)
    return
  slots = None
  if isinstance(state, tuple) and len(state) == 2:
    state, slots = state
  if state:
    obj.__dict__.update(state)
  for k, v in (slots or {}).items():
    setattr(obj, k, v)


def materialize(root):
  """The tinygrad objects for `root` (records, containers and plain values from safe_pickle.read)."""
  from mrt.safe_pickle import walk

  cons = _constructors(list(walk(root)))
  memo: dict[int, object] = {}
  busy: set[int] = set()
  # Work items, last first. A record is created from its arguments, then its BUILD state is rebuilt and applied
  # before anything that takes the record as an argument is built (as the opcodes do); a state may refer back to its
  # own record (it exists by then).
  stack = [("visit", root)]

  def get(x):
    return memo[id(x)] if isinstance(x, (Record, list, tuple, dict)) else x

  while stack:
    what, o = stack.pop()
    if what == "visit":
      if not isinstance(o, (Record, list, tuple, dict)) or id(o) in memo:
        continue
      if id(o) in busy:
        raise ExportError("the pickle has a reference cycle through constructor arguments or tuples, which is refused")
      if isinstance(o, list):
        memo[id(o)] = []
        stack.append(("fill", o))
        stack.extend(("visit", x) for x in reversed(o))
      elif isinstance(o, dict):
        memo[id(o)] = {}
        stack.append(("fill", o))
        stack.extend(("visit", x) for kv in o.items() for x in kv)
      elif isinstance(o, tuple):
        busy.add(id(o))
        stack.append(("build", o))
        stack.extend(("visit", x) for x in o)
      else:
        busy.add(id(o))
        if o.state is not None:
          stack.append(("state", o))
          stack.append(("visit", o.state))
        stack.append(("build", o))
        stack.extend(("visit", x) for x in (*o.args, *o.kwargs.values()))
    elif what == "fill":
      if isinstance(o, list):
        memo[id(o)].extend(get(x) for x in o)
      else:
        memo[id(o)].update((get(k), get(v)) for k, v in o.items())
    elif what == "build":
      busy.discard(id(o))
      if isinstance(o, tuple):
        memo[id(o)] = tuple(get(x) for x in o)
        continue
      c = cons[o.cls]
      args, kwargs = [get(a) for a in o.args], {k: get(v) for k, v in o.kwargs.items()}
      try:
        memo[id(o)] = c(*args, **kwargs) if o.reduced else c.__new__(c, *args, **kwargs)
      except ExportError:
        raise
      except Exception as e:
        raise ExportError(f"cannot rebuild {o.cls} from the pickle: {type(e).__name__}: {' '.join(str(e).split())[:160]}") from None
    else:  # "state"
      obj = memo[id(o)]
      try:
        _set_state(obj, get(o.state))
      except Exception as e:
        msg = " ".join(str(e).split())[:160]
        raise ExportError(f"cannot apply the pickle's state to a {type(obj).__name__}: {type(e).__name__}: {msg}") from None
  return get(root)
