"""Quantisation-aware cross-check of tinygrad's result against onnxruntime's (docs/hw/tinygrad-export.md §11.1).

A quantised graph (QDQ pairs, QLinear* ops, integer Conv/MatMul) cannot agree with onnxruntime to 1e-4. onnxruntime
fuses DequantizeLinear -> op -> QuantizeLinear into integer kernels (int32 accumulation, one requantisation multiply,
round half to even); tinygrad computes the graph as written, in float32 (dequantise, accumulate in its own order,
divide by the scale, and for a uint8 QuantizeLinear round by adding 0.4999999 and truncating). A value whose exact
rescaled result lies within float error of a rounding boundary lands on either side, so single activations differ by
one step, and those differences travel through the later layers and grow with depth. onnxruntime itself shows it: its
fused run and its unfused run (graph optimisations off: the QDQ graph as float ops) of the same graph disagree by as
much as tinygrad and onnxruntime do (docs/hexagon.md, "Quantised cross-check").

So each output gets a *step*: the scale of the DequantizeLinear that produces it (through Identity/Reshape/Flatten/
Squeeze/Unsqueeze), or 1 for an integer output of QuantizeLinear / a QLinear* op; and a tolerance calibrated on the
same inputs by onnxruntime's own disagreement (fused vs unfused, in steps): tinygrad must stay within
K_STEPS + that maximum everywhere, and its root-mean-square difference within RMS_STEPS + onnxruntime's own. Outputs
without a step (ConvInteger/MatMulInteger's exact int32 results, floats computed after the last DequantizeLinear)
keep the ordinary comparison of mrt/verify.py.
"""

from typing import NamedTuple

import numpy as np

# Measured (docs/hexagon.md, "Quantised cross-check"): tinygrad vs onnxruntime differ by at most 1 step / rms 0.63 on the
# 64x64 QDQ net over 10 input seeds (onnxruntime's fused and unfused runs agree exactly there), and by at most 4 steps /
# rms 1.49 on the 224x224 one over 5 seeds (where onnxruntime's own runs differ by up to 5 steps / rms 1.35). The floors
# leave 3x (max) and 2.4x (rms) margin on the shallow net; deeper nets add onnxruntime's own spread on the same inputs.
K_STEPS = 3
RMS_STEPS = 1.5
QUANT_OPS = frozenset(
  {
    "QuantizeLinear",
    "DequantizeLinear",
    "DynamicQuantizeLinear",
    "QLinearConv",
    "QLinearMatMul",
    "QLinearAdd",
    "QLinearMul",
    "QLinearGlobalAveragePool",
    "QLinearAveragePool",
    "QLinearConcat",
    "QLinearLeakyRelu",
    "QLinearSigmoid",
    "QLinearSoftmax",
    "QGemm",
    "ConvInteger",
    "MatMulInteger",
    "DynamicQuantizeMatMul",
    "MatMulIntegerToFloat",
  }
)
# ops whose first output is a quantised integer tensor (one step = 1)
_INTEGER_STEP_OPS = frozenset(
  {
    "QuantizeLinear",
    "DynamicQuantizeLinear",
    "QLinearConv",
    "QLinearMatMul",
    "QLinearAdd",
    "QLinearMul",
    "QLinearGlobalAveragePool",
    "QLinearAveragePool",
    "QLinearConcat",
    "QLinearLeakyRelu",
    "QLinearSigmoid",
    "QLinearSoftmax",
  }
)
_SAME_VALUES = frozenset({"Identity", "Reshape", "Flatten", "Squeeze", "Unsqueeze"})  # move values, change none
# producer flag ORT_TOLERANCE (no spaces: the bundle joins flags with them)
FLAG = f"quantised:max={K_STEPS}+ort_self,rms={RMS_STEPS}+ort_self"


class Step(NamedTuple):
  """One quantisation step of an output: `scale` (one value, or per-channel values along `axis`)."""

  scale: np.ndarray
  axis: int | None

  def broadcast(self, ndim: int) -> np.ndarray:
    if self.axis is None or self.scale.size == 1:
      return np.float64(self.scale.max())
    axis = self.axis + ndim if self.axis < 0 else self.axis
    if not 0 <= axis < ndim:
      return np.float64(self.scale.max())
    return self.scale.astype(np.float64).reshape([-1 if d == axis else 1 for d in range(ndim)])


class Tolerance(NamedTuple):
  """An output's step and onnxruntime's own disagreement (fused vs unfused) on the capture inputs, in steps."""

  step: Step
  ort_max: float
  ort_rms: float

  @property
  def max_steps(self) -> float:
    return K_STEPS + self.ort_max

  @property
  def rms_steps(self) -> float:
    return RMS_STEPS + self.ort_rms


def _constants(model) -> dict[str, np.ndarray]:
  from onnx import numpy_helper

  out = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
  for n in model.graph.node:
    if n.op_type == "Constant" and n.output and n.attribute and n.attribute[0].name == "value":
      out[n.output[0]] = numpy_helper.to_array(n.attribute[0].t)
  return out


def _attr(node, name: str, default: int) -> int:
  return next((int(a.i) for a in node.attribute if a.name == name), default)


def output_steps(model) -> dict[str, Step] | None:
  """None for a graph with no quantisation op; else graph output name -> its Step, for the outputs that have one."""
  if not any(n.op_type in QUANT_OPS for n in model.graph.node):
    return None
  producer = {o: n for n in model.graph.node for o in n.output}
  consts = _constants(model)
  steps: dict[str, Step] = {}
  for out in model.graph.output:
    name, moved = out.name, False
    while (n := producer.get(name)) is not None and n.op_type in _SAME_VALUES:
      name, moved = n.input[0], True
    if n is None:
      continue
    if n.op_type in _INTEGER_STEP_OPS and n.output[0] == name:
      steps[out.name] = Step(np.ones(1), None)
    elif n.op_type == "DequantizeLinear" and len(n.input) > 1 and (s := consts.get(n.input[1])) is not None:
      s = np.asarray(s, dtype=np.float64).ravel()
      if s.size == 0 or not np.all(np.isfinite(s)) or np.any(s <= 0):
        continue
      per_channel = s.size > 1 and not moved and _attr(n, "block_size", 0) == 0  # else the largest scale, conservatively
      steps[out.name] = Step(s, _attr(n, "axis", 1) if per_channel else None)
  return steps


def distance(got: np.ndarray, want: np.ndarray, step: Step, half: bool) -> np.ndarray:
  """|got - want| per element in steps, after allowing the rounding of a dequantised value to the output's float type."""
  g, w = np.asarray(got).astype(np.float64), np.asarray(want).astype(np.float64).reshape(np.shape(got))
  slack = (5e-2 if half else 2 * float(np.finfo(got.dtype).eps)) * np.abs(w) if got.dtype.kind == "f" else 0.0
  with np.errstate(invalid="ignore"):
    d = np.abs(g - w)
    d[np.isnan(g) & np.isnan(w)] = 0.0
    d = np.where(np.isnan(d), np.inf, d)
  return np.maximum(d - slack, 0.0) / step.broadcast(g.ndim)


def _spread(d: np.ndarray) -> tuple[float, float]:
  return (float(np.max(d)), float(np.sqrt(np.mean(np.square(d))))) if d.size else (0.0, 0.0)


def tolerances(onnx_path: str, feeds: dict, fused: dict, log) -> dict[str, Tolerance]:
  """Output name -> Tolerance for the stepped outputs of a quantised graph ({} otherwise). `fused`: onnxruntime's
  ordinary (optimised) outputs for `feeds`; its unfused run on the same feeds calibrates the tolerance."""
  import onnx

  from mrt.verify import ort_outputs

  steps = output_steps(onnx.load(onnx_path, load_external_data=False))
  steps = {n: s for n, s in (steps or {}).items() if n in fused}
  if not steps:
    return {}
  plain, why = ort_outputs(onnx_path, feeds, fuse=False)
  if plain is None:
    log(f"note: onnxruntime cannot run this graph unfused ({why}); quantisation tolerance without its own spread")
  out = {}
  for n, s in steps.items():
    f = np.asarray(fused[n])
    spread = _spread(distance(np.asarray(plain[n]).reshape(f.shape), f, s, False)) if plain is not None and n in plain else (0.0, 0.0)
    out[n] = Tolerance(s, *spread)
  return out


def quant_mismatch(got: np.ndarray, want: np.ndarray, tol: Tolerance, half: bool) -> str | None:
  """None when `got` is within tol.max_steps of `want` everywhere and within tol.rms_steps in root mean square."""
  want = np.asarray(want)
  if got.shape != want.shape:
    return f"shape {list(got.shape)} != onnxruntime's {list(want.shape)}"
  worst, rms = _spread(distance(got, want, tol.step, half))
  if worst > tol.max_steps + 1e-6:
    return (
      f"{worst:.3g} quantisation steps (scale {float(tol.step.scale.max()):.3g}) apart somewhere, at most "
      f"{tol.max_steps:.3g} allowed ({K_STEPS} + onnxruntime's own {tol.ort_max:.3g})"
    )
  if rms > tol.rms_steps + 1e-6:
    return f"root mean square {rms:.3g} steps, at most {tol.rms_steps:.3g} allowed ({RMS_STEPS} + onnxruntime's own {tol.ort_rms:.3g})"
  return None


def describe(got: np.ndarray, want: np.ndarray, tol: Tolerance, half: bool) -> str:
  """The measured difference in steps and the bounds, for the log."""
  worst, rms = _spread(distance(np.asarray(got), want, tol.step, half))
  return (
    f"max {worst:.3g} step(s) (<= {tol.max_steps:.3g}), rms {rms:.3g} (<= {tol.rms_steps:.3g}); onnxruntime fused vs "
    f"unfused: max {tol.ort_max:.3g}, rms {tol.ort_rms:.3g}; step {float(tol.step.scale.max()):.3g}"
  )


def quantised_reference(ref: dict, onnx_path: str, feeds: dict, ort_out: dict, log) -> dict:
  """Widen the embedded reference's atol for a quantised graph to the largest max_steps x step among its outputs (the
  bundle carries one atol for all outputs), so `modelrt verify` accepts what the cross-check accepts. Returns the
  producer flags to record ({} for a graph with no stepped output)."""
  tols = tolerances(onnx_path, feeds, {n: ort_out[n] for n in ref["outputs"] if n in ort_out}, log)
  if not tols:
    return {}
  atol = max(t.max_steps * float(t.step.scale.max()) for t in tols.values())
  ref["atol"] = max(ref["atol"], atol)
  log(f"quantised graph: reference tolerance atol {ref['atol']:.3g} (the cross-check's bound in steps x the output's step)")
  return {"ORT_TOLERANCE": FLAG}
