"""`--tinygrad SCRIPT.py:FN`: capture a tinygrad program (not an ONNX model) the way openpilot's compile_modeld.py does,
and lower it through the same manifest path (docs/hw/tinygrad-export.md §12).

FN() returns a dict (see xtask/models/modeld_pipeline.py for a complete example):
  fn            the function to capture, called as fn(**state, **inputs) with tinygrad Tensors
  inputs        per-step inputs: name -> example numpy array (its shape and dtype are the bundle input's)
  state         optional: name -> numpy array, the initial contents of buffers fn advances in place (bundle state)
  host_inputs   optional: input names fed as host (NPY) tensors that fn moves with .to(Device.DEFAULT); the others are
                realized on the device, like compile_modeld's frames
  sample        optional: sample(numpy Generator) -> one step's inputs; default: seeded random values of each dtype
  outputs       optional: names for fn's returned tensors (default output0, output1, ...)
Weights and constants must be created from numpy arrays or Python lists (`Tensor(array)`): their bytes are then known
even on tinygrad's data-less NULL device. Tensors captured by fn and advanced with assign are refused: pass them through `state`, so their initial
contents are known.

Checks before anything is written, like compile_modeld's self-test: over CHECK_STEPS consecutive steps of seeded inputs
from the initial state, the captured program's outputs and state equal tinygrad's own unjitted run (bit-exact on the
CPU), and the outputs and state read as the bundle lays them out equal the unjitted run's last step. On NULL targets
(cpu-aarch64, adreno-a630) the same comparison runs on a CPU twin of the program.
"""

import hashlib
import importlib.util
import os
import sys
from dataclasses import dataclass

import numpy as np

from mrt.targets import ExportError

CHECK_STEPS = 5  # 3 capture calls (compile3/compile_modeld) + 2 replays


def load_build(spec: str) -> tuple[dict, str]:
  """`path.py:fn` -> (fn()'s dict, sha256 of the script)."""
  path, sep, name = spec.rpartition(":")
  if not sep or not path or not name:
    raise ExportError(f"--tinygrad expects SCRIPT.py:FUNCTION, got '{spec}'")
  if not os.path.isfile(path):
    raise ExportError(f"script not found: {path}")
  # This loads the USER's script: like `python SCRIPT.py` would, put its own directory on the path so its imports of
  # modules next to it resolve. The exporter's own modules never rely on this.
  if (here := os.path.dirname(os.path.abspath(path))) not in sys.path:
    sys.path.insert(0, here)
  mod_name = "mrt_user_" + hashlib.sha256(os.path.abspath(path).encode()).hexdigest()[:12]
  if (mod := sys.modules.get(mod_name)) is None:
    try:
      loader = importlib.util.spec_from_file_location(mod_name, path)
      mod = importlib.util.module_from_spec(loader)
      loader.loader.exec_module(mod)
    except Exception as e:
      raise ExportError(f"cannot import {path}: {type(e).__name__}: {e}".splitlines()[0]) from None
    sys.modules[mod_name] = mod
  if not callable(build := getattr(mod, name, None)):
    raise ExportError(f"{path} has no function '{name}'")
  from mrt.roles import call_build

  try:
    b = call_build(build, spec)
  except ExportError:
    raise
  except Exception as e:
    raise ExportError(f"{spec}() failed: {type(e).__name__}: {e}".splitlines()[0]) from None
  if not isinstance(b, dict) or not callable(b.get("fn")) or not isinstance(b.get("inputs"), dict):
    raise ExportError(f"{spec}() must return a dict with 'fn' (the function to capture) and 'inputs' (name -> example array)")
  for k, v in {**b["inputs"], **b.get("state", {})}.items():
    if not isinstance(v, np.ndarray) or v.ndim == 0 or v.size == 0:
      raise ExportError(f"{spec}(): '{k}' must be a numpy array with at least one dimension and one element")
  if clash := set(b["inputs"]) & set(b.get("state", {})):
    raise ExportError(f"{spec}(): {sorted(clash)} are both inputs and state")
  with open(path, "rb") as f:
    sha = hashlib.sha256(f.read()).hexdigest()
  return b, sha


def draw_steps(b: dict, seed: int, n: int) -> list[dict]:
  rng = np.random.default_rng(seed)
  # one role of a multi-device compile: its steps come from the whole program's (mrt/roles.py)
  drawn = b["_steps"](seed, n) if "_steps" in b else None
  out = []
  for i in range(n):
    if drawn is not None:
      step = {k: np.asarray(v) for k, v in drawn[i].items()}
    elif (sample := b.get("sample")) is not None:
      step = {k: np.asarray(v) for k, v in sample(rng).items()}
    else:
      step = {k: _random_like(rng, v) for k, v in sorted(b["inputs"].items())}
    for k, ex in b["inputs"].items():
      if k not in step or step[k].shape != ex.shape or step[k].dtype != ex.dtype:
        raise ExportError(f"sample() must return '{k}' as {ex.dtype} {list(ex.shape)}")
    out.append(step)
  return out


def _random_like(rng, ex: np.ndarray) -> np.ndarray:
  if ex.dtype.kind == "f":
    return rng.standard_normal(ex.shape).astype(ex.dtype)
  if ex.dtype == np.bool_:
    return rng.integers(0, 2, ex.shape).astype(np.bool_)
  if ex.dtype.itemsize == 1:
    return rng.integers(0, 128, ex.shape).astype(ex.dtype)
  return rng.integers(0, 2, ex.shape).astype(ex.dtype)


def feed(b: dict, step: dict) -> dict:
  from tinygrad import Tensor

  host = set(b.get("host_inputs", ()))
  return {k: (Tensor(v, device="NPY") if k in host else Tensor(v).realize()) for k, v in step.items()}


def fresh_state(b: dict) -> dict:
  from tinygrad import Tensor

  return {k: Tensor(v).contiguous().realize() for k, v in b.get("state", {}).items()}


def as_list(ret) -> list:
  from tinygrad import Tensor

  if isinstance(ret, Tensor):
    return [ret]
  if isinstance(ret, dict):
    return list(ret.values())
  if isinstance(ret, (list, tuple)) and all(isinstance(t, Tensor) for t in ret):
    return list(ret)
  raise ExportError(f"the captured function must return a Tensor, a tuple of Tensors or a dict of Tensors, not {type(ret).__name__}")


def run_steps(fn, b: dict, steps: list[dict], state: dict | None = None) -> tuple[list[list[np.ndarray]], dict]:
  """Run fn over `steps` from `state` (default: build()'s initial state); returns per-step outputs and the final state."""
  state = fresh_state(b) if state is None else state
  outs = []
  for step in steps:
    outs.append([t.numpy().copy() for t in as_list(fn(**state, **feed(b, step)))])
  return outs, {k: t.numpy().copy() for k, t in state.items()}


@dataclass
class ScriptCapture:
  jit: object  # CapturedJit
  build: dict
  output_names: list[str]
  weight_bytes: dict  # base BUFFER UOp -> (label, bytes) for tensors built from numpy (NULL targets)
  reference: tuple | None  # (per-step outputs, final state) of the unjitted run, or None on NULL targets
  steps: list[dict]
  onetime: object = None  # NULL targets: the compiled one-time list (the bundle's init phase), §3.1 step 2
  twin: tuple | None = None  # NULL targets: (per-step outputs, final state) of the unjitted run on the CPU twin


class _OneTimeCalls:
  """While active, collect the list tinygrad's JIT runs once during the capturing call (the calls `prune=True` split
  off: weight casts and IMAGE re-layouts). It is the one run with var_vals and without jit=True (§3.1 step 2)."""

  def __init__(self, out: list, active: bool):
    self.out, self.active = out, active

  def __enter__(self):
    import tinygrad.engine.jit as tg_jit

    self.mod, self.orig = tg_jit, tg_jit.run_linear
    if not self.active:
      return self
    out, orig = self.out, self.orig

    def recording(linear, var_vals=None, *a, **kw):
      if var_vals is not None and not kw.get("jit", False) and not a:
        out.append(linear)
      return orig(linear, var_vals, *a, **kw)

    tg_jit.run_linear = recording
    return self

  def __exit__(self, *exc):
    self.mod.run_linear = self.orig


class _NumpyTensors:
  """Records every Tensor built from a numpy array or a Python list while active, so a NULL capture can give the buffers
  tinygrad reads them from their bytes."""

  def __enter__(self):
    from tinygrad import Tensor

    from mrt.capture import NUMPY_DTYPES

    self.seen, self.orig = [], Tensor.__init__
    seen, orig = self.seen, self.orig

    def init(t, data=None, *a, **k):
      orig(t, data, *a, **k)
      if isinstance(data, np.ndarray):
        seen.append((t, np.ascontiguousarray(data)))
      elif isinstance(data, (list, tuple)) and (np_dt := NUMPY_DTYPES.get(t.dtype)) is not None:
        seen.append((t, np.array(data, dtype=np_dt)))

    Tensor.__init__ = init
    return self

  def __exit__(self, *exc):
    from tinygrad import Tensor

    Tensor.__init__ = self.orig

  def buffers(self) -> dict:
    from tinygrad.uop.ops import Ops

    from mrt.capture import NUMPY_DTYPES

    data = {}
    for i, (t, arr) in enumerate(self.seen):
      if (base := t.uop.base).op is not Ops.BUFFER:
        continue
      want = NUMPY_DTYPES.get(base.dtype)
      raw = (arr.astype(want) if want is not None and arr.dtype != want else arr).tobytes()
      if len(raw) != base.max_numel() * base.dtype.itemsize:
        continue  # a tensor derived by a view, not the buffer itself
      data.setdefault(base, (f"weight{i}", raw))
    return data


def _compare(what: str, got: list[np.ndarray], want: list[np.ndarray], names: list[str], exact: bool):
  from mrt.verify import mismatch

  for n, g, w in zip(names, got, want):
    bad = (None if np.array_equal(g, w, equal_nan=g.dtype.kind == "f") else "values differ") if exact else mismatch(g, w)
    if bad:
      raise ExportError(f"self-check failed: {what} '{n}' differs from tinygrad's unjitted run ({bad}); refusing to write a wrong bundle")


def capture_script(spec: str, null: bool, seed: int) -> ScriptCapture:
  from tinygrad import Device, TinyJit
  from tinygrad.helpers import Context

  steps_b, _ = load_build(spec)
  steps = draw_steps(steps_b, seed, CHECK_STEPS)
  ref = None
  if not null:
    b_ref, _ = load_build(spec)
    ref = run_steps(b_ref["fn"], b_ref, steps)
  else:  # NULL computes nothing: prove capture == unjitted on a CPU twin of the program
    with Context(DEV="CPU"):
      b_ref, _ = load_build(spec)
      want = run_steps(b_ref["fn"], b_ref, steps)
      b_twin, _ = load_build(spec)
      got = run_steps(TinyJit(b_twin["fn"], prune=True), b_twin, steps)
    _check_steps(got, want, _names(b_ref, want[0][0]), True)
  with _NumpyTensors() as rec:
    b, _ = load_build(spec)
    jit = TinyJit(b["fn"], prune=True)
    state = fresh_state(b)
    onetime: list = []
    if null:
      for i, step in enumerate(steps[:3]):
        with _OneTimeCalls(onetime, active=i == 1):
          jit(**state, **feed(b, step))
    else:
      got = run_steps(jit, b, steps, state)
  if jit.captured is None:
    raise ExportError("TinyJit captured nothing: the function runs no kernel")
  names = _names(b, jit.captured.ret if not isinstance(jit.captured.ret, dict) else list(jit.captured.ret.values()))
  if not null:
    _check_steps(got, ref, names, Device.DEFAULT.startswith("CPU"))
  data = rec.buffers()
  if len(onetime) > 1:
    raise ExportError(f"expected one pruned one-time list during capture, saw {len(onetime)}")
  from tinygrad.engine.realize import compile_linear

  init = compile_linear(onetime[0]) if onetime and len(onetime[0].src) else None
  return ScriptCapture(jit.captured, b, names, data, ref, steps, init, want if null else None)


def _names(b: dict, outs) -> list[str]:
  n = len(outs) if isinstance(outs, (list, tuple)) else 1
  names = list(b.get("outputs") or [f"output{i}" for i in range(n)])
  if len(names) != n:
    raise ExportError(f"build() names {len(names)} outputs but fn returns {n}")
  return names


def _check_steps(got, want, names: list[str], exact: bool):
  (g_outs, g_state), (w_outs, w_state) = got, want
  for i, (g, w) in enumerate(zip(g_outs, w_outs)):
    _compare(f"step {i} output", g, w, names, exact)
  _compare("final state", [g_state[k] for k in sorted(w_state)], [w_state[k] for k in sorted(w_state)], sorted(w_state), exact)


def carried_closure_check(builder):
  """Refuse buffers fn captured and advances: after the capture's steps their initial contents are gone."""
  from mrt.state import carried_buffers

  if carried := sorted(carried_buffers(builder)):
    what = ", ".join(f"buffer {i} ({builder.buffers[i]['size']} bytes)" for i in carried)
    raise ExportError(
      f"fn advances tensors it captured ({what}) with assign; pass them through build()'s 'state' so their initial contents are known"
    )
