"""tinygrad implementations of the channel-last ops the layout pass (mrt/layout.py) writes into the graph tinygrad loads.

Every tensor these ops take or return is channel-last (N, H, W, C) unless an attribute says the input is NCHW. The
convolution reads its weight prepacked as [ky][kx][ci][co] (mrt/layout.py packs it at export), so the innermost
reduction broadcasts one input value against a contiguous run of output-channel weights, and the output is stored
with the channel innermost; pools reduce windows of the same shape. Formulas: docs/cpu-kernels.md §1.
"""

from tinygrad import Tensor

CONV = "MrtConvNhwc"
DW_CONV = "MrtDwConvNhwc"
POOL = "MrtPoolNhwc"
GLOBAL_POOL = "MrtGlobalPoolNhwc"
TO_NCHW = "MrtToNchw"
CONCAT = "MrtConcatNhwc"
REALIZE = "MrtRealize"


def _windows(x: Tensor, kernel: list[int], pads: list[int], strides: list[int], dilations: list[int], value: float) -> Tensor:
  """(N, H, W, C) -> (N, OH, OW, KH, KW, C): every output position's input window, as views of `x` (no copy).
  `pads` in ONNX order [top, left, bottom, right]."""
  top, left, bottom, right = pads
  xc = x.permute(0, 3, 1, 2).pad(((0, 0), (0, 0), (top, bottom), (left, right)), value=value)
  return xc._pool(tuple(kernel), tuple(strides), tuple(dilations)).permute(0, 2, 3, 4, 5, 1)


def conv_nhwc(
  X: Tensor, W: Tensor, B: Tensor | None = None, pads=(0, 0, 0, 0), strides=(1, 1), dilations=(1, 1), input_nchw: int = 0, co_block: int = 0
):
  """Y[n, oy, ox, co] = B[co] + sum over ky, kx, ci of x[n, oy*s + ky*d - pad, ox*s + kx*d - pad, ci] * W[ky, kx, ci, co].
  With co_block b the weight is W[cb, ky, kx, ci, j] (co = cb*b + j) and the kernel stores (N, C/b, OH, OW, b): channel
  blocks are its outermost loop, so one block of a large weight serves every output position from L2 (the rule,
  docs/cpu-kernels.md section 3); the channel-last value handed on is that buffer read back as (N, OH, OW, C)."""
  # a channel-last input is realized: the chain that produced it (conv, bias, BatchNorm, ReLU) stays one kernel that
  # stores a buffer, instead of being recomputed inside this convolution's reduction
  x = X.permute(0, 2, 3, 1) if input_nchw else X.contiguous()
  if co_block:
    cb, kh, kw, ci, b = (int(s) for s in W.shape)
    win = _windows(x, [kh, kw], list(pads), list(strides), list(dilations), 0.0)
    n, oh, ow = (int(s) for s in win.shape[:3])
    y = (win.reshape(n, 1, oh, ow, kh, kw, ci, 1) * W.reshape(1, cb, 1, 1, kh, kw, ci, b)).sum((4, 5, 6))
    y = y if B is None else y + B.reshape(1, cb, 1, 1, b)
    return y.contiguous().permute(0, 2, 3, 1, 4).reshape(n, oh, ow, cb * b)
  kh, kw = int(W.shape[0]), int(W.shape[1])
  win = _windows(x, [kh, kw], list(pads), list(strides), list(dilations), 0.0)
  y = (win.unsqueeze(-1) * W).sum((3, 4, 5))
  return y if B is None else y + B


def dwconv_nhwc(X: Tensor, W: Tensor, B: Tensor | None = None, pads=(0, 0, 0, 0), strides=(1, 1), dilations=(1, 1), input_nchw: int = 0):
  """Depthwise: Y[n, oy, ox, c] = B[c] + sum over ky, kx of x[n, oy*s + ky*d - pad, ox*s + kx*d - pad, c] * W[ky, kx, c].
  Channels are innermost in the input window, the weight and the output, so the rule (mrt/conv_rule.py) vectorises
  each tap along them; the input is realized (or read NCHW) as for conv_nhwc."""
  x = X.permute(0, 2, 3, 1) if input_nchw else X.contiguous()
  kh, kw = int(W.shape[0]), int(W.shape[1])
  y = (_windows(x, [kh, kw], list(pads), list(strides), list(dilations), 0.0) * W).sum((3, 4))
  return y if B is None else y + B


def pool_nhwc(X: Tensor, kernel_shape=(1, 1), pads=(0, 0, 0, 0), strides=(1, 1), dilations=(1, 1), mode: str = "max", count_include_pad: int = 0):
  """Max or average pool over (H, W) windows of a channel-last tensor (ceil_mode=0; the layout pass checks). The input
  is realized first: fused, tinygrad moves the pool's padding into the producing convolution (resnet50's 7x7 stride-2
  first conv then computed a masked, padded map: 73-85 ms with AVX2 against 7-9 ms for the conv plus a separate pool,
  docs/cpu-kernels.md section 3)."""
  X = X.contiguous()
  if mode == "max":
    return _windows(X, list(kernel_shape), list(pads), list(strides), list(dilations), float("-inf")).max((3, 4))
  win = _windows(X, list(kernel_shape), list(pads), list(strides), list(dilations), 0.0)
  total = win.sum((3, 4))
  if count_include_pad or not any(pads):
    return total / (int(kernel_shape[0]) * int(kernel_shape[1]))
  ones = Tensor.ones(1, int(X.shape[1]), int(X.shape[2]), 1, dtype=X.dtype, device=X.device)
  counts = _windows(ones, list(kernel_shape), list(pads), list(strides), list(dilations), 0.0).sum((3, 4))
  return total / counts


def global_pool_nhwc(X: Tensor, mode: str = "avg"):
  """GlobalAveragePool / GlobalMaxPool of a channel-last tensor: (N, H, W, C) -> (N, 1, 1, C). The input is realized
  first: fused into the producing convolution, the pool wraps the convolution's reduction in a second one over all
  positions, a kernel the rule cannot shape (measured ~10x slower than the convolution plus a separate pool)."""
  X = X.contiguous()
  return X.max((1, 2), keepdim=True) if mode == "max" else X.mean((1, 2), keepdim=True)


def to_nchw(X: Tensor, output: int = 0):
  """A channel-last value back in NCHW. The channel-last buffer is realized first: otherwise tinygrad folds the
  transpose into the producing convolution's stores, which then are strided along the channels and defeat the
  vectoriser. A graph output is copied into its own NCHW buffer (one small transpose kernel)."""
  y = X.contiguous().permute(0, 3, 1, 2)
  return y.contiguous() if output else y


def concat_nhwc(*xs: Tensor):
  """Concat over channels of channel-last tensors. Each input is realized first: fused, tinygrad would compute every
  input's convolution for every output channel of the concatenation (a select per channel), measured 10-100x slower."""
  return Tensor.cat(*[x.contiguous() for x in xs], dim=3)


def realize(X: Tensor):
  """An elementwise op joining two computed channel-last values (a residual Add) reads both from buffers: fused,
  tinygrad would put both producing convolutions' reductions into one kernel."""
  return X.contiguous()


def register():
  """Add the ops to tinygrad's ONNX op table (the runner reads the module's table when it runs a node)."""
  from tinygrad.nn import onnx as tg_onnx

  tg_onnx.onnx_ops[CONV] = conv_nhwc
  tg_onnx.onnx_ops[DW_CONV] = dwconv_nhwc
  tg_onnx.onnx_ops[POOL] = pool_nhwc
  tg_onnx.onnx_ops[GLOBAL_POOL] = global_pool_nhwc
  tg_onnx.onnx_ops[TO_NCHW] = to_nchw
  tg_onnx.onnx_ops[CONCAT] = concat_nhwc
  tg_onnx.onnx_ops[REALIZE] = realize
