"""Capture an ONNX model with tinygrad's TinyJit exactly like openpilot's compile3 (spec tinygrad-export.md §3).

Imported only after the environment has been pinned (see export.py). Returns a `Capture`: the `CapturedJit`, the
one-time (init) linear recorded on NULL targets, and the ONNX data needed to give weight buffers their bytes.
"""
from dataclasses import dataclass, field

import numpy as np
from onnx import AttributeProto as onnx_AttributeProto
from tinygrad import Tensor, TinyJit, Device, dtypes
from tinygrad.helpers import Context
from tinygrad.nn.onnx import OnnxRunner
from tinygrad.uop.ops import UOp, Ops
import tinygrad.engine.jit as tg_jit
from tinygrad.engine.realize import compile_linear

from mrt_targets import ExportError

NUMPY_DTYPES = {dtypes.float32: np.float32, dtypes.float16: np.float16, dtypes.float64: np.float64, dtypes.int8: np.int8,
                dtypes.uint8: np.uint8, dtypes.int16: np.int16, dtypes.uint16: np.uint16, dtypes.int32: np.int32,
                dtypes.uint32: np.uint32, dtypes.int64: np.int64, dtypes.uint64: np.uint64, dtypes.bool: np.bool_}


@dataclass
class InputSpec:
  name: str
  shape: tuple[int, ...]
  np_dtype: type                 # dtype fed to tinygrad (float16 model inputs are fed as float32, like compile3)
  on_device: bool                # compile3 realizes inputs whose name contains "img" on the device instead of NPY


@dataclass
class Capture:
  jit: object                                   # CapturedJit
  output_names: list[str]
  inputs: list[InputSpec]
  onetime: UOp | None = None                    # compiled one-time (init phase) linear, or None
  onnx_bytes: dict = field(default_factory=dict)  # base BUFFER UOp -> (onnx name, bytes) for initializers/Constants
  onnx_labels: dict = field(default_factory=dict)  # base BUFFER UOp -> onnx name (all targets)
  tinygrad_out: dict | None = None              # outputs of the last real run (CPU targets), for the self check


def input_specs(runner: OnnxRunner) -> list[InputSpec]:
  specs = []
  for name, spec in runner.graph_inputs.items():
    if spec.is_sequence: raise ExportError(f"input '{name}' is a sequence; only tensor inputs are supported")
    shape = tuple(d if isinstance(d, int) else 1 for d in spec.shape)  # symbolic dims are set to 1 (compile3)
    dt = dtypes.float32 if spec.dtype == dtypes.float16 else spec.dtype
    if dt not in NUMPY_DTYPES: raise ExportError(f"input '{name}' has unsupported dtype {spec.dtype.name}")
    specs.append(InputSpec(name, shape, NUMPY_DTYPES[dt], "img" in name))
  return specs


def random_inputs(specs: list[InputSpec], seed: int) -> dict[str, np.ndarray]:
  """Seeded inputs (drawn in input-name order): standard normal for floats; uint8 0..255 and int8 0..127 (image-like
  data); wider ints 0..1 (usually indices, which must stay in range for any table size); bool 0/1."""
  rng = np.random.default_rng(seed)
  out = {}
  for s in sorted(specs, key=lambda s: s.name):  # name order, so every caller draws the same values per input
    if np.issubdtype(s.np_dtype, np.floating): out[s.name] = rng.standard_normal(s.shape).astype(s.np_dtype)
    elif s.np_dtype == np.bool_: out[s.name] = rng.integers(0, 2, s.shape).astype(np.bool_)
    elif np.dtype(s.np_dtype).itemsize == 1: out[s.name] = rng.integers(0, 256 if s.np_dtype == np.uint8 else 128, s.shape).astype(s.np_dtype)
    else: out[s.name] = rng.integers(0, 2, s.shape).astype(s.np_dtype)  # wider ints are usually indices: keep them tiny
  return out


def _to_tensors(specs: list[InputSpec], arrays: dict[str, np.ndarray]) -> dict[str, Tensor]:
  return {s.name: (Tensor(arrays[s.name]).realize() if s.on_device else Tensor(arrays[s.name], device="NPY")) for s in specs}


def _python_consts_from_cpu(onnx_path: str, specs: list[InputSpec], arrays: dict[str, np.ndarray]) -> dict:
  """Spec §3.1 step 1: NULL devices hold no data, so compute the python constants with a real CPU run."""
  with Context(DEV="CPU"):
    cpu_runner = OnnxRunner(onnx_path)
    cpu_runner({s.name: Tensor(arrays[s.name]) for s in specs})
  return dict(cpu_runner._python_const_cache)


def _onnx_tensor_sources(model, runner: OnnxRunner) -> list[tuple[str, Tensor, np.ndarray]]:
  """Every tinygrad Tensor the runner built from ONNX data at load time, paired with the numpy value of that data.

  These tensors persist across JIT calls: call 0 realizes them on the device (on NULL: as an uninitialised buffer) and the
  captured program reads them as held buffers. Sources, in this order:
  - initializers, and Constant nodes' `value_*` attributes, via `runner.graph_values[name]`;
  - every TENSOR attribute of every node (e.g. ConstantOfShape's `value`, and Constant's `value`), via the very Tensor
    object in the parsed node's opts. Nodes are paired by position; a mismatch in count or op type is an error.
  """
  from onnx import numpy_helper
  out: list[tuple[str, Tensor, np.ndarray]] = []
  for i in model.graph.initializer:
    if isinstance(t := runner.graph_values.get(i.name), Tensor): out.append((i.name, t, numpy_helper.to_array(i)))
  for n in model.graph.node:
    if n.op_type != "Constant": continue
    for a in n.attribute:
      if a.name == "value": raw = numpy_helper.to_array(a.t)
      elif a.name in ("value_floats", "value_float"): raw = np.array(a.floats or a.f, dtype=np.float32)
      elif a.name in ("value_ints", "value_int"): raw = np.array(a.ints or a.i, dtype=np.int64)
      else: continue
      if isinstance(t := runner.graph_values.get(n.output[0]), Tensor): out.append((n.output[0], t, raw))
  if len(runner.graph_nodes) != len(model.graph.node):
    raise ExportError(f"tinygrad parsed {len(runner.graph_nodes)} ONNX nodes but the model has {len(model.graph.node)}")
  for i, (n, parsed) in enumerate(zip(model.graph.node, runner.graph_nodes)):
    if parsed.op != n.op_type: raise ExportError(f"ONNX node {i} is {n.op_type} but tinygrad parsed it as {parsed.op}")
    for a in n.attribute:
      if a.type == onnx_AttributeProto.TENSOR and isinstance(t := parsed.opts.get(a.name), Tensor):
        out.append((f"{n.op_type}({n.output[0] if n.output else i}).{a.name}", t, numpy_helper.to_array(a.t)))
  return out


def _onnx_sources(onnx_path: str, runner: OnnxRunner, want_bytes: bool):
  """Map each realized ONNX-data BUFFER UOp (initializer, Constant, node tensor attribute) to its ONNX name, and for NULL
  targets to its bytes (spec §3.1 step 3). A buffer reached from two sources must get identical bytes from both."""
  import onnx
  model = onnx.load(onnx_path)
  labels, data = {}, {}
  for name, t, raw in _onnx_tensor_sources(model, runner):
    if (base := t.uop.base).op is not Ops.BUFFER: continue  # const-folded (scalars) or never realized
    labels.setdefault(base, name)
    if not want_bytes: continue
    tg_np = NUMPY_DTYPES.get(base.dtype)
    if tg_np is not None and raw.dtype != tg_np: raw = raw.astype(tg_np)
    b = np.ascontiguousarray(raw).tobytes()
    if len(b) != (want := base.max_numel() * base.dtype.itemsize):
      raise ExportError(f"ONNX tensor '{name}' has {len(b)} bytes but its tinygrad buffer has {want}")
    if base not in data: data[base] = (name, b)
    elif data[base][1] != b: raise ExportError(f"ONNX tensors '{data[base][0]}' and '{name}' share one tinygrad buffer but differ")
  return labels, data


def capture(onnx_path: str, null_device: bool, seed: int) -> Capture:
  try:
    runner = OnnxRunner(onnx_path)
  except FileNotFoundError as e: raise ExportError(f"model not found: {onnx_path}") from e
  specs = input_specs(runner)
  if not specs: raise ExportError("the model has no inputs")
  output_names = list(runner.graph_outputs)
  arrays = random_inputs(specs, seed)

  if null_device: runner._python_const_cache.update(_python_consts_from_cpu(onnx_path, specs, arrays))

  @TinyJit(prune=True)
  def run(**kw):
    outs = runner({k: v.to(Device.DEFAULT) for k, v in kw.items()})
    return {n: (outs[n].cast("float32") if dtypes.is_float(outs[n].dtype) else outs[n]) for n in output_names}

  onetime: list[UOp] = []
  orig_run_linear = tg_jit.run_linear

  def recording_run_linear(linear, var_vals=None, *a, **kw):
    # the pruned one-time linear is the one run with var_vals and without jit=True during capture (spec §3.1 step 2)
    if var_vals is not None and not kw.get("jit", False) and not a: onetime.append(linear)
    return orig_run_linear(linear, var_vals, *a, **kw)

  tg_out = None
  for i in range(3):
    tensors = _to_tensors(specs, arrays)
    if i == 1: tg_jit.run_linear = recording_run_linear
    try:
      with Context(OPENPILOT_HACKS=1): ret = run(**tensors)
    finally: tg_jit.run_linear = orig_run_linear
    if not null_device: tg_out = {n: t.numpy().copy() for n, t in ret.items()}
  if run.captured is None: raise ExportError("TinyJit did not capture the model")

  onetime_compiled = None
  if onetime and len(onetime[0].src):
    if len(onetime) != 1: raise ExportError(f"expected one pruned one-time linear during capture, saw {len(onetime)}")
    onetime_compiled = compile_linear(onetime[0])
  labels, data = _onnx_sources(onnx_path, runner, null_device)
  return Capture(run.captured, output_names, specs, onetime_compiled, data, labels, tg_out)
