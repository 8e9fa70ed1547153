"""Import a tinygrad TinyJit pickle whose kernels were compiled by Qualcomm's OpenCL compiler (`DEV=QCOM`, e.g.
openpilot's warp pickles) into a modelrt manifest for adreno-a630, without running any code from the pickle.

The pickle is read by mrt/safe_pickle.py as plain records, so this works although such pickles (written by tinygrad
0.12) do not load with tinygrad 0.14. From the records (tinygrad 0.12 layout: `TinyJit(fxn, CapturedJit(ret,
jit_cache, input_replace, extra_view_inputs, expected_names, expected_st_vars_dtype_device))`, each cache entry an
`ExecItem` whose `prg` is a `CompiledRunner(ProgramSpec)` or a `BufferCopy`) it extracts the schedule in order:
buffer copies (the NPY 3x3 transform copied in) and kernel launches with their global/local sizes and buffer
bindings; each distinct kernel's Qualcomm binary (kept byte for byte; the Rust side parses the container) and OpenCL
C source; the buffers, classified from the schedule: the JIT inputs (`input_replace`), the returned tensors
(outputs), buffers read but never written (weights: the bytes stored in the pickle, e.g. a constant 3x3 transform)
and buffers written before they are read (scratch). Anything outside this subset is refused with one line.
"""

import hashlib
import re

from mrt import safe_pickle
from mrt.safe_pickle import Record
from mrt.targets import ExportError

# tinygrad DType names -> manifest dtypes (numpy spelling).
DTYPES = {
  "bool": "bool",
  "char": "int8",
  "signed char": "int8",
  "unsigned char": "uint8",
  "short": "int16",
  "unsigned short": "uint16",
  "int": "int32",
  "unsigned int": "uint32",
  "long": "int64",
  "unsigned long": "uint64",
  "half": "float16",
  "__bf16": "bfloat16",
  "float": "float32",
  "double": "float64",
}
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _is(r, name: str) -> bool:
  return isinstance(r, Record) and r.name == name


def _captured(obj):
  """The CapturedJit record of a TinyJit pickle, or None."""
  if _is(obj, "TinyJit") or _is(obj, "_TinyJit"):
    cands = [a for a in obj.args if _is(a, "CapturedJit")] + [obj.field("captured")]
    return next((c for c in cands if _is(c, "CapturedJit")), None)
  return obj if _is(obj, "CapturedJit") else None


def _programs(cj):
  for ei in cj.args[1] if len(cj.args) == 6 and isinstance(cj.args[1], list) else []:
    prg = ei.field("prg") if _is(ei, "ExecItem") else None
    if _is(prg, "CompiledRunner") and prg.args and _is(prg.args[0], "ProgramSpec"):
      yield prg.args[0]


def is_qcom_cl(obj) -> bool:
  """A TinyJit in tinygrad's 0.12 ExecItem layout with at least one kernel from Qualcomm's CL compiler."""
  cj = _captured(obj)
  if cj is None:
    return False
  return any(str(p.field("device", "")).split(":")[0] == "QCOM" and "__kernel" in str(p.field("src", "")) for p in _programs(cj))


def _dtype(dt, what: str) -> tuple[str, int]:
  """(manifest dtype, itemsize) of a tinygrad DType/PtrDType record (args: priority, bitsize, name, fmt, count, ...)."""
  if not (isinstance(dt, Record) and dt.name in ("DType", "PtrDType") and len(dt.args) >= 5):
    raise ExportError(f"{what} has no readable dtype")
  name, bits, count = dt.args[2], dt.args[1], dt.args[4]
  if name not in DTYPES or count != 1 or not isinstance(bits, int) or bits % 8:
    raise ExportError(f"{what} has dtype {name!r} x{count}, which the QCOM (CL) importer does not handle")
  return DTYPES[name], bits // 8


def _shape(uop, nbytes: int, itemsize: int) -> list[int]:
  """The shape a RESHAPE-like UOp (x, shape-constant) states, when it covers exactly `nbytes`; else flat."""
  flat = [nbytes // itemsize]
  if not (_is(uop, "UOp") and len(uop.args) >= 4 and isinstance(uop.args[2], tuple) and len(uop.args[2]) == 2):
    return flat
  c = uop.args[2][1]
  if not (_is(c, "UOp") and len(c.args) >= 4 and _is(c.args[1], "DType") and c.args[2] == ()):
    return flat
  n, arg = c.args[1].args[4], c.args[3]
  shape = list(arg) if isinstance(arg, tuple) else [arg] * n if isinstance(arg, int) else None
  if shape is None or len(shape) != n or not all(isinstance(s, int) and s > 0 for s in shape):
    return flat
  prod = 1
  for s in shape:
    prod *= s
  return shape if prod * itemsize == nbytes else flat


class _Buffers:
  """Buffer records -> manifest buffer ids, in first-use order."""

  def __init__(self):
    self.ids, self.rows = {}, []

  def of(self, b, what: str) -> int:
    if id(b) in self.ids:
      return self.ids[id(b)]
    if not (_is(b, "Buffer") and len(b.args) >= 6 and isinstance(b.args[1], int)):
      raise ExportError(f"{what} is not a plain tinygrad Buffer (views and sub-buffers are not supported)")
    dev = str(b.args[0]).split(":")[0]
    if dev != "QCOM":
      raise ExportError(f"{what} lives on device {b.args[0]}, expected QCOM")
    dtype, item = _dtype(b.args[2], what)
    init = b.args[5]
    self.ids[id(b)] = len(self.rows)
    self.rows.append({"size": b.args[1] * item, "dtype": dtype, "init": bytes(init) if init is not None else None, "shape": None})
    return self.ids[id(b)]


def convert(obj, sha256: str, log) -> tuple[dict, dict]:
  """(manifest dict, blobs) for a QCOM (CL) TinyJit read by safe_pickle."""
  cj = _captured(obj)
  if cj is None or len(cj.args) != 6:
    raise ExportError("the pickle is not a TinyJit in tinygrad's 0.12 ExecItem layout, the one QCOM (CL) layout supported")
  ret, cache, input_replace, extra_views, names, input_info = cj.args
  if extra_views:
    raise ExportError("the pickle has extra view inputs, which the QCOM (CL) importer does not support")
  if not isinstance(cache, list) or not isinstance(input_replace, dict) or not isinstance(names, list):
    raise ExportError("the pickle's CapturedJit fields are not the tinygrad 0.12 ones")
  bufs = _Buffers()
  inputs: dict[int, dict] = {}  # JIT input index -> {"size", "dtype", "buffer"}
  kernels, kernel_ids, ops, blobs = [], {}, [], {}
  written, read_first = set(), set()

  def use(j: int, i: int, b, role: str, size: int | None, dtype: str | None) -> int:
    """Manifest buffer id for argument i of step j (a JIT input when the slot is None)."""
    if (j, i) in input_replace:
      k = input_replace[(j, i)]
      if not isinstance(k, int) or not 0 <= k < len(names):
        raise ExportError(f"step {j} argument {i} names JIT input {k!r}, which does not exist")
      inp = inputs.setdefault(k, {"size": size, "dtype": dtype, "buffer": None})
      if size is not None and inp["size"] not in (None, size):
        raise ExportError(f"JIT input {k} is used with sizes {inp['size']} and {size}")
      inp["size"] = inp["size"] or size
      inp["dtype"] = inp["dtype"] or dtype
      if inp["buffer"] is None:
        inp["buffer"] = len(bufs.rows)
        bufs.rows.append({"size": None, "dtype": None, "init": None, "shape": None, "input": k})
      bid = inp["buffer"]
    else:
      if b is None:
        raise ExportError(f"step {j} argument {i} has no buffer and is not a JIT input")
      bid = bufs.of(b, f"step {j} argument {i}")
    if role == "out":
      written.add(bid)
    elif bid not in written:
      read_first.add(bid)
    return bid

  for j, ei in enumerate(cache):
    if not _is(ei, "ExecItem"):
      raise ExportError(f"step {j} is a {getattr(ei, 'cls', type(ei).__name__)}, not an ExecItem")
    prg, ebufs = ei.field("prg"), ei.field("bufs")
    if ei.field("fixedvars"):
      raise ExportError(f"step {j} binds variables, which the QCOM (CL) importer does not support")
    if not isinstance(ebufs, list):
      raise ExportError(f"step {j} has no buffer list")
    if _is(prg, "BufferCopy"):
      if len(ebufs) != 2:
        raise ExportError(f"step {j} copies between {len(ebufs)} buffers, expected 2")
      dst_rec = ebufs[0]
      dst = use(j, 0, dst_rec, "out", None, None)
      size = bufs.rows[dst]["size"]
      src = use(j, 1, ebufs[1], "in", size, bufs.rows[dst]["dtype"])
      if size is None:
        raise ExportError(f"step {j} copies into a JIT input, which the QCOM (CL) importer does not support")
      ops.append({"phase": "run", "op": "copy", "dst": {"buffer": dst, "offset": 0}, "src": {"buffer": src, "offset": 0}, "size": size})
      continue
    if not (_is(prg, "CompiledRunner") and prg.args and _is(prg.args[0], "ProgramSpec")):
      raise ExportError(f"step {j} runs a {getattr(prg, 'cls', type(prg).__name__)}, which the QCOM (CL) importer does not support")
    p = prg.args[0]
    src, lib, dev = p.field("src"), p.field("lib"), str(p.field("device", ""))
    if dev.split(":")[0] != "QCOM" or not isinstance(src, str) or "__kernel" not in src or not isinstance(lib, (bytes, bytearray)):
      raise ExportError(f"step {j} is not a Qualcomm-compiled (QCOM CL) kernel with its binary")
    if p.field("vars"):
      raise ExportError(f"step {j} ({ANSI.sub('', str(p.field('name')))}) takes int variables, which the QCOM (CL) importer does not support")
    m = re.search(r"__kernel\s+void\s+(\w+)\s*\(", src)
    if m is None:
      raise ExportError(f"step {j}: the OpenCL source has no kernel function")
    entry = m.group(1)
    gsz, lsz, globs = p.field("global_size"), p.field("local_size"), p.field("globals")
    aux = p.field("aux")
    ptrs = aux[0] if isinstance(aux, list) and aux and isinstance(aux[0], tuple) else None
    if not (
      isinstance(gsz, list) and isinstance(lsz, list) and len(gsz) == 3 and len(lsz) == 3 and all(isinstance(x, int) and x > 0 for x in gsz + lsz)
    ):
      raise ExportError(f"step {j} ({entry}) has no integer global/local sizes")
    if not isinstance(globs, list) or ptrs is None or len(ptrs) != len(globs) or len(ebufs) != len(globs):
      raise ExportError(f"step {j} ({entry}): parameters, buffers and pointer types disagree")
    outs = set(p.field("outs") or [])
    key = (entry, bytes(lib))
    if key not in kernel_ids:
      kid = len(kernels)
      kernel_ids[key] = kid
      params = [{"kind": "buffer", "dtype": _dtype(ptrs[i], f"kernel {entry} parameter {i}")[0]} for i in range(len(globs))]
      blobs[f"blobs/k{kid}.bin"] = bytes(lib)
      blobs[f"blobs/k{kid}.cl"] = src.encode()
      kernels.append(
        {"name": entry, "entry": entry, "binary": f"blobs/k{kid}.bin", "source": f"blobs/k{kid}.cl", "params": params, "meta": {"qcomcl": {}}}
      )
    kid = kernel_ids[key]
    args = []
    for i, g in enumerate(globs):
      dtype, item = _dtype(ptrs[i], f"kernel {entry} parameter {i}")
      size = ptrs[i].args[-1] * item if isinstance(ptrs[i].args[-1], int) and ptrs[i].args[-1] > 0 else None
      bid = use(j, i, ebufs[i], "out" if g in outs else "in", size, dtype)
      nbytes = bufs.rows[bid]["size"]
      if nbytes is None and bufs.rows[bid].get("input") is not None:
        nbytes = inputs[bufs.rows[bid]["input"]]["size"]
      if nbytes is None:
        raise ExportError(f"step {j} ({entry}) argument {i}: the buffer size is unknown")
      args.append({"buffer": bid, "offset": 0, "size": nbytes})
    ops.append({"phase": "run", "op": "kernel", "kernel": kid, "args": args, "global": gsz, "local": lsz})

  # JIT inputs: sizes from their uses, dtypes/shapes from the pickle's input info.
  in_bind = []
  for k in range(len(names)):
    if k not in inputs:
      raise ExportError(f"JIT input {k} is never used by the schedule")
    inp, row = inputs[k], bufs.rows[inputs[k]["buffer"]]
    if inp["size"] is None:
      raise ExportError(f"the size of JIT input {k} cannot be told from the schedule")
    info = input_info[k] if isinstance(input_info, list) and k < len(input_info) and isinstance(input_info[k], tuple) else None
    dtype, item = _dtype(info[2], f"JIT input {k}") if info and len(info) >= 3 else (inp["dtype"], 1)
    row.update(size=inp["size"], dtype=dtype)
    name = names[k] if isinstance(names[k], str) else f"input{names[k]}"
    in_bind.append(
      {"name": name, "buffer": inp["buffer"], "offset": 0, "shape": _shape(info[0] if info else None, inp["size"], item), "dtype": dtype}
    )

  out_bind = []
  rets = ret if isinstance(ret, (tuple, list)) else (ret,)
  for n, t in enumerate(rets):
    u = t.field("uop") if _is(t, "Tensor") else None
    found = [r for r in safe_pickle.walk(u) if _is(r, "Buffer")] if u is not None else []
    if len(found) != 1 or id(found[0]) not in bufs.ids:
      raise ExportError(f"returned value {n} is not one buffer the schedule writes")
    bid = bufs.ids[id(found[0])]
    row = bufs.rows[bid]
    if row.get("output") is not None:
      raise ExportError(f"returned values {row['output']} and {n} are the same buffer")
    row["output"] = n
    item = {"uint8": 1, "int8": 1, "bool": 1, "int16": 2, "uint16": 2, "float16": 2, "bfloat16": 2}.get(row["dtype"], 4)
    item = 8 if row["dtype"] in ("int64", "uint64", "float64") else item
    out_bind.append({"name": f"output{n}", "buffer": bid, "offset": 0, "shape": _shape(u, row["size"], item), "dtype": row["dtype"]})

  buffers = []
  for bid, row in enumerate(bufs.rows):
    if row.get("input") is not None:
      kind, label = "input", f"input:{in_bind[row['input']]['name']}"
    elif row.get("output") is not None:
      kind, label = "output", f"output:output{row['output']}"
      if bid in read_first:
        raise ExportError(f"returned value {row['output']} is read before the schedule writes it (recurrent state), which is not supported")
    elif bid not in written:
      kind, label = "weight", f"pickle:buffer{bid}"
      if row["init"] is None or len(row["init"]) != row["size"]:
        raise ExportError(f"buffer {bid} is read but never written and the pickle holds no data for it")
    elif bid in read_first:
      kind, label = "state", f"pickle:buffer{bid}"
      if row["init"] is None or len(row["init"]) != row["size"]:
        raise ExportError(f"buffer {bid} is read before it is written and the pickle holds no data for it")
    else:
      kind, label = "scratch", f"pickle:buffer{bid}"
    b = {"id": bid, "size": row["size"], "dtype": row["dtype"], "kind": kind, "blob": None, "label": label}
    if kind in ("weight", "state"):
      b["blob"] = f"blobs/b{bid}.bin"
      blobs[b["blob"]] = row["init"]
    buffers.append(b)

  log(
    f"QCOM (CL) pickle: {len(ops)} steps ({sum(o['op'] == 'copy' for o in ops)} copies, {sum(o['op'] == 'kernel' for o in ops)} launches of "
    f"{len(kernels)} kernels), {len(in_bind)} inputs, {len(out_bind)} outputs, {sum(b['kind'] == 'weight' for b in buffers)} weight buffers"
  )
  manifest = {
    "format": 1,
    "producer": {
      "tinygrad": "0.12 (pickle)",
      "tinymesa": None,
      "onnx_sha256": sha256,
      "dev": "QCOM",
      "renderer": "QCOMCL",
      "flags": {"SOURCE": "pickle", "KERNELS": "qualcomm-cl"},
    },
    "target": {"kind": "adreno", "chip": 630, "image": False, "half": False},
    "buffers": buffers,
    "inputs": in_bind,
    "outputs": out_bind,
    "kernels": kernels,
    "ops": ops,
    "reference": None,
  }
  return manifest, blobs


def sha256_of(path: str) -> str:
  with open(path, "rb") as f:
    return hashlib.sha256(f.read()).hexdigest()
