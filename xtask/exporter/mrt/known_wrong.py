"""ONNX op configurations that tinygrad 0.14.0's frontend computes differently from the ONNX reference on some inputs.

tinygrad is the kernel compiler, so a bundle inherits every wrong answer its ONNX frontend gives. Most such bugs show on
any input and the compile-time cross-check with onnxruntime (mrt/verify.py) refuses them; the ones below only show on
particular values (zero vectors, ±inf, fully masked rows, ...) that random capture inputs do not hit, or where
onnxruntime itself departs from the ONNX reference, so they are refused by configuration. Each rule names the ONNX
node tests (`cargo xtask conformance`, docs/conformance.md) where tinygrad's own eager run gives the wrong answer.
`--trust-tinygrad` compiles them anyway.
"""

from collections.abc import Callable
from dataclasses import dataclass

from mrt.targets import ExportError


def _attr(node, name: str, default=None):
  from onnx import helper

  for a in node.attribute:
    if a.name == name:
      return helper.get_attribute_value(a)
  return default


def _s(v) -> str:
  return v.decode() if isinstance(v, bytes) else (v or "")


def _may_downsample(node, t) -> bool:
  """False only when Resize's scales are a known initializer with every scale >= 1."""
  scales = t.initializer(node.input[2]) if len(node.input) > 2 and node.input[2] else None
  sizes_given = len(node.input) > 3 and bool(node.input[3])
  return sizes_given or scales is None or bool((scales < 1).any())


@dataclass(frozen=True)
class Rule:
  op: str
  applies: Callable  # (node, types: _Types) -> bool
  what: str  # what tinygrad gets wrong, in a few words
  evidence: tuple[str, ...]


FLOAT_TYPES = (1, 10, 11, 16)  # float, float16, double, bfloat16
FLOAT16, BOOL = 10, 9

RULES = (
  Rule("LpNormalization", lambda n, t: True, "returns NaN instead of 0 for an all-zero vector", ("test_l2normalization_axis_0",)),
  Rule(
    "Mod",
    lambda n, t: _attr(n, "fmod", 0) == 0 and t(n.input[0]) in FLOAT_TYPES,
    "with fmod=0 on floats differs at ±0 and ±inf",
    ("test_mod_float_edge_cases_fmod_0_float32",),
  ),
  Rule(
    "Resize",
    lambda n, t: (
      _s(_attr(n, "coordinate_transformation_mode")) == "align_corners"
      and _s(_attr(n, "mode", b"nearest")) in ("linear", "cubic")
      and _may_downsample(n, t)
    ),
    "linear/cubic with align_corners differs when downsampling",
    ("test_resize_downsample_scales_linear_align_corners", "test_resize_downsample_scales_cubic_align_corners"),
  ),
  Rule(
    "Attention",
    lambda n, t: len(n.input) > 3 and bool(n.input[3]) and t(n.input[3]) == BOOL,
    "with a boolean attn_mask gives NaN for a fully masked row",
    ("test_attention_23_boolmask_fullymasked_row_nan_robustness", "test_attention_24_fullymasked_qk_matmul_output_mode3_zero"),
  ),
  Rule(
    "Attention",
    lambda n, t: t(n.input[0]) == FLOAT16,
    "on float16 inputs differs from ONNX's float16 reference by an ulp",
    ("test_attention_4d_fp16", "test_attention_4d_causal_fp16"),
  ),
  Rule(
    "Softmax",
    lambda n, t: t(n.input[0]) == FLOAT16,
    "on float16 inputs differs from ONNX's float16 reference by an ulp",
    ("test_attention_4d_fp16_expanded",),
  ),
  Rule(
    "MaxUnpool",
    lambda n, t: len(n.input) > 2 and bool(n.input[2]),
    "with an output_shape input places values wrongly",
    ("test_maxunpool_export_with_output_shape",),
  ),
  Rule(
    "ConvInteger",
    lambda n, t: any(_attr(n, "pads", []) or []),
    "differs from ONNX at padded positions when x_zero_point is not 0",
    ("test_convinteger_with_padding",),
  ),
)


class _Types:
  """What the rules may ask about a tensor: its ONNX element type (`t(name)`) and, for initializers, its value."""

  def __init__(self, model):
    try:  # intermediate tensors' types (e.g. a Softmax input) come from ONNX's own shape inference
      from onnx import shape_inference

      model = shape_inference.infer_shapes(model)
    except Exception:
      pass
    self.types = {
      v.name: v.type.tensor_type.elem_type
      for v in list(model.graph.input) + list(model.graph.value_info) + list(model.graph.output)
      if v.type.HasField("tensor_type")
    }
    self.types.update({i.name: i.data_type for i in model.graph.initializer})
    self.inits = {i.name: i for i in model.graph.initializer}

  def __call__(self, name: str):
    return self.types.get(name)

  def initializer(self, name: str):
    from onnx import numpy_helper

    return numpy_helper.to_array(self.inits[name]) if name in self.inits else None


def known_wrong(model) -> list[tuple[str, str, Rule]]:
  """(node name, op, rule) for every node a rule applies to."""
  types = _Types(model)
  found = []
  for k, node in enumerate(model.graph.node):
    for r in RULES:
      if r.op == node.op_type and r.applies(node, types):
        found.append((node.name or f"#{k}", node.op_type, r))
  return found


def refuse_known_wrong(model):
  if not (found := known_wrong(model)):
    return
  node, op, r = found[0]
  raise ExportError(
    f"tinygrad 0.14.0's {op} {r.what} (ONNX test {r.evidence[0]}); node '{node}' ({op}) is refused so the bundle "
    "cannot give that wrong answer (--trust-tinygrad compiles it anyway)"
  )
