"""Kernel options for Gemm/MatMul kernels — matrix-vector (batch 1) and matrix-matrix (M rows: openpilot's 25-step
histories) — by a fixed rule (docs/cpu-kernels.md §3, "Gemm and MatMul"), instead of tinygrad's hand-coded
heuristic, which leaves the output features scalar (one scalar FMA chain each).

The layout pass (mrt/layout.py) calls scan(): every Gemm/MatMul whose weight B is a 2-D float initializer is recorded
as (N, K), read [K][N] (MatMul, Gemm with transB 0; a Gemm's transB 1 weight is prepacked to [K][N] once at export).
Its kernel has the N output features as an output axis and the reduction over K, either as one axis, split in several
(dmonitor's Flatten: 1600 = 32 x 50), or one axis per MatMul where tinygrad fuses MatMuls summed together (policy's
512, 8 and 2 inputs into 128 features). For each reduction index one input value is broadcast against a contiguous
run of weights along N, as for a channel-last convolution's output channels. The rule, with V and R of
mrt/conv_rule.py (floats per vector, accumulator-register budget):
1. output features: UPCAST by all N when N is whole vectors within R, else by the most whole vectors dividing N that
   fit R (fewer features than a vector: all of them), so every reduction step is whole-vector loads and FMAs into
   independent accumulators (policy's 128 features: 8 ymm x 2 trips, or 8 zmm at once);
1b. rows (a kernel with a second output axis of M rows before the features, a matrix-matrix product): a block of r
   rows x v vectors of features (r dividing M, at most MAX_ROWS; v whole vectors dividing N, at most MAX_VECTORS) with
   r*v accumulators within R, the most accumulators, then the fewest loads per reduction step (r broadcasts + v weight
   vectors), when that beats step 1's features alone: each weight vector loaded then meets r rows instead of one
   (driving_policy-shaped 25 x 256 features: 5 rows x 2 ymm, or 5 rows x 4 zmm);
2. reduction: the longest reduction axis is UNROLLed by 4 when 4 divides it;
3. threads: a THREAD split (the beam module's) only for a kernel of at least THREAD_MIN_FLOPS: a matrix-vector
   product of policy's size takes 1-3 microseconds, of the order of the thread pool's wake-up and join.
A kernel is recognised when one output axis (or two: rows, then features innermost) is longer than 1, the features'
size is a recorded N and each reduction axis (or their product) is a recorded K of it; anything else keeps tinygrad's
heuristic (or the convolution rule). The rule only restructures loops: a kernel taken by mistake is computed the same.
"""

GEMMS: set[tuple[int, int]] = set()  # (N output features, K reduction) of every recorded Gemm/MatMul weight
THREAD_MIN_FLOPS = 4 << 20  # below this a Gemm kernel stays on one thread (docs/cpu-kernels.md §3)
UNROLL = 4
MAX_ROWS = 8  # rows of a matrix-matrix block (each one broadcast per reduction step)
MAX_VECTORS = 4  # weight vectors of a matrix-matrix block (each one load per reduction step)


def feature_upcast(n: int, vec: int, budget: int) -> int:
  """Output features per step: all N when it is whole vectors (or less than one) within the budget, else the most
  whole vectors dividing N that fit, else the largest divisor of N up to the budget's floats."""
  if (n % vec == 0 and n <= vec * budget) or n < vec:
    return n
  for m in range(budget, 0, -1):
    if n % (m * vec) == 0:
      return m * vec
  return max(d for d in range(1, vec * budget + 1) if n % d == 0)


def block(m: int, n: int, vec: int, budget: int) -> tuple[int, int]:
  """(rows, features) per step of a product of m rows into n features (step 1b of the rule; m = 1: step 1)."""
  u = feature_upcast(n, vec, budget)
  best, key = (1, u), (-(-u // vec), -(1 + -(-u // vec)))
  for r in range(2, min(m, MAX_ROWS) + 1):
    if m % r:
      continue
    for v in range(1, min(MAX_VECTORS, budget // r) + 1):
      f = v * vec if n >= vec else n
      if n % f or (n < vec and v > 1):
        continue
      k = (r * v, -(r + v))
      if k > key:
        best, key = (r, f), k
  return best


def plan(full_shape: list[int], outs: list[int], red: list[int], vec: int, budget: int) -> list[tuple[str, int, int]] | None:
  """The rule as (op, axis, amount) triples in tinygrad's Opt numbering (UPCAST: the axis; UNROLL: the index among the
  reduction axes), or None when the kernel is not a recorded matrix-vector or matrix-matrix product."""
  from math import prod

  from mrt.conv_rule import _steps

  big = [a for a in outs if full_shape[a] > 1]
  red = [a for a in red if full_shape[a] > 1]
  if len(big) not in (1, 2) or not red:
    return None
  ax, n = big[-1], full_shape[big[-1]]
  if not all((n, full_shape[r]) in GEMMS for r in red) and (n, prod(full_shape[r] for r in red)) not in GEMMS:
    return None
  rows, u = block(full_shape[big[0]] if len(big) == 2 else 1, n, vec, budget)
  steps = _steps(u)
  if steps is None:
    return None
  # the features axis is after the rows: upcast it first (an axis upcast in full disappears, later ones move down)
  opts = [("UPCAST", ax, s) for s in steps] + ([("UPCAST", big[0], rows)] if rows > 1 else [])
  longest = max(range(len(red)), key=lambda i: full_shape[red[i]])
  if full_shape[red[longest]] % UNROLL == 0 and full_shape[red[longest]] > UNROLL:
    opts.append(("UNROLL", longest, UNROLL))
  return opts


def rule_opts(ast, ren, vec: int, budget: int) -> tuple | None:
  """tinygrad Opts for `ast`, or None when it is not a recorded matrix-vector or matrix-matrix kernel."""
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
  """Record the (N, K) of every Gemm/MatMul of `model` whose weight is a 2-D float initializer, prepacking a Gemm's
  transB 1 weight [N][K] to [K][N] (a new initializer, transB 0: the same product) so the kernel reads it along N.
  Returns how many weights were prepacked; the graph is otherwise unchanged."""
  import numpy as np
  from onnx import helper, numpy_helper

  GEMMS.clear()
  inits = {i.name: i for i in model.graph.initializer}
  packed = 0
  for node in model.graph.node:
    if node.domain not in ("", "ai.onnx") or node.op_type not in ("MatMul", "Gemm") or len(node.input) < 2:
      continue
    w = inits.get(node.input[1])
    if w is None or len(w.dims) != 2 or numpy_helper.to_array(w).dtype != np.float32:
      continue
    a = {x.name: helper.get_attribute_value(x) for x in node.attribute}
    if node.op_type == "Gemm" and a.get("transA", 0):
      continue
    if node.op_type == "Gemm" and a.get("transB", 0):
      t = numpy_helper.from_array(np.ascontiguousarray(numpy_helper.to_array(w).T), f"{w.name}__mrt_kn{packed}")
      model.graph.initializer.append(t)
      inits[t.name] = t
      node.input[1] = t.name
      for x in node.attribute:
        if x.name == "transB":
          x.i = 0
      w = t
      packed += 1
    GEMMS.add((int(w.dims[1]), int(w.dims[0])))
  return packed
