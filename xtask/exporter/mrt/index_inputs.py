"""Which integer graph inputs index what, and their valid range (bundle format 2.3 index checks).

tinygrad's kernels mask an out-of-range gather to zero, so a bundle fed an index past its table would return a plausible
wrong answer where onnxruntime refuses. The compile records, per integer graph input that reaches an index operand, the
range ONNX defines for it; `run` refuses out-of-range values before the first kernel (core/src/index_check.rs).

Index operands and their ranges (ONNX operator docs; negative indices count from the end):
- Gather, GatherElements, ScatterElements (and the deprecated Scatter): input 1, each element in [-s, s-1] with s the
  data's size along `axis`;
- GatherND (`batch_dims` b), ScatterND (b = 0): input 1 of shape [..., k]; element j of each index tuple (flat position
  ≡ j mod k) in [-s_j, s_j - 1] with s_j the data's size along axis b + j;
- LSTM, GRU, RNN: `sequence_lens` (input 4), each in [0, T] with T the sequence length (onnxruntime refuses others).
An input reaches an operand directly or through value-preserving ops (Identity, widening integer Casts; for the
element-wise ranges also Reshape, Squeeze, Unsqueeze, Flatten, Transpose, Expand). An input whose values are computed
into an index by other ops (Add, Mul, ...) cannot be checked this way: the compile says so instead of pretending.
Slice's starts/ends and other shape-like inputs never get here: they are refused earlier (mrt/baked.py).
"""

import contextlib

import onnx
from onnx import TensorProto, helper, shape_inference

# ONNX integer element types -> bit width, signedness
INT_TYPES = {
  TensorProto.INT8: (8, True),
  TensorProto.INT16: (16, True),
  TensorProto.INT32: (32, True),
  TensorProto.INT64: (64, True),
  TensorProto.UINT8: (8, False),
  TensorProto.UINT16: (16, False),
  TensorProto.UINT32: (32, False),
  TensorProto.UINT64: (64, False),
}
# recurrent ops: input 4 (sequence_lens) must lie in 0..=T
SEQ_LEN_OPS = frozenset({"LSTM", "GRU", "RNN"})
# ops whose output holds exactly the input's values, rearranged (input 0 is the data)
REARRANGE = frozenset({"Reshape", "Squeeze", "Unsqueeze", "Flatten", "Transpose", "Expand"})
# op -> (index input position, kind): "axis" ops check every element, "nd" ops check per index-tuple position
INDEX_OPS = {
  "Gather": (1, "axis"),
  "GatherElements": (1, "axis"),
  "ScatterElements": (1, "axis"),
  "Scatter": (1, "axis"),
  "GatherND": (1, "nd"),
  "ScatterND": (1, "nd"),
}


def _attr(node, name: str, default):
  for a in node.attribute:
    if a.name == name:
      return helper.get_attribute_value(a)
  return default


def _fixed_shapes(model, shapes: dict[str, tuple[int, ...]]) -> dict[str, tuple[int, ...]]:
  """Tensor name -> static shape, with the graph inputs fixed to the bundle's shapes (ONNX shape inference)."""
  m = onnx.ModelProto()
  m.CopyFrom(model)
  for i in m.graph.input:
    if i.name in shapes and i.type.HasField("tensor_type"):
      dims = i.type.tensor_type.shape.dim
      del dims[:]
      for d in shapes[i.name]:
        dims.add().dim_value = int(d)
  with contextlib.suppress(Exception):  # no inferred shapes: initializers and the inputs are still known
    m = shape_inference.infer_shapes(m, data_prop=True)
  out: dict[str, tuple[int, ...]] = {}
  for vi in list(m.graph.value_info) + list(m.graph.input) + list(m.graph.output):
    if vi.type.HasField("tensor_type") and vi.type.tensor_type.HasField("shape"):
      dims = vi.type.tensor_type.shape.dim
      if all(d.HasField("dim_value") for d in dims):
        out[vi.name] = tuple(int(d.dim_value) for d in dims)
  for t in m.graph.initializer:
    out[t.name] = tuple(int(d) for d in t.dims)
  out.update({n: tuple(s) for n, s in shapes.items()})
  return out


def _widens(src: tuple[int, bool], to: tuple[int, bool] | None) -> bool:
  """True if integer type `to` holds every value of `src` ((bits, signed) pairs)."""
  if to is None:
    return False
  (sb, ss), (tb, ts) = src, to
  return tb >= sb if ss == ts else (ts and tb > sb)


def _aliases(model, int_inputs: dict[str, int]) -> dict[str, tuple[str, bool]]:
  """Tensor name -> (graph input whose values it holds, True if element positions are unchanged)."""
  alias = {n: (n, True) for n in int_inputs}
  for node in model.graph.node:
    if not node.input or node.input[0] not in alias or not node.output:
      continue
    src, same_pos = alias[node.input[0]]
    if node.op_type == "Identity":
      alias[node.output[0]] = (src, same_pos)
    elif node.op_type == "Cast":
      to = _attr(node, "to", 0)
      if _widens(INT_TYPES[int_inputs[src]], INT_TYPES.get(to)):
        alias[node.output[0]] = (src, same_pos)  # every value survives the cast unchanged
    elif node.op_type in REARRANGE:
      alias[node.output[0]] = (src, False)
  return alias


def _name(node, k: int) -> str:
  return node.name or f"#{k}"


def index_checks(model, shapes: dict[str, tuple[int, ...]], log=None) -> list[dict]:
  """The manifest's `index_checks`: one record per (integer graph input, index operand[, tuple position]).
  `shapes`: the bundle's input shapes. `log` gets a note for each index operand that an input reaches through
  computed values (not checkable) or whose table size is unknown."""
  inits = {t.name for t in model.graph.initializer}
  int_inputs = {
    i.name: i.type.tensor_type.elem_type
    for i in model.graph.input
    if i.name not in inits and i.type.HasField("tensor_type") and i.type.tensor_type.elem_type in INT_TYPES
  }
  if not int_inputs:
    return []
  from mrt.baked import value_taint

  alias = _aliases(model, int_inputs)
  taint = value_taint(model, list(int_inputs))
  static = _fixed_shapes(model, shapes)
  out: list[dict] = []

  def note(msg):
    if log is not None:
      log(f"note: {msg}")

  for k, node in enumerate(model.graph.node):
    if node.op_type in SEQ_LEN_OPS:
      out += _seq_len_check(node, k, alias, static, note)
      continue
    if node.op_type not in INDEX_OPS:
      continue
    pos, kind = INDEX_OPS[node.op_type]
    if len(node.input) <= pos or not node.input[pos]:
      continue
    idx, data = node.input[pos], node.input[0]
    where = f"{node.op_type} '{_name(node, k)}'"
    if idx not in alias:
      for src in sorted(taint.get(idx, ())):
        if src in int_inputs:
          note(f"input '{src}' reaches the indices of {where} through computed values: not range-checked at run time")
      continue
    src, same_pos = alias[idx]
    dshape = static.get(data)
    if dshape is None:
      note(f"the table of {where} has no static shape: input '{src}' is not range-checked at run time")
      continue
    if kind == "axis":
      axis = int(_attr(node, "axis", 0))
      axis = axis + len(dshape) if axis < 0 else axis
      if not 0 <= axis < len(dshape):
        continue  # tinygrad and onnxruntime refuse the model themselves
      s = dshape[axis]
      out.append(_record(src, 1, 0, s, f"indices of {where} into axis {axis} of '{data}', size {s}"))
      continue
    ishape = static.get(idx)
    b = int(_attr(node, "batch_dims", 0)) if node.op_type == "GatherND" else 0
    if ishape is None or not ishape or b + ishape[-1] > len(dshape):
      note(f"the index tuples of {where} have no static shape: input '{src}' is not range-checked at run time")
      continue
    kk = ishape[-1]
    if same_pos:
      for j in range(kk):
        s = dshape[b + j]
        out.append(_record(src, kk, j, s, f"position {j} of the index tuples of {where}: axis {b + j} of '{data}', size {s}"))
    else:  # rearranged on the way: every element must at least fit the smallest axis it may index
      s = min(dshape[b : b + kk])
      out.append(_record(src, 1, 0, s, f"index tuples of {where} into axes {b}..{b + kk - 1} of '{data}', smallest size {s}"))
  return _dedup(out)


def _seq_len_check(node, k: int, alias: dict, static: dict, note) -> list[dict]:
  """LSTM/GRU/RNN `sequence_lens` (input 4): each value in 0..=T, T the sequence length of X (onnxruntime refuses others)."""
  if len(node.input) <= 4 or not node.input[4] or node.input[4] not in alias:
    return []
  src = alias[node.input[4]][0]
  xshape = static.get(node.input[0])
  if xshape is None or len(xshape) != 3:
    note(f"X of {node.op_type} '{_name(node, k)}' has no static shape: input '{src}' is not range-checked at run time")
    return []
  t = xshape[1] if int(_attr(node, "layout", 0)) else xshape[0]
  what = f"sequence lengths of {node.op_type} '{_name(node, k)}', whose input '{node.input[0]}' has {t} steps"
  return [{"input": src, "period": 1, "phase": 0, "min": 0, "max": t, "what": what}]


def _record(inp: str, period: int, phase: int, size: int, what: str) -> dict:
  return {"input": inp, "period": period, "phase": phase, "min": -size, "max": size - 1, "what": what}


def _dedup(records: list[dict]) -> list[dict]:
  seen, out = set(), []
  for r in records:
    key = (r["input"], r["period"], r["phase"], r["min"], r["max"])
    if key not in seen:
      seen.add(key)
      out.append(r)
  return out
