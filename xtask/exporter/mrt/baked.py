"""Refuse graph inputs whose *values* tinygrad would bake into the captured program.

tinygrad's ONNX frontend turns some op inputs into Python constants when it builds the graph (Reshape's shape, Slice's
starts/ends, Pad's pads, Resize's scales, Split's sizes, Tile's repeats, Reduce*'s axes, ...: the table
`tinygrad.nn.onnx.required_input_python_consts`, plus If's condition). A capture reads such a value once, from the
seeded capture inputs, and the bundle then computes with that value forever. When such a parameter is derived from a
graph input's value, the bundle would silently compute something else for every other input, so we refuse and name the
input; `--const NAME=FILE.npy` (mrt/consts.py) folds a fixed value into the graph instead.

The analysis is a forward data-flow over the ONNX graph: a tensor is *value-tainted* by the graph inputs its values are
computed from. Shape and Size outputs depend only on shapes, which a bundle fixes, so they are never tainted. Nodes with
subgraphs (If/Loop/Scan) taint their outputs with everything their subgraphs read from the outer scope.
See docs/hw/tinygrad-export.md §11.
"""

from mrt.targets import ExportError

SHAPE_ONLY_OPS = frozenset({"Shape", "Size"})
# Inputs tinygrad reads as Python values outside required_input_python_consts (checked in tinygrad 0.14.0 nn/onnx.py).
EXTRA_PYTHON_CONSTS = {"If": (0,)}


def _python_const_table() -> dict:
  from tinygrad.nn.onnx import required_input_python_consts

  return {**required_input_python_consts, **EXTRA_PYTHON_CONSTS}


def _subgraph_reads(node) -> set[str]:
  """Names a node's subgraphs read (a superset of their outer-scope reads)."""
  from onnx import AttributeProto

  names: set[str] = set()
  for a in node.attribute:
    graphs = [a.g] if a.type == AttributeProto.GRAPH else list(a.graphs) if a.type == AttributeProto.GRAPHS else []
    for g in graphs:
      for n in g.node:
        names.update(i for i in n.input if i)
        names |= _subgraph_reads(n)
  return names


def value_taint(model, input_names: list[str]) -> dict[str, frozenset]:
  """tensor name -> the graph inputs its values depend on (absent or empty: none)."""
  taint: dict[str, frozenset] = {n: frozenset([n]) for n in input_names}
  for node in model.graph.node:
    if node.op_type in SHAPE_ONLY_OPS:
      src = frozenset()
    else:
      src = frozenset().union(*(taint.get(i, frozenset()) for i in node.input if i))
      src = src.union(*(taint.get(i, frozenset()) for i in _subgraph_reads(node)))
    for o in node.output:
      if o:
        taint[o] = src
  return taint


def baked_inputs(model, input_names: list[str]) -> list[tuple[str, str, int, str]]:
  """(graph input, op type, input index, node name) for every Python-constant op input whose value comes from a graph input."""
  table = _python_const_table()
  taint = value_taint(model, input_names)
  found = []
  for k, node in enumerate(model.graph.node):
    for idx in table.get(node.op_type, ()):
      if idx < len(node.input) and node.input[idx]:
        for inp in sorted(taint.get(node.input[idx], ())):
          found.append((inp, node.op_type, idx, node.name or f"#{k}"))
  return found


# Ops that draw random numbers: a capture runs them once, so the bundle would repeat that one draw on every run.
RANDOM_OPS = frozenset({"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Bernoulli", "Multinomial"})
# Ops whose index input, when it comes from the graph's inputs, cannot be drawn at random: duplicate indices make the
# result implementation-defined, so tinygrad and onnxruntime may both be right and still differ.
INDEX_INPUTS = {"MaxUnpool": 1, "ScatterND": 1, "ScatterElements": 1, "Scatter": 1}


def _training_dropout(node, inits: dict) -> bool:
  """Dropout in training mode (its third input is not a constant False) with a ratio that is not a constant 0."""
  if node.op_type != "Dropout" or len(node.input) < 3 or not node.input[2]:
    return False
  from onnx import numpy_helper

  def const(i):
    return numpy_helper.to_array(inits[node.input[i]]) if node.input[i] in inits else None

  training, ratio = const(2), const(1) if node.input[1] else None
  if training is not None and not training.any():
    return False
  return ratio is None or bool(ratio.any())


def refuse_random_ops(model):
  inits = {i.name: i for i in model.graph.initializer}
  for k, node in enumerate(model.graph.node):
    if node.op_type in RANDOM_OPS or _training_dropout(node, inits):
      raise ExportError(
        f"node '{node.name or f'#{k}'}' ({node.op_type}{' in training mode' if node.op_type == 'Dropout' else ''}) "
        "draws random numbers: a bundle would repeat the capture's one draw on every run"
      )


def random_index_inputs(model, input_names: list[str]) -> list[str]:
  """Ops whose index input comes from a graph input (random capture values are not valid indices for them)."""
  taint = value_taint(model, input_names)
  return [
    n.op_type
    for n in model.graph.node
    if n.op_type in INDEX_INPUTS and len(n.input) > INDEX_INPUTS[n.op_type] and taint.get(n.input[INDEX_INPUTS[n.op_type]])
  ]


def refuse_baked_inputs(model, input_names: list[str]):
  found = baked_inputs(model, input_names)
  if not found:
    return
  inp, op, idx, node = found[0]
  names = sorted({f[0] for f in found})
  fix = " ".join(f"--const {n}=FILE.npy" for n in names)
  raise ExportError(
    f"input '{inp}' sets a shape-like parameter (input {idx} of node '{node}' ({op})), so its value at capture "
    f"would be baked into the bundle; fix its value at compile time with {fix}"
  )
