"""A stride-1 3x3 convolution as Winograd F(4x4,3x3) in tinygrad tensor ops: input transform → 36 batched GEMMs →
output transform (docs/cpu-kernels.md, "Winograd convolutions"). The weights arrive already transformed (U = G g Gᵀ,
folded at export by mrt/winograd_math.py), so no weight transform runs per call.

Shapes: x [N, C, H, W]; u [36, C, K] (`pack_u`); the output [N, K, Ho, Wo] with Ho = H + top + bottom - 2 (likewise
Wo). The GEMM is laid out like the layout pass's channel-last convolutions (docs/cpu-kernels.md §1, §3): input tiles
[36, tiles, C] times U [36, C, K] gives [36, tiles, K], output channels innermost, so the kernel option rule
(mrt/conv_rule.py, registered through `CONVS`) upcasts whole vectors of output channels against one broadcast input
value. Measured against the earlier tiles-innermost layout ([36, K, C] x [36, C, tiles], tinygrad's heuristic):
faster on every layer the speed rule takes, 1.2-2.1x on x86-64-v3, 1.2-5x on x86-64-v4 (docs/bench.md).
The input tiles are a view (`unfold`), and each transform is two small matmuls with the constant Aᵀ/Bᵀ tensors
(tinygrad compiles each transform to two kernels). `.contiguous()` keeps the stages apart: a transform fused into the
GEMM would be recomputed inside its reduction for every output channel. (A first version wrote the transforms as
sums of strided views with the entries as literal constants and stacked the 36 results: tinygrad turned the stack
into one kernel that evaluated every branch and took 10-40x the GEMM's time.)
"""

import numpy as np
from tinygrad import Tensor

from mrt.winograd_math import M, N


def pack_u(u):
  """U [36, K, C] from mrt/winograd_math.fold_weights -> the layout the GEMM reads, [36, C, K] (output channels
  innermost, as the channel-last direct convolutions' prepacked weights)."""
  return np.ascontiguousarray(u.transpose(0, 2, 1))


def conv3x3_winograd(x: Tensor, u: Tensor, bias: Tensor | None, pads: tuple[int, int, int, int], at: Tensor, bt: Tensor) -> Tensor:
  """pads = (top, left, bottom, right), each >= 0; at [M, N] and bt [N, N] are Aᵀ and Bᵀ as (constant) tensors."""
  n, c, h, w = x.shape
  k = u.shape[2]
  top, left, bottom, right = pads
  ho, wo = h + top + bottom - 2, w + left + right - 2
  th, tw = -(-ho // M), -(-wo // M)
  xp = x.pad(((0, 0), (0, 0), (top, M * th + 2 - h - top), (left, M * tw + 2 - w - left)))
  d = xp.unfold(2, N, M).unfold(3, N, M)  # [N, C, th, tw, 6, 6]: overlapping input tiles, a view
  v = bt @ d @ bt.T  # Bᵀ d B per tile
  p = n * th * tw
  # [36, tiles, C], the tile axis padded to a multiple of 4 with zero tiles: the rule upcasts it by a divisor (2 or 4
  # then always exist; in the earlier tiles-innermost layout tinygrad's heuristics vectorised it only when 4 divided
  # it: 128→128 at 28x28, 49 tiles, 57 ms unpadded, 2.7 ms padded)
  pp = -(-p // 4) * 4
  v = v.permute(4, 5, 0, 2, 3, 1).reshape(N * N, p, c).pad(((0, 0), (0, pp - p), (0, 0))).contiguous()  # [36, tiles, C]
  from mrt.conv_rule import CONVS

  CONVS.add((int(k), int(c)))  # the GEMM is shaped like a channel-last 1x1 conv: the kernel option rule applies
  m = (v @ u).contiguous()  # [36, tiles, K]
  m = m.shrink(((0, N * N), (0, p), (0, k))).reshape(N, N, n, th, tw, k).permute(2, 5, 3, 4, 0, 1)  # [n, K, th, tw, 6, 6]
  y = at @ m @ at.T  # [n, K, th, tw, 4, 4]
  y = y.permute(0, 1, 2, 4, 3, 5).reshape(n, k, M * th, M * tw)
  y = y.shrink(((0, n), (0, k), (0, ho), (0, wo)))
  return y if bias is None else y + bias.reshape(1, k, 1, 1)
