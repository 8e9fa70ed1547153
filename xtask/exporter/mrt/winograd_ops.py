"""A stride-1 3x3 convolution as Winograd F(4x4,3x3) in tinygrad tensor ops: input transform → 36 batched GEMMs →
output transform (docs/cpu-kernels.md, "Winograd convolutions"). The weights arrive already transformed (U = G g Gᵀ,
folded at export by mrt/winograd_math.py), so no weight transform runs per call.

Shapes: x [N, C, H, W]; u [36, K, C]; the output [N, K, Ho, Wo] with Ho = H + top + bottom - 2 (likewise Wo).
The input tiles are a view (`unfold`), and each transform is two small matmuls with the constant Aᵀ/Bᵀ tensors
(tinygrad compiles each transform to two kernels). `.contiguous()` keeps the stages apart: a transform fused into the
GEMM would be recomputed inside its reduction for every output channel. (A first version wrote the transforms as
sums of strided views with the entries as literal constants and stacked the 36 results: tinygrad turned the stack
into one kernel that evaluated every branch and took 10-40x the GEMM's time.)
"""

from tinygrad import Tensor

from mrt.winograd_math import M, N


def conv3x3_winograd(x: Tensor, u: Tensor, bias: Tensor | None, pads: tuple[int, int, int, int], at: Tensor, bt: Tensor) -> Tensor:
  """pads = (top, left, bottom, right), each >= 0; at [M, N] and bt [N, N] are Aᵀ and Bᵀ as (constant) tensors."""
  n, c, h, w = x.shape
  top, left, bottom, right = pads
  ho, wo = h + top + bottom - 2, w + left + right - 2
  th, tw = -(-ho // M), -(-wo // M)
  # pad to whole tiles (zeros outside the input): tile (ty, tx) reads rows M*ty .. M*ty+N-1 of the padded input
  xp = x.pad(((0, 0), (0, 0), (top, M * th + 2 - h - top), (left, M * tw + 2 - w - left)))
  d = xp.unfold(2, N, M).unfold(3, N, M)  # [N, C, th, tw, 6, 6]: overlapping input tiles, a view
  v = bt @ d @ bt.T  # Bᵀ d B per tile
  p = n * th * tw
  # [36, C, tiles], the tile axis padded to a multiple of 4 with zero tiles: tinygrad's CPU heuristics vectorise the
  # GEMM along it by 4 only when it divides (measured: 128→128 at 28x28, 49 tiles, 57 ms unpadded, 2.7 ms padded)
  pp = -(-p // 4) * 4
  v = v.permute(4, 5, 1, 0, 2, 3).reshape(N * N, c, p).pad(((0, 0), (0, 0), (0, pp - p))).contiguous()
  k = u.shape[1]
  m = (u @ v).contiguous()  # [36, K, tiles (padded)]: one GEMM per transform point
  m = m.shrink(((0, N * N), (0, k), (0, p))).reshape(N, N, k, p).permute(2, 3, 0, 1)  # [K, tiles, 6, 6]
  y = at @ m @ at.T  # Aᵀ m A: [K, tiles, 4, 4]
  y = y.reshape(k, n, th, tw, M, M).permute(1, 0, 2, 4, 3, 5).reshape(n, k, M * th, M * tw)
  y = y.shrink(((0, n), (0, k), (0, ho), (0, wo)))
  return y if bias is None else y + bias.reshape(1, k, 1, 1)
