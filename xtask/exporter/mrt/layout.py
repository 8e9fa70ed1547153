"""The channel-last layout pass for CPU targets: rewrites the ONNX graph tinygrad loads so convolution chains run NHWC.

ONNX convolutions are NCHW. tinygrad compiles the layout it is given, and on CPUs an NCHW convolution cannot be
vectorised across output channels (docs/cpu-kernels.md §1). This pass walks the graph in order and keeps every value
produced by a rewritten convolution channel-last:
- Conv (2-D, group 1, weight an initializer, explicit pads) -> MrtConvNhwc with the weight prepacked once here into
  [ky][kx][ci][co]; a depthwise conv (group = input channels = output channels, weight [C][1][ky][kx]) -> MrtDwConvNhwc
  with the weight prepacked [ky][kx][C], so each tap is a contiguous run of channels in both input and weight; a
  conv with a large weight (mrt/conv_rule.py block_plan) is computed channel-block-major
  (attribute co_block b, weight prepacked [cb][ky][kx][ci][b]) so one block of weights is reused by every output
  position, and hands the usual channel-last value on. A conv whose input is NCHW (a graph input, or a value the pass
  could not keep channel-last) reads it NCHW directly (attribute input_nchw), which costs less than a separate
  transpose kernel.
- elementwise ops on channel-last values stay channel-last; a constant operand is permuted here to match; an op
  joining two computed values (a residual Add) reads each from its own buffer (MrtRealize), as does every
  convolution's channel-last input, so each convolution stays its own kernel;
  BatchNormalization becomes a Mul and an Add with per-channel constants; MaxPool / AveragePool (ceil_mode 0) and
  GlobalAveragePool / GlobalMaxPool become channel-last pools; Concat over channels concatenates the last axis.
- any other consumer, and every graph output, gets the NCHW value back through MrtToNchw: the channel-last buffer is
  realized and read transposed by the consumer (a graph output: one small transpose kernel).
- Gemm/MatMul weights (initializers) are recorded for the matrix-vector kernel rule, and a Gemm's transB 1 weight is
  prepacked [K][N] (mrt/gemm_rule.py scan), so the kernel reads it along the output features.
So the graph's semantics and its inputs/outputs (names, shapes, layout) are unchanged; only the layout of the values
between convolutions changes. onnxruntime always runs the original model, so the compile's cross-check covers the pass.
"""

import os

import numpy as np
import onnx
from onnx import helper, numpy_helper

from mrt.nhwc_ops import CONCAT, CONV, DW_CONV, GLOBAL_POOL, POOL, REALIZE, TO_NCHW

UNARY = {
  "Relu", "LeakyRelu", "Sigmoid", "Tanh", "HardSigmoid", "HardSwish", "Elu", "Selu", "Softplus", "Exp", "Abs", "Neg", "Sqrt",
  "Erf", "Identity", "Mish", "Gelu", "Celu", "Softsign", "Floor", "Ceil", "Round", "Reciprocal", "Log", "Sin", "Cos",
}  # fmt: skip
BINARY = {"Add", "Sub", "Mul", "Div", "Max", "Min", "Pow", "PRelu", "Sum", "Where", "Clip"}
TO_NHWC = (0, 2, 3, 1)


def _widths(model) -> dict[str, int]:
  """Last-axis size (an NCHW map's width) of every value ONNX shape inference can size; {} when it cannot run."""
  try:
    from onnx import shape_inference

    inferred = shape_inference.infer_shapes(model)
  except Exception:
    return {}
  out = {}
  for v in list(inferred.graph.input) + list(inferred.graph.value_info):
    dims = v.type.tensor_type.shape.dim
    if len(dims) == 4 and dims[3].HasField("dim_value"):
      out[v.name] = int(dims[3].dim_value)
  return out


def _out_width(w_in: int | None, kw: int, a: dict) -> int | None:
  if w_in is None:
    return None
  pads, s, d = list(a.get("pads", [0, 0, 0, 0])), list(a.get("strides", [1, 1])), list(a.get("dilations", [1, 1]))
  return (w_in + pads[1] + pads[3] - d[1] * (kw - 1) - 1) // s[1] + 1


def _attrs(node) -> dict:
  return {a.name: helper.get_attribute_value(a) for a in node.attribute}


class _Pass:
  def __init__(self, model):
    self.g = model.graph
    self.model = model  # for mrt/winograd.py takes(): the input shape a conv's output size follows from
    self.consts: dict[str, np.ndarray] = {i.name: numpy_helper.to_array(i) for i in self.g.initializer}
    for n in self.g.node:
      if n.op_type == "Constant" and len(n.attribute) == 1 and n.attribute[0].name == "value":
        self.consts[n.output[0]] = numpy_helper.to_array(n.attribute[0].t)
    self.uses: dict[str, int] = {}
    for n in self.g.node:
      for i in n.input:
        self.uses[i] = self.uses.get(i, 0) + 1
    self.nhwc: dict[str, str] = {}  # original value name -> its channel-last value's name
    self.back: set[str] = set()  # original names already transposed back
    self.nodes: list = []
    self.inits: list = []
    self.rewritten: dict[str, int] = {}  # op type -> count
    self.done_realize: set[str] = set()
    self.widths = _widths(model)
    self.blocked = 0
    self.depthwise_convs = 0

  def fresh_const(self, base: str, arr: np.ndarray) -> str:
    name = f"{base}__mrt{len(self.inits)}"
    self.inits.append(numpy_helper.from_array(np.ascontiguousarray(arr), name))
    return name

  def nchw(self, name: str, output: bool = False) -> str:
    """`name` as the model means it (NCHW): a channel-last value gets its transpose back (MrtToNchw), once."""
    if name in self.nhwc and name not in self.back:
      self.nodes.append(helper.make_node(TO_NCHW, [self.nhwc[name]], [name], output=int(output)))
      self.back.add(name)
    return name

  def realized(self, name: str) -> str:
    """The channel-last value of `name` read from its own buffer (MrtRealize), once."""
    r = f"{name}__real"
    if r not in self.done_realize:
      self.nodes.append(helper.make_node(REALIZE, [self.nhwc[name]], [r]))
      self.done_realize.add(r)
    return r

  def keep(self, node):
    node_inputs = [self.nchw(i) if i else i for i in node.input]
    del node.input[:]
    node.input.extend(node_inputs)
    self.nodes.append(node)

  def out(self, node, op_type: str, inputs: list[str], domain_attrs: dict | None = None):
    y = node.output[0]
    self.nhwc[y] = f"{y}__nhwc"
    self.nodes.append(helper.make_node(op_type, inputs, [self.nhwc[y]], name=node.name, **(domain_attrs or {})))
    self.rewritten[node.op_type] = self.rewritten.get(node.op_type, 0) + 1

  def conv(self, node) -> bool:
    a = _attrs(node)
    w = self.consts.get(node.input[1])
    if w is None or w.ndim != 4 or a.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET") or w.dtype != np.float32:
      return False
    if a.get("group", 1) != 1:
      return self.depthwise(node, a, w)
    from mrt.winograd import takes, value_shapes

    if takes(w.shape, a, value_shapes(self.model).get(node.input[0])):
      return False  # --winograd auto|on: this conv stays NCHW for mrt/winograd.py (docs/cpu-kernels.md section 6)
    b = node.input[2] if len(node.input) > 2 and node.input[2] else None
    if b is not None and b not in self.consts:
      return False
    x = node.input[0]
    from mrt.conv_rule import BLOCKED, CONVS, block_plan

    co, red = int(w.shape[0]), int(w.shape[1] * w.shape[2] * w.shape[3])
    CONVS.add((co, red))
    packed_w = w.transpose(2, 3, 1, 0)  # [co][ci][ky][kx] -> [ky][kx][ci][co]
    blk = block_plan(co, red, _out_width(self.widths.get(x), int(w.shape[3]), a))
    if blk:  # -> [cb][ky][kx][ci][b]
      BLOCKED.add((blk, red))
      packed_w = packed_w.reshape(*packed_w.shape[:3], co // blk, blk).transpose(3, 0, 1, 2, 4)
    packed = self.fresh_const(node.input[1], packed_w)
    ins = [self.nhwc.get(x, x), packed] + ([b] if b else [])
    attrs = {
      "pads": list(a.get("pads", [0, 0, 0, 0])),
      "strides": list(a.get("strides", [1, 1])),
      "dilations": list(a.get("dilations", [1, 1])),
      "input_nchw": 0 if x in self.nhwc else 1,
    }
    if blk:
      attrs["co_block"] = blk
      self.blocked += 1
    self.out(node, CONV, ins, attrs)
    return True

  def depthwise(self, node, a: dict, w: np.ndarray) -> bool:
    """A depthwise conv (group = C, weight [C][1][ky][kx], so C output channels): channel-last with the weight
    prepacked [ky][kx][C]; any other grouped conv stays NCHW."""
    c = int(w.shape[0])
    if a.get("group", 1) != c or int(w.shape[1]) != 1:
      return False
    b = node.input[2] if len(node.input) > 2 and node.input[2] else None
    if b is not None and b not in self.consts:
      return False
    from mrt.conv_rule import CONVS

    x = node.input[0]
    CONVS.add((c, int(w.shape[2] * w.shape[3])))
    packed = self.fresh_const(node.input[1], w[:, 0].transpose(1, 2, 0))  # [C][ky][kx] -> [ky][kx][C]
    attrs = {
      "pads": list(a.get("pads", [0, 0, 0, 0])),
      "strides": list(a.get("strides", [1, 1])),
      "dilations": list(a.get("dilations", [1, 1])),
      "input_nchw": 0 if x in self.nhwc else 1,
    }
    self.out(node, DW_CONV, [self.nhwc.get(x, x), packed] + ([b] if b else []), attrs)
    self.depthwise_convs += 1
    return True

  def elementwise(self, node) -> bool:
    ins = list(node.input)
    if not any(i in self.nhwc for i in ins):
      return False
    new = []
    joins = sum(1 for i in ins if i in self.nhwc) >= 2
    for i in ins:
      if not i:
        new.append(i)
      elif i in self.nhwc and joins:
        new.append(self.realized(i))
      elif i in self.nhwc:
        new.append(self.nhwc[i])
      elif i in self.consts:
        c = self.consts[i]
        if c.size == 1 or c.ndim == 0:
          new.append(i)
        elif c.ndim <= 4:
          c4 = c.reshape((1,) * (4 - c.ndim) + c.shape)
          new.append(self.fresh_const(i, c4.transpose(TO_NHWC)))
        else:
          return False
      else:
        return False  # a dynamic operand in NCHW: keep the op NCHW
    self.out(node, node.op_type, new, _attrs(node))
    return True

  def batchnorm(self, node) -> bool:
    x = node.input[0]
    if x not in self.nhwc or len(node.output) != 1 or not all(i in self.consts for i in node.input[1:5]):
      return False
    scale, bias, mean, var = (self.consts[i].astype(np.float64) for i in node.input[1:5])
    eps = _attrs(node).get("epsilon", 1e-5)
    k = scale / np.sqrt(var + eps)
    mul_out = f"{node.output[0]}__bnmul"
    self.nodes.append(helper.make_node("Mul", [self.nhwc[x], self.fresh_const(node.input[1], k.astype(np.float32))], [mul_out]))
    self.out(node, "Add", [mul_out, self.fresh_const(node.input[2], (bias - mean * k).astype(np.float32))])
    return True

  def pool(self, node) -> bool:
    x, a = node.input[0], _attrs(node)
    if x not in self.nhwc or len(node.output) != 1 or a.get("ceil_mode", 0) or a.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
      return False
    ks = list(a["kernel_shape"])
    if len(ks) != 2:
      return False
    attrs = {
      "kernel_shape": ks,
      "pads": list(a.get("pads", [0, 0, 0, 0])),
      "strides": list(a.get("strides", [1, 1])),
      "dilations": list(a.get("dilations", [1, 1])),
      "mode": "max" if node.op_type == "MaxPool" else "avg",
      "count_include_pad": int(a.get("count_include_pad", 0)),
    }
    self.out(node, POOL, [self.nhwc[x]], attrs)
    return True

  def global_pool(self, node) -> bool:
    if node.input[0] not in self.nhwc:
      return False
    self.out(node, GLOBAL_POOL, [self.nhwc[node.input[0]]], {"mode": "max" if node.op_type == "GlobalMaxPool" else "avg"})
    return True

  def concat(self, node) -> bool:
    if _attrs(node).get("axis") not in (1, -3) or not node.input or not all(i in self.nhwc for i in node.input):
      return False
    self.out(node, CONCAT, [self.nhwc[i] for i in node.input])
    return True

  def run(self):
    for node in self.g.node:
      op = node.op_type
      done = False
      if node.domain in ("", "ai.onnx") and len(node.output) >= 1:
        if op == "Conv":
          done = self.conv(node)
        elif ((op in UNARY and len(node.input) == 1) or op == "Dropout" or op in BINARY) and len(node.output) == 1:
          done = self.elementwise(node)
        elif op == "BatchNormalization":
          done = self.batchnorm(node)
        elif op in ("MaxPool", "AveragePool"):
          done = self.pool(node)
        elif op in ("GlobalAveragePool", "GlobalMaxPool"):
          done = self.global_pool(node)
        elif op == "Concat":
          done = self.concat(node)
      if not done:
        self.keep(node)
    for o in self.g.output:
      self.nchw(o.name, output=True)


def rewrite(onnx_path: str, out_dir: str, log=None) -> str:
  """Write the channel-last form of `onnx_path` into `out_dir` and return its path; `onnx_path` itself when the graph
  has no convolution the pass rewrites."""
  from mrt.nhwc_ops import register

  register()
  try:
    model = onnx.load(onnx_path)
  except Exception:
    from mrt.capture import load_onnx

    load_onnx(onnx_path)  # raises the one-line "not a readable ONNX model" (or "model not found") error
    raise
  from mrt.gemm_rule import scan

  packed = scan(model)  # matrix-vector weights for the Gemm rule (mrt/gemm_rule.py); transB 1 ones prepacked [K][N]
  p = _Pass(model)
  p.run()
  if not p.rewritten.get("Conv") and not packed:
    return onnx_path
  g = model.graph
  del g.node[:]
  g.node.extend(p.nodes)
  g.initializer.extend(p.inits)
  del g.value_info[:]
  used = {i for n in g.node for i in n.input}
  keep = [i for i in g.initializer if i.name in used]
  dropped = {i.name for i in g.initializer} - {i.name for i in keep}
  del g.initializer[:]
  g.initializer.extend(keep)
  inputs = [i for i in g.input if i.name not in dropped]  # IR < 4 models also list initializers as graph inputs
  del g.input[:]
  g.input.extend(inputs)
  os.makedirs(out_dir, exist_ok=True)
  path = os.path.join(out_dir, "nhwc.onnx")
  onnx.save(model, path)
  if log is not None:
    what = ", ".join(f"{n} {op}" for op, n in sorted(p.rewritten.items()))
    blocked = f"; {p.blocked} with large weights channel-block-major [cb][ky][kx][ci][b]" if p.blocked else ""
    blocked += f"; {p.depthwise_convs} depthwise, weights [ky][kx][C]" if p.depthwise_convs else ""
    if p.rewritten:
      log(f"layout pass: channel-last ({what}); weights prepacked [ky][kx][ci][co]{blocked}")
    if packed:
      log(f"layout pass: {packed} Gemm weight(s) prepacked [K][N] (mrt/gemm_rule.py)")
  return path
