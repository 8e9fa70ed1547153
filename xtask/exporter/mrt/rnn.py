"""ONNX's recurrent ops (LSTM, GRU, RNN) lowered to tinygrad Tensor ops, which tinygrad 0.14's ONNX frontend lacks.

A bundle has fixed shapes, so the sequence length is fixed and the recurrence is unrolled: one matmul of every step's
input with W (all steps at once), then per step the recurrent matmul with R and the gate arithmetic. Semantics follow
the ONNX operator docs (opset 7 and 14: `layout`), written from them here:
- W [D, G*H, I], R [D, G*H, H], B [D, 2*G*H] (W's biases then R's), gates in ONNX order: LSTM i, o, f, c;
  GRU z, r, h; RNN one gate. D = 2 for `bidirectional` (forward then reverse), else 1.
- LSTM: i = f(Xi + Hi + Pi*C + b), f_ = f(... + Pf*C), c~ = g(...), C' = f_*C + i*c~, o = f(... + Po*C'),
  H' = o*h(C'); `input_forget=1` couples the gates (f_ = 1 - i). GRU: z, r = f(...), h~ = g(Xh + (r*H)Rh + Rbh + Wbh)
  (`linear_before_reset=1`: g(Xh + r*(H Rh + Rbh) + Wbh)), H' = (1-z)*h~ + z*H. RNN: H' = f(Xi + H Ri + b).
- `clip` bounds every activation's input to [-clip, clip]; `activations` (with `activation_alpha`/`activation_beta`
  consumed in order by the activations that take them) replace the defaults (LSTM Sigmoid, Tanh, Tanh; GRU Sigmoid,
  Tanh; RNN Tanh), per direction.
- `sequence_lens` [batch]: steps at or past a sequence's length leave its state unchanged and give zeros in Y; the
  reverse direction starts at its last valid step; a zero-length sequence gives zero Y_h and Y_c (onnxruntime's
  answer). Values outside 0..=T are refused at run time (mrt/index_inputs.py records the range).
- Y is [T, D, batch, H] (`layout=1`: [batch, T, D, H]), Y_h and Y_c [D, batch, H] (`layout=1`: [batch, D, H]).
`install` adds the three ops to an OnnxRunner; each node learns which of its outputs the graph uses, so an omitted
optional output is returned as None (tinygrad's runner keeps None under the empty name, the marker of absent inputs).
"""

from tinygrad import Tensor

OUTPUTS_KEY = "_mrt_rnn_outputs"
GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}
DEFAULT_ACTS = {"LSTM": ("Sigmoid", "Tanh", "Tanh"), "GRU": ("Sigmoid", "Tanh"), "RNN": ("Tanh",)}
# activation (lower case) -> (default alpha, default beta); None: takes no such parameter
ACT_PARAMS = {
  "relu": (None, None),
  "tanh": (None, None),
  "sigmoid": (None, None),
  "softsign": (None, None),
  "softplus": (None, None),
  "leakyrelu": (0.01, None),
  "thresholdedrelu": (1.0, None),
  "elu": (1.0, None),
  "hardsigmoid": (0.2, 0.5),
  "affine": (1.0, 0.0),
  "scaledtanh": (1.0, 1.0),
}


class RnnError(NotImplementedError):
  """A configuration these lowerings do not cover (reported like an unsupported op)."""


def _act(name: str, alpha, beta):
  n = name.lower()
  table = {
    "relu": lambda x: x.relu(),
    "tanh": lambda x: x.tanh(),
    "sigmoid": lambda x: x.sigmoid(),
    "softsign": lambda x: x / (1 + x.abs()),
    "softplus": lambda x: (1 + x.exp()).log(),
    "leakyrelu": lambda x: (x >= 0).where(x, x * alpha),
    "thresholdedrelu": lambda x: (x > alpha).where(x, 0),
    "elu": lambda x: (x >= 0).where(x, (x.exp() - 1) * alpha),
    "hardsigmoid": lambda x: (x * alpha + beta).clip(0, 1),
    "affine": lambda x: x * alpha + beta,
    "scaledtanh": lambda x: (x * beta).tanh() * alpha,
  }
  if n not in table:
    raise RnnError(f"activation '{name}' of a recurrent op is not supported")
  return table[n]


def _activations(op: str, dirs: int, names, alphas, betas) -> list[list]:
  """Per direction, the op's activation functions with their parameters bound."""
  per = len(DEFAULT_ACTS[op])
  names = list(names) if names else list(DEFAULT_ACTS[op]) * dirs
  if len(names) == per and dirs == 2:
    names = names * 2
  if len(names) != per * dirs:
    raise RnnError(f"{op} takes {per * dirs} activations here, the node gives {len(names)}")
  alphas, betas = list(alphas or []), list(betas or [])
  fns = []
  for n in names:
    da, db = ACT_PARAMS.get(n.lower(), (None, None))
    a = (alphas.pop(0) if alphas else da) if da is not None else None
    b = (betas.pop(0) if betas else db) if db is not None else None
    fns.append(_act(n, a, b))
  return [fns[d * per : (d + 1) * per] for d in range(dirs)]


def _clip(x: Tensor, clip) -> Tensor:
  return x if clip is None else x.clip(-clip, clip)


def _dirs(direction: str) -> list[bool]:
  """Per direction: True if it runs backwards in time."""
  if direction == "forward":
    return [False]
  if direction == "reverse":
    return [True]
  if direction == "bidirectional":
    return [False, True]
  raise RnnError(f"direction '{direction}' is not one of forward, reverse, bidirectional")


def _run(op, X, W, R, B, seq_lens, h0, c0, P, acts, clip, direction, hidden, input_forget, linear_before_reset, layout):
  """The recurrence for every direction: (Y [T, D, N, H], Y_h [D, N, H], Y_c [D, N, H] or None), layout 0."""
  if layout:
    X = X.transpose(0, 1)
    h0 = h0.transpose(0, 1) if h0 is not None else None
    c0 = c0.transpose(0, 1) if c0 is not None else None
  T, N = X.shape[0], X.shape[1]
  G, H = GATES[op], int(hidden) if hidden is not None else W.shape[1] // GATES[op]
  backs = _dirs(direction)
  fns = _activations(op, len(backs), *acts)
  ys, hs, cs = [], [], []
  for d, back in enumerate(backs):
    Wd, Rd = W[d], R[d]
    wb = B[d][: G * H] if B is not None else None
    rb = B[d][G * H :] if B is not None else None
    xw = X @ Wd.T  # [T, N, G*H]: every step's input projection in one matmul
    if wb is not None:
      xw = xw + wb
    h = h0[d] if h0 is not None else Tensor.zeros(N, H, dtype=X.dtype).contiguous()
    c = (c0[d] if c0 is not None else Tensor.zeros(N, H, dtype=X.dtype).contiguous()) if op == "LSTM" else None
    out = [None] * T
    for t in reversed(range(T)) if back else range(T):
      if op == "LSTM":
        nh, nc = _lstm_step(xw[t], h, c, Rd, rb, P[d] if P is not None else None, fns[d], clip, H, input_forget)
      elif op == "GRU":
        nh, nc = _gru_step(xw[t], h, Rd, rb, fns[d], clip, H, linear_before_reset), None
      else:
        nh, nc = _rnn_step(xw[t], h, Rd, rb, fns[d], clip), None
      if seq_lens is not None:
        live = (seq_lens > t).reshape(N, 1)
        out[t] = live.where(nh, 0)
        h = live.where(nh, h)
        c = live.where(nc, c) if nc is not None else None
      else:
        out[t], h, c = nh, nh, nc
    if seq_lens is not None:  # a zero-length sequence ends with zero state (onnxruntime's answer), not its initial one
      some = (seq_lens > 0).reshape(N, 1)
      h = some.where(h, 0)
      c = some.where(c, 0) if c is not None else None
    ys.append(Tensor.stack(*out, dim=0))
    hs.append(h)
    cs.append(c)
  Y, Y_h = Tensor.stack(*ys, dim=1), Tensor.stack(*hs, dim=0)
  Y_c = Tensor.stack(*cs, dim=0) if op == "LSTM" else None
  if layout:
    Y, Y_h = Y.permute(2, 0, 1, 3), Y_h.transpose(0, 1)
    Y_c = Y_c.transpose(0, 1) if Y_c is not None else None
  return Y, Y_h, Y_c


def _lstm_step(xw, h, c, R, rb, P, fns, clip, H, input_forget):
  f, g, hf = fns
  gates = xw + h @ R.T
  if rb is not None:
    gates = gates + rb
  gi, go, gf, gc = (gates[:, k * H : (k + 1) * H] for k in range(4))
  if P is not None:
    gi, gf = gi + P[:H] * c, gf + P[2 * H :] * c
  i = f(_clip(gi, clip))
  fg = 1 - i if input_forget else f(_clip(gf, clip))
  nc = fg * c + i * g(_clip(gc, clip))
  if P is not None:
    go = go + P[H : 2 * H] * nc
  o = f(_clip(go, clip))
  return o * hf(nc), nc


def _gru_step(xw, h, R, rb, fns, clip, H, linear_before_reset):
  f, g = fns
  xz, xr, xh = (xw[:, k * H : (k + 1) * H] for k in range(3))
  rz, rr, rh = (R[k * H : (k + 1) * H] for k in range(3))
  bz, br, bh = (rb[k * H : (k + 1) * H] for k in range(3)) if rb is not None else (0, 0, 0)
  z = f(_clip(xz + h @ rz.T + bz, clip))
  r = f(_clip(xr + h @ rr.T + br, clip))
  recurrent = r * (h @ rh.T + bh) if linear_before_reset else (r * h) @ rh.T + bh
  hh = g(_clip(xh + recurrent, clip))
  return (1 - z) * hh + z * h


def _rnn_step(xw, h, R, rb, fns, clip):
  pre = xw + h @ R.T
  if rb is not None:
    pre = pre + rb
  return fns[0](_clip(pre, clip))


def _make(op: str):
  def impl(
    X,
    W,
    R,
    B=None,
    sequence_lens=None,
    initial_h=None,
    initial_c=None,
    P=None,
    activation_alpha=None,
    activation_beta=None,
    activations=None,
    clip=None,
    direction="forward",
    hidden_size=None,
    input_forget=0,
    linear_before_reset=0,
    layout=0,
    **opts,
  ):
    used = opts.pop(OUTPUTS_KEY, None)
    if op != "LSTM" and initial_c is not None:
      raise RnnError(f"{op} has no initial_c")
    Y, Y_h, Y_c = _run(
      op,
      X,
      W,
      R,
      B,
      sequence_lens,
      initial_h,
      initial_c,
      P,
      (activations, activation_alpha, activation_beta),
      clip,
      direction,
      hidden_size,
      input_forget,
      linear_before_reset,
      layout,
    )
    outs = (Y, Y_h, Y_c) if op == "LSTM" else (Y, Y_h)
    if used is not None:  # an omitted optional output must not overwrite the runner's "" (absent-input) entry
      outs = tuple(o if k < len(used) and used[k] else None for k, o in enumerate(outs))
    return outs

  impl.__name__ = op
  return impl


def install(runner):
  """Give `runner` LSTM, GRU and RNN, and tell each such node which outputs the graph names. Returns the runner."""
  runner.onnx_ops = {**runner.onnx_ops, **{op: _make(op) for op in GATES}}
  for node in runner.graph_nodes:
    if node.op in GATES:
      node.opts[OUTPUTS_KEY] = tuple(bool(o) for o in node.outputs)
  return runner
