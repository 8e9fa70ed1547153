"""Turn the program description of a tinygrad TinyJit pickle whose kernels were compiled by Qualcomm's OpenCL compiler
(`DEV=QCOM`, e.g. openpilot's warp pickles) into a modelrt manifest for adreno-a630, without running any code from it.

The pickle is read by mrt/safe_pickle.py as plain records and turned into a `Program` by mrt/pickle_program.py (any
of the layouts of mrt/pickle_layout.py). From it this module builds the schedule in order: buffer copies (the NPY 3x3
transform copied in) and kernel launches with their global/local sizes (fractional global sizes as tinygrad's QCOM
path launches them, `launch_sizes`) and buffer bindings; each distinct kernel's Qualcomm binary (kept byte for byte;
the Rust side parses the container) and OpenCL C source; the buffers, classified from the schedule: the JIT inputs,
the returned tensors (outputs), buffers read but never written (weights: the bytes stored in the pickle, e.g. a
constant 3x3 transform) and buffers written before they are read (scratch). A kernel whose `lib` is OpenCL C text
rather than a binary is refused naming the kernel (never written as if it were one). Anything outside this subset is
refused with one line.
"""

import hashlib
import math
import re

from mrt.pickle_program import Program
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


def is_qcom_cl(prog: Program) -> bool:
  """Every kernel of the program is for DEV=QCOM with OpenCL C source (Qualcomm's CL compiler, not Mesa IR3)."""
  ks = [s.kernel for s in prog.steps if s.kernel is not None]
  return bool(ks) and all(k.device.split(":")[0] == "QCOM" and "__kernel" in (k.src or "") for k in ks)


def source_only(lib: bytes | None) -> bool:
  """`lib` holds OpenCL C text rather than a Qualcomm binary (tinygrad v0.12.0-455 compiled QCOM kernels on the
  device at load and pickled the source as `lib`)."""
  if lib is None:
    return True
  head = bytes(lib[:4096])
  try:
    text = head.decode("utf-8")
  except UnicodeDecodeError:
    return False
  return "__kernel" in text or all(c.isprintable() or c in "\n\r\t" for c in text)


def launch_sizes(k, what: str) -> tuple[list[int], list[int], list[int] | None]:
  """(groups, local, threads) for a kernel's stored sizes. tinygrad's work-group tuning stores global/local, a float
  where local does not divide the global work size, and its QCOM path then programs `int(g*l)` threads and `ceil(g)`
  groups per dimension (docs/hw/adreno-kgsl-pm4.md, "Fractional global sizes"). Accepted only where g*l is a whole
  number; `threads` is None when every g is an integer (the plain case)."""
  gsz, lsz = k.global_size, k.local_size
  if not (isinstance(gsz, list) and isinstance(lsz, list) and len(gsz) == 3 and len(lsz) == 3):
    raise ExportError(f"{what} has no global/local sizes")
  if not all(isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in lsz):
    raise ExportError(f"{what} has local size {lsz}, not positive integers")
  if not all(isinstance(x, (int, float)) and not isinstance(x, bool) and x > 0 for x in gsz):
    raise ExportError(f"{what} has global size {gsz}, not positive numbers")
  if all(isinstance(x, int) for x in gsz):
    return list(gsz), list(lsz), None
  groups, threads = [], []
  for g, loc in zip(gsz, lsz):
    t = g * loc
    if isinstance(g, float) and (t != int(t) or not 0 < t < 2**32):
      raise ExportError(f"{what} has global size {gsz} with local {lsz}: {g}*{loc} is not a whole number of threads")
    groups.append(math.ceil(g))
    threads.append(int(t))
  if all(t == gr * loc for t, gr, loc in zip(threads, groups, lsz)):  # whole floats such as 4.0
    return groups, list(lsz), None
  return groups, list(lsz), threads


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


def convert(prog: Program, sha256: str, log, tinygrad: str) -> tuple[dict, dict]:
  """(manifest dict, blobs) for a QCOM (CL) program read from any layout (mrt/pickle_program.py)."""
  names, input_info = prog.names, prog.input_info
  bufs = _Buffers()
  inputs: dict[int, dict] = {}  # JIT input index -> {"size", "dtype", "buffer"}
  kernels, kernel_ids, ops, blobs = [], {}, [], {}
  written, read_first = set(), set()

  def use(j: int, i: int, sl, role: str, size: int | None, dtype: str | None) -> tuple[int, int, int | None]:
    """(manifest buffer id, byte offset, byte size or None) for argument i of step j."""
    if sl.input is not None:
      k = sl.input
      size = sl.nbytes if sl.nbytes is not None else size
      inp = inputs.setdefault(k, {"size": size, "dtype": dtype, "buffer": None})
      if size is not None and inp["size"] not in (None, size):
        raise ExportError(f"JIT input {k} is used with sizes {inp['size']} and {size}")
      inp["size"] = inp["size"] or size
      inp["dtype"] = inp["dtype"] or dtype
      if inp["buffer"] is None:
        inp["buffer"] = len(bufs.rows)
        bufs.rows.append({"size": None, "dtype": None, "init": None, "shape": None, "input": k})
      bid, off, n = inp["buffer"], 0, None
    else:
      bid = bufs.of(sl.buf, f"step {j} argument {i}")
      off, n = sl.offset, sl.nbytes
      if n is not None and off + n > bufs.rows[bid]["size"]:
        raise ExportError(f"step {j} argument {i}: a view of bytes {off}..{off + n} past the buffer's {bufs.rows[bid]['size']}")
    if role == "out":
      written.add(bid)
    elif bid not in written:
      read_first.add(bid)
    return bid, off, n

  def nbytes_of(bid: int, n: int | None) -> int | None:
    if n is not None:
      return n
    row = bufs.rows[bid]
    if row["size"] is None and row.get("input") is not None:
      return inputs[row["input"]]["size"]
    return row["size"]

  fractional = 0
  for j, st in enumerate(prog.steps):
    if st.op == "copy":
      dst, doff, dn = use(j, 0, st.args[0], "out", None, None)
      size = nbytes_of(dst, dn)
      if size is None or bufs.rows[dst].get("input") is not None:
        raise ExportError(f"step {j} copies into a JIT input, which the QCOM (CL) importer does not support")
      src, soff, sn = use(j, 1, st.args[1], "in", size, bufs.rows[dst]["dtype"])
      if nbytes_of(src, sn) not in (None, size):
        raise ExportError(f"step {j} copies {nbytes_of(src, sn)} bytes into {size}")
      ops.append({"phase": "run", "op": "copy", "dst": {"buffer": dst, "offset": doff}, "src": {"buffer": src, "offset": soff}, "size": size})
      continue
    k = st.kernel
    src, lib, dev = k.src, k.lib, k.device
    if dev.split(":")[0] != "QCOM" or not isinstance(src, str) or "__kernel" not in src:
      raise ExportError(f"step {j} ({k.name}) is not a Qualcomm CL (DEV=QCOM) kernel with OpenCL C source")
    m = re.search(r"__kernel\s+void\s+(\w+)\s*\(", src)
    if m is None:
      raise ExportError(f"step {j}: the OpenCL source has no kernel function")
    entry = m.group(1)
    if source_only(lib):
      raise ExportError(
        f"kernel {entry} (step {j}) holds OpenCL C source text where its Qualcomm binary belongs (tinygrad compiled it on "
        "the device at load), and only a comma device's OpenCL compiler can build it; modelrt does not convert such "
        "pickles (a bundle needs the binary) — rebuild the pickle on the device with a tinygrad that stores binaries"
      )
    if k.has_vars:
      raise ExportError(f"step {j} ({entry}) takes int variables, which the QCOM (CL) importer does not support")
    groups, lsz, threads = launch_sizes(k, f"step {j} ({entry})")
    fractional += threads is not None
    ptrs = k.ptrs
    key = (entry, bytes(lib))
    if key not in kernel_ids:
      kid = len(kernels)
      kernel_ids[key] = kid
      params = [{"kind": "buffer", "dtype": _dtype(ptrs[i], f"kernel {entry} parameter {i}")[0]} for i in range(len(ptrs))]
      blobs[f"blobs/k{kid}.bin"] = bytes(lib)
      blobs[f"blobs/k{kid}.cl"] = src.encode()
      kernels.append(
        {"name": entry, "entry": entry, "binary": f"blobs/k{kid}.bin", "source": f"blobs/k{kid}.cl", "params": params, "meta": {"qcomcl": {}}}
      )
    kid = kernel_ids[key]
    args = []
    for i, sl in enumerate(st.args):
      dtype, item = _dtype(ptrs[i], f"kernel {entry} parameter {i}")
      psize = ptrs[i].args[-1] if ptrs[i].name == "PtrDType" else None
      size = psize * item if isinstance(psize, int) and psize > 0 else None
      bid, off, n = use(j, i, sl, "out" if i in k.outs else "in", size, dtype)
      nbytes = nbytes_of(bid, n)
      if nbytes is None:
        raise ExportError(f"step {j} ({entry}) argument {i}: the buffer size is unknown")
      args.append({"buffer": bid, "offset": off, "size": nbytes})
    op = {"phase": "run", "op": "kernel", "kernel": kid, "args": args, "global": groups, "local": lsz}
    if threads is not None:
      op["threads"] = threads
    ops.append(op)

  # JIT inputs: sizes from their uses, dtypes/shapes from the pickle's input info.
  in_bind = []
  for k in range(len(names)):
    if k not in inputs:
      raise ExportError(f"JIT input {k} is never used by the schedule")
    inp, row = inputs[k], bufs.rows[inputs[k]["buffer"]]
    if inp["size"] is None:
      raise ExportError(f"the size of JIT input {k} cannot be told from the schedule")
    shape_uop, dt = input_info[k] if k < len(input_info) else (None, None)
    dtype, item = _dtype(dt, f"JIT input {k}") if dt is not None else (inp["dtype"], 1)
    row.update(size=inp["size"], dtype=dtype)
    name = names[k] if isinstance(names[k], str) else f"input{names[k]}"
    in_bind.append({"name": name, "buffer": inp["buffer"], "offset": 0, "shape": _shape(shape_uop, inp["size"], item), "dtype": dtype})

  out_bind = []
  for n, (rb, u) in enumerate(prog.rets):
    if rb is None or id(rb) not in bufs.ids:
      raise ExportError(f"returned value {n} is not one buffer the schedule writes")
    bid = bufs.ids[id(rb)]
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
    + (f", {fractional} launches with fractional global sizes (run as int(g*l) threads in ceil(g) groups)" if fractional else "")
  )
  manifest = {
    "format": 1,
    "producer": {
      "tinygrad": tinygrad,
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
