"""Turn a captured TinyJit program into the neutral modelrt manifest (format 1, docs/hw/tinygrad-export.md §10).

Walks the captured call list in execution order (init phase first), never de-duplicating calls, resolves every argument
to (base buffer, byte offset, byte size), classifies buffers (docs/hw/tinygrad-export.md §5), and collects kernels (deduped
by binary+entry+params+meta), weight bytes and per-target kernel metadata.
"""

import hashlib
import json
import math
import re
import sys

import numpy as np
from tinygrad.engine.realize import get_call_arg_uops, get_call_outs_ins, get_call_var_uops
from tinygrad.helpers import is_image_shape, prod
from tinygrad.uop.ops import Ops, UOp

from mrt.targets import ExportError

HOST_DEVICES = ("PYTHON", "NPY", "DISK")
DTYPE_NAMES = {
  "float": "float32",
  "half": "float16",
  "__bf16": "bfloat16",
  "double": "float64",
  "signed char": "int8",
  "unsigned char": "uint8",
  "short": "int16",
  "unsigned short": "uint16",
  "int": "int32",
  "unsigned int": "uint32",
  "long": "int64",
  "unsigned long": "uint64",
  "bool": "bool",
}


def dtype_name(dt) -> str:
  dt = getattr(dt, "base", dt)
  if (n := DTYPE_NAMES.get(dt.name)) is None:
    raise ExportError(f"unsupported dtype {dt.name}")
  return n


def flatten_calls(linear: UOp) -> list[UOp]:
  """Execution-ordered calls, graph batches unwrapped, repeated calls kept (docs/hw/tinygrad-export.md §4)."""
  out: list[UOp] = []
  for call in linear.src:
    body = call.src[0]
    if body.op is Ops.CUSTOM_FUNCTION and body.arg == "graph":
      out += flatten_calls(body.src[0])
    elif body.op is Ops.CUSTOM_FUNCTION:
      raise ExportError(f"unsupported captured call CUSTOM_FUNCTION '{body.arg}'")
    elif body.op in (Ops.PROGRAM, Ops.COPY):
      out.append(call)
    else:
      raise ExportError(f"unsupported captured call {body.op}")
  return out


class NeedsMaterialize(Exception):
  """Outputs that are views tinygrad left non-contiguous (permutes, expands, strided slices): recapture with them
  materialized into contiguous buffers."""

  def __init__(self, names: list[str]):
    super().__init__(", ".join(names))
    self.names = names


class _Intervals:
  """Byte ranges written so far in one base buffer (merged, sorted)."""

  def __init__(self):
    self.iv: list[tuple[int, int]] = []

  def covers(self, lo: int, hi: int) -> bool:
    return any(a <= lo and hi <= b for a, b in self.iv)

  def add(self, lo: int, hi: int):
    merged = []
    for a, b in sorted([*self.iv, (lo, hi)]):
      if merged and a <= merged[-1][1]:
        merged[-1] = (merged[-1][0], max(merged[-1][1], b))
      else:
        merged.append((a, b))
    self.iv = merged


class ManifestBuilder:
  def __init__(
    self,
    cfg_target: dict,
    kernel_meta,
    device: str,
    null_device: bool,
    param_info: list[dict],
    onnx_bytes: dict,
    onnx_labels: dict,
    out_dir_blobs: dict,
  ):
    self.target, self.kernel_meta, self.device, self.null = cfg_target, kernel_meta, device, null_device
    self.param_info = param_info  # per JIT input slot: {"name", "shape", "dtype", "device"}
    self.onnx_bytes, self.onnx_labels = onnx_bytes, onnx_labels
    self.blobs = out_dir_blobs  # relative path -> bytes (filled here)
    self.buf_ids: dict = {}  # key -> id
    self.buf_base: dict = {}  # id -> base UOp
    self.buffers: list[dict] = []
    self.written: dict[int, _Intervals] = {}
    self.read_before_write: set[int] = set()
    self.ever_written: set[int] = set()
    self.init_written: set[int] = set()  # results of the one-time (init) phase: must persist across inferences
    self.run_written: set[int] = set()  # buffers the per-inference program writes
    self.phase = "run"
    self.kernels: list[dict] = []
    self.kernel_keys: dict = {}
    self.ops: list[dict] = []

  # ---- buffers ----
  def _buffer_id(self, base: UOp) -> int:
    key = ("param", base.arg.slot) if base.op is Ops.PARAM else base
    if (bid := self.buf_ids.get(key)) is not None:
      return bid
    bid = self.buf_ids[key] = len(self.buffers)
    dev = base.device
    if isinstance(dev, tuple):
      raise ExportError("multi-device buffers are not supported")
    if base.op is Ops.PARAM:
      info = self.param_info[base.arg.slot]
      size = prod(info["capture_shape"]) * base.dtype.itemsize
      label = f"input:{info['name']}"
    else:
      size = base.max_numel() * base.dtype.itemsize
      label = self.onnx_labels.get(base)
      label = (
        f"onnx:{label}"
        if label is not None
        else (
          "arena"
          if base.dtype.name == "signed char" and dev == self.device
          else f"host:{dev.split(':')[0].lower()}"
          if dev.startswith(HOST_DEVICES)
          else "device"
        )
      )
    if not (dev == self.device or dev.startswith(HOST_DEVICES)):
      raise ExportError(f"buffer on unexpected device {dev} (export device is {self.device})")
    self.buffers.append({"id": bid, "size": int(size), "dtype": dtype_name(base.dtype), "kind": None, "blob": None, "label": label})
    self.buf_base[bid] = base
    self.written[bid] = _Intervals()
    return bid

  def resolve(self, u: UOp) -> tuple[int, int, int]:
    """argument UOp -> (buffer id, byte offset, byte size)"""
    if u.op in (Ops.MSELECT, Ops.MSTACK):
      raise ExportError(f"multi-device argument {u.op} is not supported (single device only)")
    if u.op in (Ops.BUFFER, Ops.PARAM):
      bid = self._buffer_id(u)
      return bid, 0, self.buffers[bid]["size"]
    if (cv := u.contiguous_view()) is None:
      raise ExportError(f"non-contiguous buffer view {u.op} in a captured call")
    base, off = cv
    if base.op not in (Ops.BUFFER, Ops.PARAM):
      raise ExportError(f"view of unexpected base {base.op}")
    bid = self._buffer_id(base)
    boff, bsize = int(off) * base.dtype.itemsize, int(prod(u.max_shape)) * u.dtype.itemsize
    if boff < 0 or boff + bsize > self.buffers[bid]["size"]:
      raise ExportError(f"view [{boff}, +{bsize}) outside buffer {bid}")
    return bid, boff, bsize

  def _access(self, bid: int, off: int, size: int, read: bool, write: bool):
    if read and not self.written[bid].covers(off, off + size):
      self.read_before_write.add(bid)
    if write and self.phase == "init":
      self.init_written.add(bid)
    if write and self.phase == "run":
      self.run_written.add(bid)
    if write:
      self.written[bid].add(off, off + size)
      self.ever_written.add(bid)

  # ---- ops ----
  def add_copy(self, phase: str, call: UOp):
    args = get_call_arg_uops(call)
    if len(args) != 2:
      raise ExportError(f"COPY call with {len(args)} arguments")
    (d, doff, dsz), (s, soff, ssz) = self.resolve(args[0]), self.resolve(args[1])
    if dsz != ssz:
      raise ExportError(f"COPY size mismatch {dsz} != {ssz}")
    self._access(s, soff, ssz, True, False)
    self._access(d, doff, dsz, False, True)
    if self.buf_base[s].op is Ops.PARAM and self.buffers[d]["label"] == "device":
      self.buffers[d]["label"] = f"upload:{self.param_info[self.buf_base[s].arg.slot]['name']}"
    self.ops.append({"phase": phase, "op": "copy", "dst": {"buffer": d, "offset": doff}, "src": {"buffer": s, "offset": soff}, "size": dsz})

  def add_kernel(self, phase: str, call: UOp):
    prg = call.src[0]
    info = prg.arg
    elf = prg.to_elf()
    sig = elf.signature
    # One signature entry per buffer *use*, then the vars: a buffer the kernel reads both as an image and as a plain
    # buffer appears twice, with the same call slot. tinygrad binds every entry (images to descriptors, buffers to
    # pointers), so each becomes its own param and arg here.
    nglob = len(sig) - len(info.vars)
    if sorted({s[1] for s in sig[:nglob]}) != sorted(info.globals):
      raise ExportError(f"kernel {info.function_name}: signature slots {[s[1] for s in sig[:nglob]]} != globals {info.globals}")
    params = []
    for i, (_, _, dt, shape) in enumerate(sig):
      if i < nglob:
        p = {"kind": "image" if is_image_shape(shape) else "buffer", "dtype": dtype_name(dt)}
        if p["kind"] == "image":
          p.update(height=int(shape[0]), width=int(shape[1]))
      else:
        p = {"kind": "core_id" if sig[i][0] == "core_id" else "var", "dtype": dtype_name(dt)}
      params.append(p)
    binary, source, meta, extra_blobs = self.kernel_meta(prg, elf)
    kid = self._kernel_id(info.function_name, binary, source, params, meta, extra_blobs)

    arg_uops = get_call_arg_uops(call)
    outs, ins = get_call_outs_ins(call)
    args = []
    for i, (_, slot, _, _) in enumerate(sig[:nglob]):
      bid, off, size = self.resolve(arg_uops[slot])
      p = params[i]
      need = (p["height"] * p["width"] * 4 if p["kind"] == "image" else prod(sig[i][3])) * sig[i][2].itemsize
      if need > size:
        raise ExportError(f"kernel {info.function_name} param {i} needs {need} bytes, view has {size}")
      read, write = slot in ins, slot in outs
      if not read and not write:
        read = True  # unknown access: be conservative (requires initial data if never written)
      self._access(bid, off, size, read, False)
      args.append({"buffer": bid, "offset": off, "size": size})
    for i, (_, slot, _, _) in enumerate(sig[:nglob]):
      if slot in outs:
        self._access(args[i]["buffer"], args[i]["offset"], args[i]["size"], False, True)
    for v, bound in zip(info.vars, get_call_var_uops(call, prg)):
      if v.expr == "_device_num":
        raise ExportError(f"kernel {info.function_name} is multi-device (_device_num); single device only")
      if v.expr == "core_id":
        args.append({"int": 0})
      elif bound.op is Ops.CONST:
        args.append({"int": int(bound.arg)})
      else:
        raise ExportError(f"kernel {info.function_name} has an unbound symbolic variable '{v.expr}'")
    gsize = [math.ceil(g) if isinstance(g, (int, float)) else None for g in info.global_size]
    if any(g is None for g in gsize):
      raise ExportError(f"kernel {info.function_name} has symbolic launch dims")
    local = info.local_size
    if local is None:
      if self.target["kind"] != "cpu":
        raise ExportError(f"kernel {info.function_name} has no local size after compile")
      local = (1, 1, 1)
    self.ops.append({"phase": phase, "op": "kernel", "kernel": kid, "args": args, "global": gsize, "local": [int(x) for x in local]})

  def _kernel_id(self, entry, binary, source, params, meta, extra_blobs) -> int:
    key = (
      hashlib.sha256(binary).hexdigest(),
      entry,
      json.dumps(params, sort_keys=True),
      json.dumps(meta, sort_keys=True),
      tuple((k, hashlib.sha256(v).hexdigest()) for k, v in sorted(extra_blobs.items())),
    )
    if (kid := self.kernel_keys.get(key)) is not None:
      return kid
    kid = self.kernel_keys[key] = len(self.kernels)
    self.blobs[f"blobs/k{kid}.bin"] = binary
    src_path = None
    if source is not None:
      src_path = f"blobs/k{kid}.src"
      self.blobs[src_path] = source
    # extra blobs (e.g. IR3 immediates) are referenced from meta by placeholder "{kid}" paths
    meta = json.loads(json.dumps(meta).replace("{kid}", str(kid)))
    for k, v in extra_blobs.items():
      self.blobs[k.replace("{kid}", str(kid))] = v
    self.kernels.append({"name": entry, "entry": entry, "binary": f"blobs/k{kid}.bin", "source": src_path, "params": params, "meta": meta})
    return kid

  def add_phase(self, phase: str, calls: list[UOp]):
    self.phase = phase
    for call in calls:
      if call.src[0].op is Ops.COPY:
        self.add_copy(phase, call)
      else:
        self.add_kernel(phase, call)

  # ---- finish ----
  def _output_view(self, u: UOp, shape: tuple) -> tuple[int, int, int] | None:
    """(buffer id, byte offset, byte size) when `u` is provably a row-major contiguous view of one real buffer, else None.
    Only tinygrad's own contiguous_view() decides this: looking through movement ops to `.base` would hand back the raw
    buffer of a permuted/expanded/strided view (the bug behind silently wrong DepthToSpace/Transpose outputs)."""
    if u.op in (Ops.MSELECT, Ops.MSTACK):
      raise ExportError(f"multi-device output {u.op} is not supported (single device only)")
    if u.op is Ops.BUFFER:
      base, off = u, 0
    elif (cv := u.contiguous_view()) is None or cv[0].op is not Ops.BUFFER:
      return None
    else:
      base, off = cv
    bid = self._buffer_id(base)
    boff, bsize = int(off) * base.dtype.itemsize, int(prod(shape)) * u.dtype.itemsize
    if base.dtype != u.dtype or boff < 0 or boff + bsize > self.buffers[bid]["size"]:
      return None
    return bid, boff, bsize

  def _materialize_copy(self, name: str, bid: int, off: int, size: int, dt) -> int:
    """An output the program never writes (an ONNX constant, a result of the one-time phase): the bundle copies it into an
    output buffer of its own at the end of every run, so the output is a real buffer the runtime may hand out."""
    out = len(self.buffers)
    self.buf_ids[("materialized-output", name)] = out
    self.buffers.append({"id": out, "size": int(size), "dtype": dtype_name(dt), "kind": None, "blob": None, "label": f"output:{name}"})
    self.buf_base[out] = None
    self.written[out] = _Intervals()
    self._access(bid, off, size, True, False)
    self._access(out, 0, size, False, True)
    self.ops.append({"phase": "run", "op": "copy", "dst": {"buffer": out, "offset": 0}, "src": {"buffer": bid, "offset": off}, "size": int(size)})
    return out

  def finish(self, outputs: list[tuple[str, UOp, tuple, object]], state_init: dict | None = None) -> tuple[list, list, list]:
    """outputs: (name, output UOp, shape, dtype). Returns (buffers, inputs, outputs) records. `state_init`: initial
    contents of inputs the program carries across steps (mrt/state.py), which become state buffers.
    Raises NeedsMaterialize naming the outputs that are not contiguous views of a buffer."""
    from mrt.state import carried_buffers, input_state_bytes

    carried, state_inputs = carried_buffers(self), input_state_bytes(self, state_init)
    inputs = []
    for slot, info in enumerate(self.param_info):
      bid = self._buffer_id(UOp.param(slot, info["tg_dtype"], info["capture_shape"], info["device"]))
      if slot in state_inputs:
        continue
      inputs.append({"name": info["name"], "buffer": bid, "offset": 0, "shape": list(info["shape"]), "dtype": dtype_name(info["tg_dtype"])})
    views, not_views = [], []
    for name, u, shape, dt in outputs:
      if prod(shape) == 0:
        raise ExportError(f"output '{name}' has no elements (shape {list(shape)}); bundles cannot carry empty tensors")
      if u.dtype != dt:
        raise ExportError(f"output '{name}' is {u.dtype.name} but the bundle declares it {dt.name}")
      if prod(u.max_shape) != prod(shape):
        raise ExportError(f"output '{name}' has {prod(u.max_shape)} elements but shape {list(shape)}")
      if (v := self._output_view(u, shape)) is None:
        not_views.append(name)
      else:
        views.append((name, v, shape, dt))
    if not_views:
      raise NeedsMaterialize(not_views)
    out_recs, out_ids = [], set()
    for name, (bid, off, size), shape, dt in views:
      if (
        bid not in self.run_written or not self.written[bid].covers(off, off + size) or self.buf_base[bid].op is Ops.PARAM or bid in carried
      ):  # a view of state is copied out, so the state buffer keeps its kind and initial bytes
        bid, off = self._materialize_copy(name, bid, off, size, dt), 0
      out_ids.add(bid)
      if self.buffers[bid]["label"] == "device":
        self.buffers[bid]["label"] = f"output:{name}"
      out_recs.append({"name": name, "buffer": bid, "offset": off, "shape": [int(s) for s in shape], "dtype": dtype_name(dt)})
    for b in self.buffers:
      bid = b["id"]
      base = self.buf_base[bid]
      if base is not None and base.op is Ops.PARAM and base.arg.slot in state_inputs:
        b["kind"], b["blob"], b["label"] = "state", f"blobs/buf{bid}.bin", f"state:{self.param_info[base.arg.slot]['name']}"
        self.blobs[b["blob"]] = state_inputs[base.arg.slot]
      elif base is not None and base.op is Ops.PARAM:
        b["kind"] = "input"
        if bid in self.ever_written:
          print(
            f"exporter: note: the program writes into input buffer {bid} ({b['label']}); the runtime must re-upload it before every inference",
            file=sys.stderr,
          )
      elif bid in out_ids:
        b["kind"] = "output"
      elif bid in self.read_before_write:
        b["kind"] = "state" if bid in self.ever_written else "weight"
        if b["kind"] == "state" and b["label"] == "device":
          b["label"] = "state"
        data = self._initial_bytes(base, b)
        b["blob"] = f"blobs/buf{bid}.bin"
        self.blobs[b["blob"]] = data
      else:
        b["kind"] = "scratch"
        if bid in self.init_written and b["label"] == "device":
          b["label"] = "init-result"
    return self.buffers, inputs, out_recs

  def _initial_bytes(self, base: UOp, rec: dict) -> bytes:
    dev = base.device
    if not self.null or dev.startswith(HOST_DEVICES):
      buf = base.buffer
      if not buf.is_allocated():
        raise ExportError(f"buffer {rec['id']} ({rec['label']}) is read before written but holds no data")
      data = bytes(buf.as_memoryview())
    elif base in self.onnx_bytes:
      data = self.onnx_bytes[base][1]
    else:
      raise ExportError(
        f"buffer {rec['id']} ({rec['label']}, {rec['size']} bytes) is read before written but has no data "
        "source on a NULL target (not an ONNX initializer, Constant or node tensor attribute)"
      )
    if len(data) != rec["size"]:
      raise ExportError(f"buffer {rec['id']} initial data has {len(data)} bytes, expected {rec['size']}")
    return data


def constant_body(inputs: list, outputs: list, values: dict, blobs: dict) -> dict:
  """The manifest body of a model whose outputs are the same for every input (`values`: name -> numpy array in the
  bundle's dtype): each output is a weight holding its value, copied into the output buffer on every run. Inputs are
  still declared (and uploaded) so the bundle's interface is the model's."""
  buffers, in_recs, out_recs, ops = [], [], [], []

  def add(size, dt, kind, label, blob=None):
    buffers.append({"id": len(buffers), "size": int(size), "dtype": dt, "kind": kind, "blob": blob, "label": label})
    return len(buffers) - 1

  for s in inputs:
    dt = dtype_name_np(s.np_dtype)
    bid = add(max(1, prod(s.shape)) * np.dtype(s.np_dtype).itemsize, dt, "input", f"input:{s.name}")
    in_recs.append({"name": s.name, "buffer": bid, "offset": 0, "shape": list(s.shape), "dtype": dt})
  for o in outputs:
    v = np.asarray(values[o.name]).copy(order="C")  # not np.ascontiguousarray: it turns 0-d into 1-d
    dt = dtype_name_np(v.dtype)
    w = add(v.nbytes, dt, "weight", f"constant:{o.name}", f"blobs/buf{len(buffers)}.bin")
    blobs[buffers[w]["blob"]] = v.tobytes()
    out = add(v.nbytes, dt, "output", f"output:{o.name}")
    ops.append({"phase": "run", "op": "copy", "dst": {"buffer": out, "offset": 0}, "src": {"buffer": w, "offset": 0}, "size": int(v.nbytes)})
    out_recs.append({"name": o.name, "buffer": out, "offset": 0, "shape": [int(d) for d in v.shape], "dtype": dt})
  return {"buffers": buffers, "inputs": in_recs, "outputs": out_recs, "kernels": [], "ops": ops}


NP_DTYPE_NAMES = {
  "float32": "float32",
  "float16": "float16",
  "float64": "float64",
  "int8": "int8",
  "uint8": "uint8",
  "int16": "int16",
  "uint16": "uint16",
  "int32": "int32",
  "uint32": "uint32",
  "int64": "int64",
  "uint64": "uint64",
  "bool": "bool",
}


def dtype_name_np(dt) -> str:
  if (n := NP_DTYPE_NAMES.get(np.dtype(dt).name)) is None:
    raise ExportError(f"unsupported dtype {np.dtype(dt).name}")
  return n


def safe_name(s: str) -> str:
  return re.sub(r"[^A-Za-z0-9_.-]", "_", s)[:64]
