"""Capture an ONNX model with tinygrad's TinyJit exactly like openpilot's compile3 (docs/hw/tinygrad-export.md §3).

Imported only after the environment has been pinned (see export.py). Returns a `Capture`: the `CapturedJit`, the
one-time (init) linear recorded on NULL targets, and the ONNX data needed to give weight buffers their bytes.
"""

from dataclasses import dataclass, field

import numpy as np
import tinygrad.engine.jit as tg_jit
from onnx import AttributeProto as onnx_AttributeProto
from tinygrad import Device, Tensor, TinyJit, dtypes
from tinygrad.engine.realize import compile_linear
from tinygrad.helpers import Context
from tinygrad.nn.onnx import OnnxRunner
from tinygrad.uop.ops import Ops, UOp

from mrt.targets import TINYGRAD_VERSION as TINYGRAD
from mrt.targets import ExportError

NUMPY_DTYPES = {
  dtypes.float32: np.float32,
  dtypes.float16: np.float16,
  dtypes.float64: np.float64,
  dtypes.int8: np.int8,
  dtypes.uint8: np.uint8,
  dtypes.int16: np.int16,
  dtypes.uint16: np.uint16,
  dtypes.int32: np.int32,
  dtypes.uint32: np.uint32,
  dtypes.int64: np.int64,
  dtypes.uint64: np.uint64,
  dtypes.bool: np.bool_,
}


@dataclass
class InputSpec:
  name: str
  shape: tuple[int, ...]
  np_dtype: type  # dtype fed to tinygrad: the model's own (compile3 mode: float16 inputs are fed as float32)
  on_device: bool  # compile3 realizes inputs whose name contains "img" on the device instead of NPY


@dataclass
class OutputSpec:
  name: str
  tg_dtype: object  # dtype the bundle declares: the model's own (compile3 mode: float outputs are float32)


@dataclass
class Capture:
  jit: object  # CapturedJit
  output_names: list[str]
  inputs: list[InputSpec]
  onetime: UOp | None = None  # compiled one-time (init phase) linear, or None
  onnx_bytes: dict = field(default_factory=dict)  # base BUFFER UOp -> (onnx name, bytes) for initializers/Constants
  onnx_labels: dict = field(default_factory=dict)  # base BUFFER UOp -> onnx name (all targets)
  tinygrad_out: dict | None = None  # outputs of the last real run (CPU targets), for the self check
  eager_out: dict | None = None  # tinygrad's own unjitted outputs for the capture inputs (CPU targets)
  capture_inputs: dict | None = None  # the seeded capture inputs
  outputs: list | None = None  # OutputSpec per output
  constant_out: dict | None = None  # the model computes the same outputs for every input: their values
  tinygrad_eager: dict | None = None  # tinygrad's unjitted outputs for the capture inputs (CPU run on NULL targets)
  ort_unverifiable: str | None = None  # why the capture inputs cannot be cross-checked with onnxruntime


def input_specs(runner: OnnxRunner, compile3_dtypes: bool, dims: dict | None = None, log=None) -> list[InputSpec]:
  """Bundle inputs have fixed shapes: a dynamic dimension takes its `--dim NAME=VALUE` (`dims`), else 1 (compile3), and
  `log` says which input, which dimension and what value; a `dims` name no input uses is an error."""
  specs, dims, named, notes = [], dims or {}, set(), []
  for name, spec in runner.graph_inputs.items():
    if spec.is_sequence:
      raise ExportError(f"input '{name}' is a sequence; only tensor inputs are supported")
    shape = tuple(d if isinstance(d, int) else dims.get(d, 1) if isinstance(d, str) else 1 for d in spec.shape)
    for k, d in enumerate(spec.shape):
      if isinstance(d, int):
        continue
      if isinstance(d, str):
        named.add(d)
      if isinstance(d, str) and d in dims:
        notes.append(f"input '{name}': dynamic dimension {k} ('{d}') compiled as {dims[d]} (--dim {d}={dims[d]})")
      elif isinstance(d, str):
        notes.append(f"input '{name}': dynamic dimension {k} ('{d}') compiled as 1 (bundles have fixed shapes; --dim {d}=VALUE sets it)")
      else:
        notes.append(
          f"input '{name}': dynamic dimension {k} (unnamed) compiled as 1 (bundles have fixed shapes; name it in the model to set it with --dim)"
        )
    dt = dtypes.float32 if compile3_dtypes and spec.dtype == dtypes.float16 else spec.dtype
    if dt not in NUMPY_DTYPES:
      raise ExportError(f"input '{name}' has dtype {spec.dtype.name}, which bundles cannot carry")
    specs.append(InputSpec(name, shape, NUMPY_DTYPES[dt], "img" in name))
  if unknown := sorted(set(dims) - named):
    raise ExportError(
      f"--dim {unknown[0]}: the model has no dynamic dimension named '{unknown[0]}' (its named dynamic "
      f"dimensions: {', '.join(sorted(named)) or 'none'})"
    )
  for n in notes if log is not None else ():
    log(n)
  return specs


def output_specs(model, compile3_dtypes: bool) -> list[OutputSpec]:
  """The model's outputs with the dtype each must have in the bundle (its ONNX-declared one, so nothing is silently
  narrowed or widened); non-tensor outputs are refused."""
  from tinygrad.nn.onnx import OnnxDataType

  out = []
  for o in model.graph.output:
    if not o.type.HasField("tensor_type"):
      raise ExportError(f"output '{o.name}' is a {o.type.WhichOneof('value')}, not a tensor; bundles carry tensor outputs only")
    try:
      dt = OnnxDataType(o.type.tensor_type.elem_type).to_dtype()
    except Exception:
      raise ExportError(f"output '{o.name}' has ONNX element type {o.type.tensor_type.elem_type}, which bundles cannot carry") from None
    if compile3_dtypes and dtypes.is_float(dt):
      dt = dtypes.float32
    if dt not in NUMPY_DTYPES:
      raise ExportError(f"output '{o.name}' has dtype {dt.name}, which bundles cannot carry")
    out.append(OutputSpec(o.name, dt))
  return out


def parse_dim_args(items: list[str]) -> dict[str, int]:
  """`--dim NAME=VALUE` arguments -> {NAME: VALUE}; VALUE a positive integer, each NAME once."""
  out: dict[str, int] = {}
  for it in items:
    name, eq, v = it.partition("=")
    if not eq or not name or not v.isdigit() or int(v) < 1:
      raise ExportError(f"--dim takes NAME=VALUE with VALUE >= 1, got '{it}'")
    if name in out:
      raise ExportError(f"--dim {name} is given twice")
    out[name] = int(v)
  return out


def random_inputs(specs: list[InputSpec], seed: int, nonzero: frozenset = frozenset()) -> dict[str, np.ndarray]:
  """Seeded inputs (drawn in input-name order): standard normal for floats; uint8 0..255 and int8 0..127 (image-like
  data); wider ints 0..1 (usually indices, which must stay in range for any table size); bool 0/1. Integer inputs named
  in `nonzero` (they reach an integer divisor: a zero would trap the CPU kernel) are drawn from 1..2 instead."""
  rng = np.random.default_rng(seed)
  out = {}
  for s in sorted(specs, key=lambda s: s.name):  # name order, so every caller draws the same values per input
    if np.issubdtype(s.np_dtype, np.floating):
      out[s.name] = rng.standard_normal(s.shape).astype(s.np_dtype)
    elif s.np_dtype == np.bool_:
      out[s.name] = rng.integers(0, 2, s.shape).astype(np.bool_)
    elif s.name in nonzero:
      out[s.name] = rng.integers(1, 3, s.shape).astype(s.np_dtype)
    elif np.dtype(s.np_dtype).itemsize == 1:
      out[s.name] = rng.integers(0, 256 if s.np_dtype == np.uint8 else 128, s.shape).astype(s.np_dtype)
    else:
      out[s.name] = rng.integers(0, 2, s.shape).astype(s.np_dtype)  # wider ints are usually indices: keep them tiny
  return out


def as_numpy(name: str, v, dt) -> np.ndarray:
  """An OnnxRunner output as numpy in the bundle's dtype (tinygrad returns some outputs, e.g. Size's, as Python numbers)."""
  if isinstance(v, Tensor):
    return v.cast(dt).numpy().copy()
  if isinstance(v, (bool, int, float)):
    return np.array(v, dtype=NUMPY_DTYPES[dt])
  raise ExportError(f"output '{name}' is a {type(v).__name__}, not a tensor; bundles carry tensor outputs only")


def _to_tensors(specs: list[InputSpec], arrays: dict[str, np.ndarray]) -> dict[str, Tensor]:
  # a 0-d array would become a virtual CONST, which TinyJit refuses as an input: feed it as one element, reshaped in run()
  def feed(s):
    return arrays[s.name].reshape(1) if s.shape == () else arrays[s.name]

  return {s.name: (Tensor(feed(s)).realize() if s.on_device else Tensor(feed(s), device="NPY")) for s in specs}


def load_onnx(onnx_path: str):
  """The model's graph with onnx (external data not loaded), or one line saying the file is not a readable ONNX model."""
  import onnx

  try:
    model = onnx.load(onnx_path, load_external_data=False)
  except FileNotFoundError:
    raise ExportError(f"model not found: {onnx_path}") from None
  except Exception as e:
    msg = " ".join(f"{type(e).__name__}: {e}".split())[:160]
    raise ExportError(f"{onnx_path} is not a readable ONNX model (onnx cannot parse it: {msg}); give an .onnx model file") from None
  if not model.HasField("graph") or not model.graph.output:
    raise ExportError(f"{onnx_path} is not a readable ONNX model (it holds no graph with outputs); give an .onnx model file")
  return model


def _load_runner(onnx_path: str) -> OnnxRunner:
  from mrt import rnn  # LSTM, GRU and RNN, which tinygrad's frontend lacks
  from mrt.winograd import install  # CPU targets: qualifying 3x3 convs as Winograd (a no-op when the pass is off)

  try:
    runner = install(rnn.install(OnnxRunner(onnx_path)), onnx_path)
  except FileNotFoundError:
    raise ExportError(f"model not found: {onnx_path}") from None
  except Exception as e:
    msg = " ".join(f"{type(e).__name__}: {e}".split())[:200]
    raise ExportError(f"tinygrad {TINYGRAD} cannot load this model ({msg})") from None
  refuse_unsupported_ops(runner)
  return runner


def refuse_unsupported_ops(runner: OnnxRunner):
  """Name every op of the model (subgraphs included) that the runner has no implementation for, at once, before
  anything runs; one op keeps tinygrad's own wording ("op='X' is not supported")."""
  missing: dict[str, str] = {}

  def walk(r):
    for node in r.graph_nodes:
      try:
        r._select_op(node.op, node.opset_id)
      except NotImplementedError as e:
        missing.setdefault(node.op, str(e))
      for v in node.opts.values():
        if isinstance(v, OnnxRunner):
          walk(v)

  walk(runner)
  if len(missing) == 1:
    raise NotImplementedError(next(iter(missing.values())))
  if missing:
    names = ", ".join(f"'{op}'" for op in sorted(missing))
    raise NotImplementedError(f"{len(missing)} ops are not supported: {names}")


def eager_on_cpu(onnx_path: str, specs: list[InputSpec], arrays: dict[str, np.ndarray], out_dtypes: dict) -> tuple[dict, dict]:
  """tinygrad's own unjitted run on the host CPU: (its python-constant cache, its outputs). NULL devices hold no data, so
  this is where their python constants (docs/hw/tinygrad-export.md §3.1 step 1) and their reference outputs come from."""
  with Context(DEV="CPU"):
    cpu_runner = _load_runner(onnx_path)
    try:
      outs = cpu_runner({s.name: Tensor(arrays[s.name]) for s in specs})
    except (ExportError, NotImplementedError):
      raise
    except Exception as e:
      raise _tinygrad_fails(e) from None
    vals = {n: as_numpy(n, outs[n], dt) for n, dt in out_dtypes.items()}
  return dict(cpu_runner._python_const_cache), vals


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
    if isinstance(t := runner.graph_values.get(i.name), Tensor):
      out.append((i.name, t, numpy_helper.to_array(i)))
  for n in model.graph.node:
    if n.op_type != "Constant":
      continue
    for a in n.attribute:
      if a.name == "value":
        raw = numpy_helper.to_array(a.t)
      elif a.name in ("value_floats", "value_float"):
        raw = np.array(a.floats or a.f, dtype=np.float32)
      elif a.name in ("value_ints", "value_int"):
        raw = np.array(a.ints or a.i, dtype=np.int64)
      else:
        continue
      if isinstance(t := runner.graph_values.get(n.output[0]), Tensor):
        out.append((n.output[0], t, raw))
  if len(runner.graph_nodes) != len(model.graph.node):
    raise ExportError(f"tinygrad parsed {len(runner.graph_nodes)} ONNX nodes but the model has {len(model.graph.node)}")
  for i, (n, parsed) in enumerate(zip(model.graph.node, runner.graph_nodes)):
    if parsed.op != n.op_type:
      raise ExportError(f"ONNX node {i} is {n.op_type} but tinygrad parsed it as {parsed.op}")
    for a in n.attribute:
      if a.type == onnx_AttributeProto.TENSOR and isinstance(t := parsed.opts.get(a.name), Tensor):
        out.append((f"{n.op_type}({n.output[0] if n.output else i}).{a.name}", t, numpy_helper.to_array(a.t)))
  from mrt.winograd import sources

  return out + sources(runner)  # the Winograd pass's folded weights and transform matrices


def _onnx_sources(onnx_path: str, runner: OnnxRunner, want_bytes: bool):
  """Map each realized ONNX-data BUFFER UOp (initializer, Constant, node tensor attribute) to its ONNX name, and for NULL
  targets to its bytes (docs/hw/tinygrad-export.md §3.1 step 3). A buffer reached from two sources must get identical bytes from both."""
  import onnx

  model = onnx.load(onnx_path)
  labels, data = {}, {}
  for name, t, raw in _onnx_tensor_sources(model, runner):
    if (base := t.uop.base).op is not Ops.BUFFER:
      continue  # const-folded (scalars) or never realized
    labels.setdefault(base, name)
    if not want_bytes:
      continue
    tg_np = NUMPY_DTYPES.get(base.dtype)
    if tg_np is not None and raw.dtype != tg_np:
      raw = raw.astype(tg_np)
    b = np.ascontiguousarray(raw).tobytes()
    if len(b) != (want := base.max_numel() * base.dtype.itemsize):
      raise ExportError(f"ONNX tensor '{name}' has {len(b)} bytes but its tinygrad buffer has {want}")
    if base not in data:
      data[base] = (name, b)
    elif data[base][1] != b:
      raise ExportError(f"ONNX tensors '{data[base][0]}' and '{name}' share one tinygrad buffer but differ")
  return labels, data


def _is_jit_error(e: BaseException) -> bool:
  return type(e).__name__ == "JitError"


def _failing_onnx_node(e: BaseException) -> str | None:
  """The ONNX op tinygrad's OnnxRunner was evaluating when `e` was raised, if it was."""
  tb, found = e.__traceback__, None
  while tb is not None:
    f = tb.tb_frame
    if f.f_code.co_name == "__call__" and f.f_code.co_filename.endswith("nn/onnx.py") and "node" in f.f_locals:
      found = getattr(f.f_locals["node"], "op", None)
    tb = tb.tb_next
  return found


def _tinygrad_fails(e: BaseException) -> ExportError:
  op = _failing_onnx_node(e)
  where = f" in its {op} implementation" if op else ""
  msg = " ".join(f"{type(e).__name__}: {e}".split())[:200]
  return ExportError(f"tinygrad {TINYGRAD} itself fails on this model{where} ({msg}); modelrt compiles only what tinygrad can run")


def _divisor_inputs(model, names: list[str]) -> frozenset:
  """Graph inputs whose values reach the divisor of an integer Div or Mod."""
  from mrt.baked import value_taint

  taint = value_taint(model, names)
  return frozenset().union(*(taint.get(n.input[1], frozenset()) for n in model.graph.node if n.op_type in ("Div", "Mod") and len(n.input) > 1))


def _constant_capture(onnx_path, specs, outs, arrays, seed, nonzero) -> "Capture":
  """A model whose outputs depend on no input value (no inputs at all, or only their shapes: EyeLike, Shape, Size, ...):
  its outputs are tinygrad's values, the same for every input. Checked on a second set of inputs."""
  out_dtypes = {o.name: o.tg_dtype for o in outs}
  _, vals = eager_on_cpu(onnx_path, specs, arrays, out_dtypes)
  if specs:
    from mrt.verify import mismatch

    _, again = eager_on_cpu(onnx_path, specs, random_inputs(specs, seed + 1, nonzero), out_dtypes)
    for n in vals:
      if bad := mismatch(again[n], vals[n]):
        raise ExportError(f"output '{n}' changes with the inputs ({bad}) but tinygrad captured no program for it")
  for n, v in vals.items():
    if v.size == 0:
      raise ExportError(f"output '{n}' has no elements (shape {list(v.shape)}); bundles cannot carry empty tensors")
  return Capture(None, [o.name for o in outs], specs, capture_inputs=arrays, outputs=outs, constant_out=vals, tinygrad_eager=vals)


def capture(
  onnx_path: str,
  null_device: bool,
  seed: int,
  compile3_dtypes: bool = False,
  materialize: frozenset = frozenset(),
  verify_seed: int | None = None,
  trust_tinygrad: bool = False,
  dims: dict | None = None,
  log=None,
  tinygrad_path: str | None = None,
) -> Capture:
  """compile3's three-call capture. `materialize`: output names to force into fresh contiguous buffers (used when the plain
  capture returned them as non-contiguous views). `verify_seed` (real-device targets only): after capture, also replay the
  program on inputs drawn with this seed and compare it with an unjitted run on the same inputs, so a graph whose result
  depends on input values that the capture baked in is refused (mrt/verify.py). `trust_tinygrad`: do not refuse the op
  configurations tinygrad is known to compute wrongly (mrt/known_wrong.py). `dims`, `log`: see input_specs.
  `tinygrad_path`: the graph tinygrad loads when it differs from the model's own (CPU targets: the channel-last form
  written by mrt/layout.py); the model's own graph is what the checks below read."""
  model = load_onnx(onnx_path)  # before tinygrad, so a file that is not ONNX is not blamed on tinygrad
  onnx_path = tinygrad_path or onnx_path  # from here on: the graph tinygrad runs
  from mrt.baked import random_index_inputs, refuse_baked_inputs, refuse_random_ops

  # The refusals with their own reason (non-tensor outputs, random draws) before tinygrad loads the graph, whose
  # unsupported-op scan would otherwise name those ops without saying why.
  outs = output_specs(model, compile3_dtypes)
  refuse_random_ops(model)
  runner = _load_runner(onnx_path)
  specs = input_specs(runner, compile3_dtypes, dims, log)
  output_names = list(runner.graph_outputs)
  if output_names != [o.name for o in outs]:
    raise ExportError("tinygrad and onnx disagree on the model's outputs")
  refuse_baked_inputs(model, [s.name for s in specs])
  if not trust_tinygrad:
    from mrt.known_wrong import refuse_known_wrong

    refuse_known_wrong(model)
  nonzero = _divisor_inputs(model, [s.name for s in specs])
  arrays = random_inputs(specs, seed, nonzero)
  zero_d = {s.name for s in specs if s.shape == ()}
  out_dtypes = {o.name: o.tg_dtype for o in outs}
  if not specs:
    return _constant_capture(onnx_path, specs, outs, arrays, seed, nonzero)

  shadow_out = None
  if null_device:
    consts, shadow_out = eager_on_cpu(onnx_path, specs, arrays, out_dtypes)
    runner._python_const_cache.update(consts)

  def finish_output(n, t):
    if isinstance(t, (bool, int, float)):
      t = Tensor(t, dtype=out_dtypes[n])  # e.g. Size: a Python number
    if not isinstance(t, Tensor):
      raise ExportError(f"output '{n}' is a {type(t).__name__}, not a tensor; bundles carry tensor outputs only")
    t = t.cast(out_dtypes[n])
    if n not in materialize:
      return t
    # a device-less constant (e.g. Dropout's all-true mask) is its own contiguous(): clone it onto the device instead
    return t.clone(device=Device.DEFAULT) if t.device is None else t.contiguous()

  @TinyJit(prune=True)
  def run(**kw):
    outs = runner({k: (v.to(Device.DEFAULT).reshape(()) if k in zero_d else v.to(Device.DEFAULT)) for k, v in kw.items()})
    return {n: finish_output(n, outs[n]) for n in output_names}

  onetime: list[UOp] = []
  orig_run_linear = tg_jit.run_linear

  def recording_run_linear(linear, var_vals=None, *a, **kw):
    # the pruned one-time linear is the one run with var_vals and without jit=True during capture (docs/hw/tinygrad-export.md §3.1 step 2)
    if var_vals is not None and not kw.get("jit", False) and not a:
      onetime.append(linear)
    return orig_run_linear(linear, var_vals, *a, **kw)

  tg_out, eager_out = None, None
  for i in range(3):
    tensors = _to_tensors(specs, arrays)
    if i == 1:
      tg_jit.run_linear = recording_run_linear
    try:
      with Context(OPENPILOT_HACKS=1):
        ret = run(**tensors)
    except (ExportError, NotImplementedError):
      raise  # ours, and tinygrad's "op='X' is not supported"
    except Exception as e:
      if _is_jit_error(e) and "didn't JIT anything" in str(e):  # no kernel reads an input: the outputs are constants
        return _constant_capture(onnx_path, specs, outs, arrays, seed, nonzero)
      if _is_jit_error(e):
        raise ExportError(
          f"tinygrad cannot capture this graph as one fixed program ({e}); a value computed from the inputs "
          "decides the graph's shape or control flow, which a bundle cannot express"
        ) from None
      if i == 0:
        raise _tinygrad_fails(e) from None  # call 0 is tinygrad's plain eager run of the model
      raise
    finally:
      tg_jit.run_linear = orig_run_linear
    if not null_device:
      got = {n: t.numpy().copy() for n, t in ret.items()}
      if i == 0:
        eager_out = got  # call 0 is tinygrad's plain eager run (compile3 §3 step 4)
      tg_out = got
  if run.captured is None:
    raise ExportError("TinyJit did not capture the model")

  if verify_seed is not None and not null_device:
    from mrt.verify import check_input_dependence

    check_input_dependence(
      onnx_path,
      run,
      specs,
      output_names,
      out_dtypes,
      zero_d,
      verify_seed,
      lambda a: _to_tensors(specs, a),
      lambda sp, sd: random_inputs(sp, sd, nonzero),
    )
    run(**_to_tensors(specs, arrays))  # replay the capture inputs again: the buffers hold their results for the self-check

  onetime_compiled = None
  if onetime and len(onetime[0].src):
    if len(onetime) != 1:
      raise ExportError(f"expected one pruned one-time linear during capture, saw {len(onetime)}")
    onetime_compiled = compile_linear(onetime[0])
  labels, data = _onnx_sources(onnx_path, runner, null_device)
  unchecked = random_index_inputs(model, [s.name for s in specs])
  return Capture(
    run.captured,
    output_names,
    specs,
    onetime_compiled,
    data,
    labels,
    tg_out,
    eager_out,
    arrays,
    outs,
    tinygrad_eager=eager_out if not null_device else shadow_out,
    ort_unverifiable=f"random capture values are not valid {unchecked[0]} indices" if unchecked else None,
  )
