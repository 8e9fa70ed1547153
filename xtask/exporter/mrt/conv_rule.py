"""Kernel options for the channel-last convolutions by a fixed rule (docs/cpu-kernels.md §3), instead of tinygrad's
hand-coded heuristic, which upcasts the reduction and leaves the output channels scalar.

A convolution kernel from mrt/nhwc_ops.py has output axes (rows, x, output channels) with the channels innermost and
reduction axes (ky, kx, input channels); a depthwise one (MrtDwConvNhwc) reduces over (ky, kx) only and is
recorded as (channels, ky*kx). The rule, with V the vector width in floats (8 for x86-64-v3, 16 for
x86-64-v4, 4 for aarch64 NEON) and R the accumulator budget (12 vector registers of 16, 24 of 32):
1. output channels: UPCAST by 4, 3, 2 or 1 vectors (the first n*V dividing the channel count; fewer channels than V:
   all of them; otherwise the largest divisor <= 4V), so each broadcast input value meets whole vectors of weights;
2. output x: UPCAST by the largest of 8..2 dividing the width with vectors * x <= R, so one weight load serves
   several output columns; with fewer than 4 accumulators (x not divisible, e.g. 13x13 maps), more channel
   vectors are taken instead, up to R, if they divide the channel count;
3. threads: split over the outermost output axis (the rows) the way the beam module's THREAD rule does.
A convolution whose weight is large (> BLOCK_MIN_BYTES) is computed channel-block-major instead (block_plan; the
layout pass prepacks its weight [cb][ky][kx][ci][b] and mrt/nhwc_ops.py stores (N, C/b, H, W, b)): its output axes
are (channel blocks, rows, x, b) and the rule upcasts all b channels and the largest divisor of x (up to 16) that
keeps b/V * x within the blocked budget (all vector registers but two), so one block of weights stays in L2 while
every output position is computed from it, instead of the whole weight streaming from L3 once per position.
Amounts above tinygrad's 16-per-step limit are applied in steps (24 = 8 * 3). A kernel the rule does not recognise
is tried by the Gemm/MatMul rule (mrt/gemm_rule.py, matrix-vector and matrix-matrix kernels) and otherwise keeps tinygrad's heuristic;
neither rule changes what a kernel computes, only its loop structure.
With --beam N the search starts from the rule's options (mrt/beam.py) and the cache records RULE_VERSION.
"""

import os
import sys
from dataclasses import replace

RULE_VERSION = 3  # bump when the layout pass or this rule changes what is compiled; search caches record it
CONVS: set[tuple[int, int]] = set()  # (output channels, ky*kx*input channels) of every rewritten convolution
BLOCKED: set[tuple[int, int]] = set()  # (channel block b, ky*kx*input channels) of the channel-block-major ones
# a weight of more than this many bytes is computed channel-block-major (half the 2 MiB L2 of the machine the rule was
# measured on: at 1 MiB it was even, at 590 KiB slower with AVX2, from 1.95 MiB up 2-11x faster, docs/cpu-kernels.md
# section 3)
BLOCK_MIN_BYTES = 1 << 20
BLOCK_MAX_BYTES = 512 << 10  # one block of weights (b * ky*kx*ci floats) should stay in L2 with the input map
_CFG: dict = {}


def vector_floats(arch: str, baseline: str) -> tuple[int, int]:
  """(floats per vector, accumulator-register budget) for a baseline."""
  if arch == "x86_64":
    return (16, 24) if baseline == "x86-64-v4" else (8, 12)
  return 4, 24


def _steps(u: int) -> list[int] | None:
  out = []
  while u > 16:
    f = next((f for f in range(16, 1, -1) if u % f == 0), None)
    if f is None:
      return None
    out.append(f)
    u //= f
  return out + ([u] if u > 1 else [])


def channel_upcast(co: int, vec: int) -> int:
  for n in (4, 3, 2, 1):
    if co % (n * vec) == 0:
      return n * vec
  if co < vec:
    return co
  return max(d for d in range(1, 4 * vec + 1) if co % d == 0)


def x_upcast(ow: int, vectors: int, budget: int) -> int:
  return next((u for u in (8, 7, 6, 5, 4, 3, 2) if ow % u == 0 and vectors * u <= budget), 1)


def widen_channels(co: int, uc: int, ux: int, vec: int, budget: int) -> int:
  """Fewer than 4 independent accumulators leave the FMA pipeline waiting on its own latency: when x cannot be
  upcast enough (e.g. 13x13 outputs), take more channel vectors (up to the budget) if they divide the channels."""
  if -(-uc // vec) * ux >= 4:
    return uc
  for n in range(budget // ux, 0, -1):
    if n * vec > uc and co % (n * vec) == 0 and n * vec <= 128:
      return n * vec
  return uc


def blocked_budget(arch: str, baseline: str) -> int:
  """Accumulators of a channel-block-major kernel: all vector registers but the weight vector and the broadcast."""
  return 14 if arch == "x86_64" and baseline != "x86-64-v4" else 30


def positions_upcast(ow: int, regs: int, budget: int) -> int:
  """The largest divisor of the output width (up to tinygrad's 16 per step) with regs * divisor accumulators."""
  return next((u for u in range(16, 1, -1) if ow % u == 0 and regs * u <= budget), 1)


def block_plan(co: int, red: int, ow: int | None) -> int | None:
  """The channel block b of a conv with `co` output channels and `red` = ky*kx*ci, output width `ow` (None when the
  shape is unknown), or None when it keeps the channel-last form. Candidates: 1-4 whole vectors dividing the channel
  count, else half a vector (1000 channels on x86-64-v4); among those whose weight block fits BLOCK_MAX_BYTES, the
  one with the most accumulated floats (b * positions), then the fewest loads per reduction step."""
  if co * red * 4 <= BLOCK_MIN_BYTES:
    return None
  vec, _ = _CFG.get("vec", (8, 12))
  budget = _CFG.get("blocked", 14)
  cands = [n * vec for n in (4, 3, 2, 1) if co % (n * vec) == 0]
  if not cands and vec >= 8 and co % (vec // 2) == 0:
    cands = [vec // 2]
  if not cands:
    return None
  fits = [b for b in cands if b * red * 4 <= BLOCK_MAX_BYTES] or [min(cands)]

  def score(b):
    regs = -(-b // vec)
    ux = positions_upcast(ow, regs, budget) if ow else 1
    if regs * ux > budget:
      return (-1, 0)
    return (b * ux, -(regs + ux))

  best = max(fits, key=score)
  return best if score(best)[0] > 0 else None


def rule_opts(ast, ren) -> tuple | None:
  """The rule's options for `ast`, or None when it is not a channel-last convolution kernel."""
  from tinygrad.codegen.opt import Opt, OptOps
  from tinygrad.codegen.opt.postrange import Scheduler
  from tinygrad.helpers import prod
  from tinygrad.uop.ops import AxisType

  k = Scheduler(ast, ren)
  k.convert_loop_to_global()
  shape = [int(s) for s in k.full_shape]
  outs = k.axes_of(AxisType.GLOBAL, AxisType.WEAK, AxisType.LOOP)
  red = k.axes_of(AxisType.REDUCE)
  if len(outs) < 2 or not red:
    return None
  # the channel axis is the innermost output axis (mrt/nhwc_ops.py realizes channel-last buffers); if a store ever
  # comes out transposed, the channel axis is found by its size and x is the innermost of the others
  total = prod(shape[a] for a in red)
  co_axes = [a for a in outs if (shape[a], total) in CONVS | BLOCKED]
  if not co_axes:
    return None
  co_ax = co_axes[-1]
  ow_ax = [a for a in outs if a != co_ax][-1]
  vec, budget = _CFG.get("vec", (8, 12))
  if (shape[co_ax], total) in BLOCKED:  # channel-block-major: the whole block, positions up to the blocked budget
    uc = shape[co_ax]
    ux = positions_upcast(shape[ow_ax], -(-uc // vec), _CFG.get("blocked", 14))
  else:
    uc = channel_upcast(shape[co_ax], vec)
    ux = x_upcast(shape[ow_ax], -(-uc // vec), budget)
    uc = widen_channels(shape[co_ax], uc, ux, vec, budget)
  steps = _steps(uc)
  if steps is None:
    return None
  co = [Opt(OptOps.UPCAST, co_ax, s) for s in steps]
  ow = [Opt(OptOps.UPCAST, ow_ax, ux)] if ux > 1 else []
  # an axis upcast in full disappears and the axes after it move down: upcast the later axis first
  return tuple(co + ow if co_ax > ow_ax else ow + co)


def install(arch: str, baseline: str):
  """Route every non-searched kernel through the rule before tinygrad's heuristic. Before capture."""
  import tinygrad.codegen as codegen

  _CFG["vec"] = vector_floats(arch, baseline)
  _CFG["blocked"] = blocked_budget(arch, baseline)
  orig = codegen.apply_opts
  if getattr(orig, "_modelrt_rule", False):
    return

  def apply_opts(ast, ren, beam=0):
    if ast.tag is not None or beam >= 1 or ast.arg is None or ast.arg.opts_to_apply is not None:
      return orig(ast, ren, beam)
    from tinygrad.codegen.opt import KernelOptError

    from mrt import gemm_rule
    from mrt.beam import _with_thread

    try:
      opts = rule_opts(ast, ren)
      if opts is None:
        opts = gemm_rule.rule_opts(ast, ren, *_CFG.get("vec", (8, 12)))
        if opts is None:
          return orig(ast, ren, beam)
        if gemm_rule.threaded(ast, ren):
          opts, _ = _with_thread(ast, ren, opts)
      else:
        opts, _ = _with_thread(ast, ren, opts)
      return orig(ast.replace(arg=replace(ast.arg, opts_to_apply=opts)), ren, 0)
    except KernelOptError as e:
      if os.environ.get("MRT_RULE_DEBUG"):
        print(f"exporter: conv rule not applied: {e}", file=sys.stderr)
      return orig(ast, ren, beam)

  apply_opts._modelrt_rule = True
  codegen.apply_opts = apply_opts
