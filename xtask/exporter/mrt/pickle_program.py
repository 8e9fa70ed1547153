"""The inert program description every TinyJit layout is turned into (mrt/pickle_layout.py names the layouts).

A `Program` is what a captured TinyJit does, as data: its steps in order (buffer copies and kernel launches with their
kernels' source and `lib` bytes, global/local sizes as tinygrad stored them and their arguments), its inputs (by JIT
input index, with the shape/dtype info the pickle gives), and the buffers it returns. Arguments are `Slot`s: a JIT
input, or a byte range of a device Buffer record (whose bytes, when the pickle holds them, are the weights and
initial state). Nothing here runs or imports anything; mrt/qcom_cl.py turns a Program into a manifest.

Two readers fill it: `from_exec_items` (the exec-items layout: ExecItem / CompiledRunner(ProgramSpec) / BufferCopy)
and `from_linear` (the linear layouts: a LINEAR UOp whose CALLs hold a PROGRAM or COPY body and the argument UOps —
BUFFER, BUFFER_VIEW, PARAM). UOp op numbers differ between tinygrad commits, so the linear reader identifies each UOp
by its role (a PROGRAM carries a ProgramInfo, a BUFFER a Buffer record, a SOURCE text, a BINARY bytes), checks the
numbers it then sees against the Ops numbering of a known commit (`OPS`), and refuses anything else.
"""

import re
from dataclasses import dataclass, field

from mrt.safe_pickle import Record
from mrt.targets import ExportError

ANSI = re.compile(r"\x1b\[[0-9;]*m")

# Ops numbers (tinygrad's FastEnum auto() values) of the ops the linear reader uses, per tinygrad commit whose
# numbering was checked: cf4845471ecf = v0.12.0-1606 (openpilot 0.11.2), f9c8c697d6bf = v0.13.0-288, 0.14.0.
OPS = {
  "v0.12.0-1606": {"CALL": 10, "PROGRAM": 12, "LINEAR": 13, "SOURCE": 14, "BINARY": 15, "PARAM": 8, "COPY": 76, "BUFFER": 77, "BUFFER_VIEW": 78},
  "v0.13.0-288": {"CALL": 8, "PROGRAM": 9, "LINEAR": 10, "SOURCE": 11, "BINARY": 12, "PARAM": 6, "COPY": 74, "BUFFER": 3, "SLICE": 75},
  "0.14.0": {"CALL": 7, "PROGRAM": 8, "LINEAR": 9, "SOURCE": 10, "BINARY": 11, "PARAM": 5, "COPY": 67, "BUFFER": 2},
}


@dataclass
class Slot:
  """A kernel/copy argument: JIT input `input`, or bytes [offset, offset+nbytes) of Buffer record `buf`."""

  input: int | None = None
  buf: Record | None = None
  offset: int = 0
  nbytes: int | None = None  # None: the whole buffer / input


@dataclass
class Kernel:
  name: str  # tinygrad's display name, colours stripped
  device: str
  src: str | None
  lib: bytes | None
  global_size: list
  local_size: list
  ptrs: list  # per parameter: the PtrDType/DType record
  outs: set
  has_vars: bool


@dataclass
class Step:
  op: str  # "copy" | "kernel"
  args: list  # Slots; copy: [dst, src]
  kernel: Kernel | None = None


@dataclass
class Program:
  layout: str
  steps: list = field(default_factory=list)
  names: list = field(default_factory=list)  # JIT input names (str or int)
  input_info: list = field(default_factory=list)  # per input: (shape UOp or None, DType record or None)
  rets: list = field(default_factory=list)  # returned Buffer records, or None where not one buffer


def _is(r, name: str) -> bool:
  return isinstance(r, Record) and r.name == name


def _tensor_buffer(t):
  """The one Buffer record under a returned Tensor's uop (the BUFFER UOp's realized Buffer), else None."""
  from mrt.safe_pickle import walk

  u = t.field("uop") if _is(t, "Tensor") else None
  found = [r for r in walk(u) if _is(r, "Buffer")] if u is not None else []
  return (found[0] if len(found) == 1 else None), u


# ---------------------------------------------------------------- exec-items layout


def from_exec_items(cj) -> Program:
  ret, cache, input_replace, extra_views, names, input_info = cj.args
  if extra_views:
    raise ExportError("the pickle has extra view inputs, which the importer does not support")
  if not isinstance(cache, list) or not isinstance(input_replace, dict) or not isinstance(names, list):
    raise ExportError("the pickle's CapturedJit fields are not the exec-items layout's")
  prog = Program("exec-items", names=list(names))
  for k in range(len(names)):
    info = input_info[k] if isinstance(input_info, list) and k < len(input_info) and isinstance(input_info[k], tuple) else None
    prog.input_info.append((info[0], info[2]) if info and len(info) >= 3 else (None, None))

  def slot(j: int, i: int, b) -> Slot:
    if (j, i) in input_replace:
      k = input_replace[(j, i)]
      if not isinstance(k, int) or not 0 <= k < len(names):
        raise ExportError(f"step {j} argument {i} names JIT input {k!r}, which does not exist")
      return Slot(input=k)
    if b is None:
      raise ExportError(f"step {j} argument {i} has no buffer and is not a JIT input")
    return Slot(buf=b)

  for j, ei in enumerate(cache):
    if not _is(ei, "ExecItem"):
      raise ExportError(f"step {j} is a {getattr(ei, 'cls', type(ei).__name__)}, not an ExecItem")
    prg, ebufs = ei.field("prg"), ei.field("bufs")
    if ei.field("fixedvars"):
      raise ExportError(f"step {j} binds variables, which the importer does not support")
    if not isinstance(ebufs, list):
      raise ExportError(f"step {j} has no buffer list")
    args = [slot(j, i, b) for i, b in enumerate(ebufs)]
    if _is(prg, "BufferCopy"):
      if len(args) != 2:
        raise ExportError(f"step {j} copies between {len(args)} buffers, expected 2")
      prog.steps.append(Step("copy", args))
      continue
    if not (_is(prg, "CompiledRunner") and prg.args and _is(prg.args[0], "ProgramSpec")):
      raise ExportError(f"step {j} runs a {getattr(prg, 'cls', type(prg).__name__)}, which the importer does not support")
    p = prg.args[0]
    aux = p.field("aux")
    ptrs = list(aux[0]) if isinstance(aux, list) and aux and isinstance(aux[0], tuple) else None
    globs = p.field("globals")
    if not isinstance(globs, list) or ptrs is None or len(ptrs) != len(globs) or len(args) != len(globs):
      raise ExportError(f"step {j} ({ANSI.sub('', str(p.field('name')))}): parameters, buffers and pointer types disagree")
    lib = p.field("lib")
    k = Kernel(
      name=ANSI.sub("", str(p.field("name"))),
      device=str(p.field("device", "")),
      src=p.field("src") if isinstance(p.field("src"), str) else None,
      lib=bytes(lib) if isinstance(lib, (bytes, bytearray)) else None,
      global_size=p.field("global_size"),
      local_size=p.field("local_size"),
      ptrs=ptrs,
      outs={i for i, g in enumerate(globs) if g in set(p.field("outs") or [])},
      has_vars=bool(p.field("vars")),
    )
    prog.steps.append(Step("kernel", args, k))

  rets = ret if isinstance(ret, (tuple, list)) else (ret,)
  prog.rets = [_tensor_buffer(t) for t in rets]
  return prog


# ---------------------------------------------------------------- linear layouts


def _op(u) -> int | None:
  """A UOp record's op number (its Ops record's value)."""
  if not (_is(u, "UOp") and len(u.args) >= 4 and _is(u.args[0], "Ops") and u.args[0].args and isinstance(u.args[0].args[0], int)):
    return None
  return u.args[0].args[0]


def _dtype_of(u):
  return u.args[1] if _is(u, "UOp") and len(u.args) >= 2 else None


def _itemsize(dt) -> int | None:
  if isinstance(dt, Record) and dt.name in ("DType", "PtrDType") and len(dt.args) >= 5 and isinstance(dt.args[1], int) and dt.args[1] % 8 == 0:
    return dt.args[1] // 8 * (dt.args[4] if isinstance(dt.args[4], int) else 1)
  return None


def _numbering(linear, calls) -> tuple[str, dict]:
  """The known Ops numbering that the LINEAR/CALL/PROGRAM numbers seen agree with."""
  seen_call = {_op(c) for c in calls}
  progs = [c.args[2][0] for c in calls if c.args[2] and _is(c.args[2][0], "UOp") and _is(c.args[2][0].args[3], "ProgramInfo")]
  seen_prog = {_op(p) for p in progs}
  for name, t in OPS.items():
    if _op(linear) == t["LINEAR"] and seen_call == {t["CALL"]} and seen_prog <= {t["PROGRAM"]}:
      return name, t
  raise ExportError(
    f"the pickle's UOp numbering (LINEAR {_op(linear)}, CALL {sorted(x for x in seen_call if x is not None)}) matches no "
    f"tinygrad commit the reader knows ({', '.join(OPS)})"
  )


def from_linear(cj, layout: str, kernels_only: bool = False) -> tuple[Program, str]:
  """(Program, Ops numbering name) for a linear-layout CapturedJit(ret, linear, expected_names, expected_input_info).
  `kernels_only`: only the kernel steps, without their arguments (enough to say why a program is not converted)."""
  ret, linear, names, input_info = cj.args
  if not (_is(linear, "UOp") and isinstance(linear.args[2], tuple)):
    raise ExportError("the pickle's program is not a LINEAR UOp")
  calls = list(linear.args[2])
  if not all(_is(c, "UOp") and _is(c.args[3], "CallInfo") and isinstance(c.args[2], tuple) and c.args[2] for c in calls):
    raise ExportError("the pickle's LINEAR program holds something other than CALLs")
  numbering, T = _numbering(linear, calls)
  if not isinstance(names, list):
    raise ExportError("the pickle's CapturedJit has no input names")
  prog = Program(layout, names=list(names))
  for k in range(len(names)):
    info = input_info[k] if isinstance(input_info, list) and k < len(input_info) and isinstance(input_info[k], tuple) else None
    prog.input_info.append((info[0], info[2]) if info and len(info) >= 3 else (None, None))

  def slot(j: int, i: int, a) -> Slot:
    op, what = _op(a), f"call {j} argument {i}"
    if op == T["BUFFER"] and len(a.args) >= 7 and _is(a.args[6], "Buffer"):
      return Slot(buf=a.args[6])
    if op == T.get("BUFFER_VIEW") and isinstance(a.args[3], tuple) and len(a.args[3]) == 2 and a.args[2]:
      base, (n, off) = a.args[2][0], a.args[3]
      item = _itemsize(_dtype_of(a))
      if not (_op(base) == T["BUFFER"] and len(base.args) >= 7 and _is(base.args[6], "Buffer")):
        raise ExportError(f"{what} is a view of something other than a buffer")
      if not (isinstance(n, int) and isinstance(off, int) and n > 0 and off >= 0 and item):
        raise ExportError(f"{what} is a view with unreadable size/offset")
      return Slot(buf=base.args[6], offset=off * item, nbytes=n * item)
    if op == T["PARAM"]:
      k = a.args[3]
      if isinstance(k, Record):
        raise ExportError(f"{what} is a ParamArg input, which the reader does not convert in the {layout} layout")
      if not (isinstance(k, int) and 0 <= k < len(names)):
        raise ExportError(f"{what} names JIT input {k!r}, which does not exist")
      sz = a.args[2][0].args[3] if a.args[2] and _is(a.args[2][0], "UOp") else None
      item = _itemsize(_dtype_of(a))
      return Slot(input=k, nbytes=sz * item if isinstance(sz, int) and item else None)
    raise ExportError(f"{what} is a UOp {op}, not a buffer, buffer view or input")

  for j, c in enumerate(calls):
    body, cargs = c.args[2][0], c.args[2][1:]
    bop = _op(body)
    if kernels_only and bop != T["PROGRAM"]:
      continue
    args = [] if kernels_only else [slot(j, i, a) for i, a in enumerate(cargs)]
    if bop == T["COPY"]:
      if len(args) != 2:
        raise ExportError(f"call {j} copies between {len(args)} buffers, expected 2")
      prog.steps.append(Step("copy", args))
      continue
    if bop != T["PROGRAM"] or not _is(body.args[3], "ProgramInfo"):
      raise ExportError(f"call {j} runs a UOp {bop}, neither a kernel (PROGRAM) nor a COPY")
    info, src = body.args[3], body.args[2]
    by_op = {_op(s): s for s in src if _is(s, "UOp")}
    device = [s.args[3] for s in src if _is(s, "UOp") and isinstance(s.args[3], str) and not s.args[2] and _op(s) not in (T["SOURCE"],)]
    source, binary = by_op.get(T["SOURCE"]), by_op.get(T["BINARY"])
    text = source.args[3] if source is not None and isinstance(source.args[3], str) else None
    lib = binary.args[3] if binary is not None and isinstance(binary.args[3], (bytes, bytearray)) else None
    aux = info.field("aux")
    ptrs = []
    for e in aux[0] if isinstance(aux, tuple) and aux and isinstance(aux[0], tuple) else ():
      ptrs.append(e[0][1] if isinstance(e, tuple) and len(e) == 1 and isinstance(e[0], tuple) and len(e[0]) == 2 else e)
    globs = info.field("globals")
    if not kernels_only and (not isinstance(globs, tuple) or len(ptrs) != len(globs) or len(args) != len(globs)):
      raise ExportError(f"call {j} ({ANSI.sub('', str(info.field('name')))}): parameters, arguments and pointer types disagree")
    k = Kernel(
      name=ANSI.sub("", str(info.field("name"))),
      device=device[0] if len(device) == 1 else "?",
      src=text,
      lib=bytes(lib) if lib is not None else None,
      global_size=list(info.field("global_size") or ()),
      local_size=list(info.field("local_size") or ()) if info.field("local_size") is not None else None,
      ptrs=ptrs,
      outs={i for i, g in enumerate(globs) if g in set(info.field("outs") or ())},
      has_vars=bool(info.field("vars")),
    )
    prog.steps.append(Step("kernel", args, k))

  rets = ret if isinstance(ret, (tuple, list)) else (ret,)
  prog.rets = [] if kernels_only else [_tensor_buffer(t) for t in rets]
  return prog, numbering
