"""Kernel options for matrix-vector Gemm/MatMul kernels by a fixed rule (docs/cpu-kernels.md §3, "Gemm and MatMul"),
instead of tinygrad's hand-coded heuristic, which leaves the output features scalar (one scalar FMA chain each).

The layout pass (mrt/layout.py) records every Gemm/MatMul whose weight B is a 2-D float initializer read [K][N]
(MatMul, Gemm with transB 0) as (N, K). Its kernel has the N output features as an output axis and a reduction over
K (tinygrad fuses MatMuls summed together into one kernel with one reduction axis each: policy's 512, 8 and 2 inputs
into 128 features). For each reduction index one input value is broadcast against a contiguous run of weights along N,
as for a channel-last convolution's output channels. The rule, with V and R of mrt/conv_rule.py (floats per vector,
accumulator-register budget):
1. output features: UPCAST by all N when N is whole vectors within R, else by the most whole vectors dividing N that
   fit R (fewer features than a vector: all of them), so every reduction step loads whole weight vectors into FMAs;
2. reduction: the longest reduction axis is UNROLLed by 4 when it divides, so each loop trip issues 4 broadcasts;
3. threads: a THREAD split (the beam module's) only for a kernel of at least THREAD_MIN_FLOPS: a matrix-vector
   product of policy's size takes a few microseconds, of the order of the thread pool's wake-up and join.
A kernel is recognised when exactly one output axis is longer than 1, its size is a recorded N and every reduction
axis is the K of a recorded (N, K); anything else keeps tinygrad's heuristic (or the convolution rule).
"""

GEMMS: set[tuple[int, int]] = set()  # (N output features, K reduction) of every recorded matrix-vector weight
THREAD_MIN_FLOPS = 4 << 20  # below this a Gemm kernel stays on one thread (docs/cpu-kernels.md §3)
UNROLL = 4


def feature_upcast(n: int, vec: int, budget: int) -> int:
  """Output features per step: all N when it is whole vectors (or less than one) within the budget, else the most
  whole vectors dividing N that fit, else the largest divisor of N up to the budget's floats."""
  if (n % vec == 0 and n <= vec * budget) or n < vec:
    return n
  for m in range(budget, 0, -1):
    if n % (m * vec) == 0:
      return m * vec
  return max(d for d in range(1, vec * budget + 1) if n % d == 0)


def plan(full_shape: list[int], outs: list[int], red: list[int], vec: int, budget: int) -> list[tuple[str, int, int]] | None:
  """The rule as (op, axis, amount) triples in tinygrad's Opt numbering (UPCAST: the axis; UNROLL: the index among the
  reduction axes), or None when the kernel is not a recorded matrix-vector product."""
  from mrt.conv_rule import _steps

  big = [a for a in outs if full_shape[a] > 1]
  red = [a for a in red if full_shape[a] > 1]
  if len(big) != 1 or not red:
    return None
  ax, n = big[0], full_shape[big[0]]
  if not all((n, full_shape[r]) in GEMMS for r in red):
    return None
  u = feature_upcast(n, vec, budget)
  steps = _steps(u)
  if steps is None:
    return None
  opts = [("UPCAST", ax, s) for s in steps]
  longest = max(range(len(red)), key=lambda i: full_shape[red[i]])
  if full_shape[red[longest]] % UNROLL == 0 and full_shape[red[longest]] > UNROLL:
    opts.append(("UNROLL", longest, UNROLL))
  return opts


def rule_opts(ast, ren, vec: int, budget: int) -> tuple | None:
  """tinygrad Opts for `ast`, or None when it is not a recorded matrix-vector kernel."""
  from tinygrad.codegen.opt import Opt, OptOps
  from tinygrad.codegen.opt.postrange import Scheduler
  from tinygrad.uop.ops import AxisType

  if not GEMMS:
    return None
  k = Scheduler(ast, ren)
  k.convert_loop_to_global()
  shape = [int(s) for s in k.full_shape]
  p = plan(shape, k.axes_of(AxisType.GLOBAL, AxisType.WEAK, AxisType.LOOP), k.axes_of(AxisType.REDUCE), vec, budget)
  if p is None:
    return None
  return tuple(Opt(getattr(OptOps, op), axis, amt) for op, axis, amt in p)


def threaded(ast, ren) -> bool:
  """Whether the kernel is large enough for a THREAD split: 2 x its iteration space (the multiply-adds of a
  matrix-vector product) of at least THREAD_MIN_FLOPS."""
  from tinygrad.codegen.opt.postrange import Scheduler
  from tinygrad.helpers import prod

  return 2 * prod(int(s) for s in Scheduler(ast, ren).full_shape) >= THREAD_MIN_FLOPS


def scan(model) -> int:
  """Record the (N, K) of every Gemm/MatMul of `model` whose weight is a 2-D float initializer read [K][N]; returns
  how many were recorded. Reads the graph only."""
  import numpy as np
  from onnx import helper, numpy_helper

  GEMMS.clear()
  inits = {i.name: i for i in model.graph.initializer}
  count = 0
  for node in model.graph.node:
    if node.domain not in ("", "ai.onnx") or node.op_type not in ("MatMul", "Gemm") or len(node.input) < 2:
      continue
    w = inits.get(node.input[1])
    if w is None or len(w.dims) != 2 or numpy_helper.to_array(w).dtype != np.float32:
      continue
    a = {x.name: helper.get_attribute_value(x) for x in node.attribute}
    if node.op_type == "Gemm" and (a.get("transB", 0) or a.get("transA", 0)):
      continue
    GEMMS.add((int(w.dims[1]), int(w.dims[0])))
    count += 1
  return count
