"""The Winograd pass of CPU exports (`--winograd auto|on|off`, default auto; docs/cpu-kernels.md, "Winograd convolutions").

`install(runner, onnx_path)` swaps the ONNX Conv implementation of one tinygrad OnnxRunner for one that computes a
qualifying convolution as F(4x4,3x3) (mrt/winograd_ops.py) with its weights transformed at export (U = G g Gᵀ,
mrt/winograd_math.py). A convolution qualifies when it is a 2-D float32 3x3 conv with stride 1, dilation 1, one group,
non-negative padding and constant (initializer) weights; anything else keeps tinygrad's direct form.
Per qualifying conv:
- `auto` applies the speed rule (`faster`, measured in docs/bench.md), `on` skips it, `off` rewrites nothing;
- the rewrite is computed once on the host CPU for seeded inputs and compared with onnxruntime running the same single
  Conv; a conv that misses the bundle's tolerance keeps the direct form and the compile says so.
Every runner the exporter builds for a CPU target (capture, the NULL targets' host run, the input-dependence check)
gets the same decisions, so tinygrad's eager run, the captured program and the checks all compute one graph.
"""

import numpy as np

from mrt.targets import ExportError

MODES = ("auto", "on", "off")
DEFAULT = "auto"  # what `--winograd` means when not given (export.py and the bench's export_with_pickle.py)
FLAG = "WINOGRAD"  # producer flag: the rewritten convs (by output name), recorded only when there are some
TOL = 1e-4  # the bundle's fp32 reference tolerance (atol and rtol, mrt/export.py FP32_TOL)
CHECK_SEED = 12345
NODE_KEY = "_mrt_winograd_conv"  # added to a Conv node's opts by install(): the conv's output name
# Speed rule (version 2, measured per layer against the channel-last direct convolutions of the layout pass, for
# x86-64-v3 and x86-64-v4: docs/bench.md "Winograd convolutions, per layer"): the rewrite trades 4x fewer
# multiplications for two transform passes over the activations; it won on every layer with both channel counts >=
# MIN_CHANNELS and either at least MIN_TILES 4x4 output tiles (24..256 channels, 16..196 tiles) or both channel
# counts >= WIDE_CHANNELS (128 and 512 channels at 4 tiles); it lost at 16 channels and below on both baselines, and
# on x86-64-v3 with 64 channels at 1 and 4 tiles. Version 3: re-measured once the large-weight direct convs became
# channel-block-major (mrt/conv_rule.py, > 1 MiB of weights): 512->512 at 4 tiles then lost on x86-64-v4 (0.84x) and
# still won on x86-64-v3 (1.42x), so the WIDE_CHANNELS branch applies only up to 8-float (ymm) vectors. Measured on
# x86-64 only: `auto` takes nothing on cpu-aarch64 (`on` still rewrites there).
RULE_VERSION = 3
MIN_CHANNELS = 24
MIN_TILES = 16
WIDE_CHANNELS = 128

_state = {"mode": "off", "log": None}
_decided: dict[tuple, str | None] = {}  # (conv output, input shape) -> None (rewrite) or why it stays direct
_rewritten: dict[str, str] = {}  # conv output name -> what was rewritten, for the log and the producer flag
_models: dict[str, dict] = {}  # onnx path -> {initializer name: numpy array}
_shapes: dict = {}  # value_shapes' cache: the model it was computed for and its shapes


def configure(mode: str, target_name: str, log) -> None:
  """Set the pass for this export (before any runner is built). Non-CPU targets never rewrite; asking them to is an error."""
  if mode not in MODES:
    raise ExportError(f"--winograd takes one of {', '.join(MODES)}, got '{mode}'")
  if not target_name.startswith("cpu-"):
    if mode == "on":
      raise ExportError(f"--winograd on applies to cpu-* targets, not {target_name}")
    mode = "off"
  if mode == "auto" and target_name.startswith("cpu-aarch64"):
    mode = "off"  # the rule is measured on x86-64 only (no aarch64 timing here: qemu does not model speed)
  _state.update(mode=mode, log=log)
  _decided.clear()
  _rewritten.clear()


def producer_flags() -> dict:
  """{WINOGRAD: "<rule>:<conv outputs>"} when convs were rewritten, else nothing (bundles without it are unchanged)."""
  if not _rewritten:
    return {}
  return {FLAG: f"{_state['mode']}-r{RULE_VERSION}:" + ",".join(sorted(_rewritten))}


def faster(c: int, k: int, tiles: int, vec: int | None = None) -> bool:
  """The measured speed rule (version RULE_VERSION): both channel counts >= MIN_CHANNELS, and at least MIN_TILES
  4x4 output tiles or, with vectors of at most 8 floats, both channel counts >= WIDE_CHANNELS. `vec` is the kernels'
  vector width in floats (default: the one mrt/conv_rule.py was installed with; 8 when it was not)."""
  if vec is None:
    from mrt.conv_rule import _CFG

    vec = int((_CFG.get("vec") or (8, 0))[0])
  wide = vec <= 8 and min(c, k) >= WIDE_CHANNELS
  return c >= MIN_CHANNELS and k >= MIN_CHANNELS and (tiles >= MIN_TILES or wide)


def tiles(ho: int, wo: int, n: int = 1) -> int:
  """4x4 output tiles of an `n`-image output of ho x wo."""
  return n * -(-ho // 4) * -(-wo // 4)


def value_shapes(model) -> dict:
  """{value name: static shape tuple} of an ONNX ModelProto by ONNX shape inference (cached per model; values with
  a symbolic or unknown dimension are left out). For `takes`, which the layout pass calls before any runner exists."""
  if _state["mode"] != "auto":
    return {}  # only auto's rule looks at the output size
  key = id(model)
  if _shapes.get("key") != key:
    import onnx

    shapes = {}
    try:
      g = onnx.shape_inference.infer_shapes(model).graph
      for v in list(g.input) + list(g.value_info) + list(g.output):
        dims = v.type.tensor_type.shape.dim
        if dims and all(d.HasField("dim_value") and d.dim_value > 0 for d in dims):
          shapes[v.name] = tuple(int(d.dim_value) for d in dims)
    except Exception:  # shape inference refuses the model: no conv is known to be large enough
      shapes = {}
    _shapes.update(key=key, model=model, shapes=shapes)
  return _shapes["shapes"]


def takes(w_shape, opts: dict, x_shape=None) -> bool:
  """Whether the pass, as configured, would rewrite this conv (weights `w_shape`, ONNX attributes `opts`, input
  shape `x_shape` or None when unknown): the channel-last layout pass (mrt/layout.py) leaves such convs in NCHW form
  for it. Under `auto` the rule needs the output size: an unknown input shape is not taken."""
  if _state["mode"] == "off" or len(w_shape) != 4 or tuple(int(s) for s in w_shape[2:]) != (3, 3):
    return False

  def ones(v):
    return all(int(s) == 1 for s in ([v] if isinstance(v, int) else v))

  if not ones(opts.get("strides", 1)) or not ones(opts.get("dilations", 1)) or int(opts.get("group", 1)) != 1:
    return False
  if _state["mode"] == "on":
    return True
  if x_shape is None or len(x_shape) != 4:
    return False
  auto_pad = opts.get("auto_pad", "NOTSET")
  pads = conv_pads(auto_pad.decode() if isinstance(auto_pad, bytes) else auto_pad, opts.get("pads", 0), 0, 0)
  if pads is None:
    return False
  n, _c, h, w = (int(s) for s in x_shape)
  ho, wo = h + pads[0] + pads[2] - 2, w + pads[1] + pads[3] - 2
  return ho > 0 and wo > 0 and faster(int(w_shape[1]), int(w_shape[0]), tiles(ho, wo, n))


def conv_pads(auto_pad: str, pads, h: int, w: int) -> tuple[int, int, int, int] | None:
  """(top, left, bottom, right) of a stride-1 3x3 conv, or None when negative or malformed."""
  if auto_pad == "VALID":
    return (0, 0, 0, 0)
  if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
    return (1, 1, 1, 1)  # stride 1, kernel 3: two in total per axis, split evenly either way
  if auto_pad != "NOTSET":
    return None
  p = [int(v) for v in ([pads] * 4 if isinstance(pads, int) else pads)]
  if len(p) == 2:
    p = p * 2
  if len(p) != 4 or min(p) < 0:
    return None
  return (p[0], p[1], p[2], p[3])


def shape_refusal(x_shape, w_shape, w_dtype, opts: dict) -> str | None:
  """Why a Conv cannot be F(4x4,3x3) (None when it can)."""

  def all_one(v):
    return all(int(s) == 1 for s in ([v] if isinstance(v, int) else v))

  if len(x_shape) != 4 or len(w_shape) != 4:
    return "not a 2-D convolution"
  if tuple(int(s) for s in w_shape[2:]) != (3, 3):
    return f"kernel {list(w_shape[2:])}, not 3x3"
  if not all_one(opts.get("strides", 1)):
    return f"strides {opts.get('strides')}"
  if not all_one(opts.get("dilations", 1)):
    return f"dilations {opts.get('dilations')}"
  if int(opts.get("group", 1)) != 1:
    return f"group {opts.get('group')}"
  if w_dtype != np.float32:
    return f"weights are {np.dtype(w_dtype).name}, not float32"
  if conv_pads(opts.get("auto_pad", "NOTSET"), opts.get("pads", 0), 0, 0) is None:
    return f"padding {opts.get('pads')} ({opts.get('auto_pad', 'NOTSET')})"
  return None


def _initializers(onnx_path: str) -> dict:
  if onnx_path not in _models:
    import onnx
    from onnx import numpy_helper

    model = onnx.load(onnx_path)
    _models.clear()
    _models[onnx_path] = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
  return _models[onnx_path]


def _single_conv_model(w: np.ndarray, b: np.ndarray | None, x_shape, opts: dict) -> bytes:
  """A one-node ONNX model: this Conv with its weights, for onnxruntime."""
  from onnx import TensorProto, helper, numpy_helper

  attrs = {k: v for k, v in opts.items() if k in ("auto_pad", "dilations", "group", "kernel_shape", "pads", "strides")}
  inits = [numpy_helper.from_array(w, "w")] + ([numpy_helper.from_array(b, "b")] if b is not None else [])
  node = helper.make_node("Conv", ["x", "w"] + (["b"] if b is not None else []), ["y"], **attrs)
  graph = helper.make_graph(
    [node],
    "winograd_check",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    inits,
  )
  return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()


def numerics_error(w: np.ndarray, b: np.ndarray | None, x_shape, opts: dict, pads) -> tuple[float, bool]:
  """(max abs error, within the bundle's tolerance) of the rewrite against onnxruntime's Conv on seeded standard-normal
  inputs, the rewrite computed by tinygrad on the host CPU (the same ops the bundle's kernels are compiled from)."""
  import onnxruntime as ort
  from tinygrad import Device, Tensor
  from tinygrad.helpers import Context

  from mrt.winograd_math import as_array, fold_weights, transforms
  from mrt.winograd_ops import conv3x3_winograd, pack_u

  x = np.random.default_rng(CHECK_SEED).standard_normal(tuple(int(s) for s in x_shape)).astype(np.float32)
  opts_ = ort.SessionOptions()
  opts_.log_severity_level = 3
  sess = ort.InferenceSession(_single_conv_model(w, b, x_shape, opts), opts_, providers=["CPUExecutionProvider"])
  want = sess.run(None, {"x": x})[0]
  at, g, bt = (as_array(a) for a in transforms())
  dev = "CPU" if Device.DEFAULT.startswith("NULL") else Device.DEFAULT
  with Context(DEV=dev):
    got = conv3x3_winograd(
      Tensor(x),
      Tensor(pack_u(fold_weights(w, g))),
      None if b is None else Tensor(b.astype(np.float32)),
      pads,
      Tensor(at.astype(np.float32)),
      Tensor(bt.astype(np.float32)),
    ).numpy()
  if got.shape != want.shape:
    return float("inf"), False
  err = float(np.max(np.abs(got.astype(np.float64) - want))) if got.size else 0.0
  return err, bool(np.allclose(got, want, rtol=TOL, atol=TOL))


def _decide(key: tuple, name: str, w: np.ndarray, b, x_shape, opts: dict, pads) -> str | None:
  """None to rewrite this conv, else why it keeps the direct form (decided once per export, logged once)."""
  if key in _decided:
    return _decided[key]
  log = _state["log"] or (lambda _m: None)
  _n, c, h, wd = (int(s) for s in x_shape)
  k = int(w.shape[0])
  ho, wo = h + pads[0] + pads[2] - 2, wd + pads[1] + pads[3] - 2
  why = None
  if ho < 1 or wo < 1:
    why = "empty output"
  elif _state["mode"] == "auto" and not faster(c, k, tiles(ho, wo, _n)):
    why = f"rule r{RULE_VERSION}: {c}→{k} channels at {tiles(ho, wo, _n)} 4x4 tiles is not faster as Winograd"
  else:
    err, ok = numerics_error(w, b, x_shape, opts, pads)
    if not ok:
      why = f"F(4x4,3x3) misses onnxruntime by max abs error {err:.3g} (tolerance {TOL:g})"
      log(f"winograd: conv '{name}' keeps the direct form: {why}")
    else:
      _rewritten[name] = f"{c}→{k} {ho}x{wo}"
      log(f"winograd: conv '{name}' ({c}→{k} channels, {ho}x{wo}) as F(4x4,3x3): max abs error {err:.2g} vs onnxruntime")
  _decided[key] = why
  return why


class _RunnerConsts:
  """The constant tensors one runner's rewritten convs read: Aᵀ, Bᵀ and each conv's U, with their numpy values (so the
  exporter can give their buffers bytes on NULL targets, like ONNX initializers: mrt/capture.py)."""

  def __init__(self):
    self.sources: list[tuple[str, object, np.ndarray]] = []
    self.u: dict[str, object] = {}
    self.at = self.bt = None

  def tensor(self, label: str, value: np.ndarray):
    from tinygrad import Tensor

    t = Tensor(value)
    self.sources.append((label, t, value))
    return t

  def transforms(self):
    if self.at is None:
      from mrt.winograd_math import as_array, transforms

      at, _g, bt = (as_array(a) for a in transforms())
      self.at = self.tensor("winograd.At", np.ascontiguousarray(at.astype(np.float32)))
      self.bt = self.tensor("winograd.Bt", np.ascontiguousarray(bt.astype(np.float32)))
    return self.at, self.bt

  def folded(self, name: str, w: np.ndarray):
    if name not in self.u:
      from mrt.winograd_math import as_array, fold_weights, transforms

      g = as_array(transforms()[1])
      from mrt.winograd_ops import pack_u

      self.u[name] = self.tensor(f"winograd({name}).U", pack_u(fold_weights(w, g)))
    return self.u[name]


def sources(runner) -> list[tuple[str, object, np.ndarray]]:
  """(label, Tensor, numpy value) of every constant the rewrite added to `runner` (empty when it rewrote nothing)."""
  consts = getattr(runner, "_mrt_winograd", None)
  return list(consts.sources) if consts is not None else []


def install(runner, onnx_path: str):
  """Make `runner` compute qualifying convs as Winograd (a no-op when the pass is off). Returns the runner."""
  if _state["mode"] == "off" or "Conv" not in runner.onnx_ops:
    return runner
  inits = _initializers(onnx_path)
  convs = {}  # conv output name -> (weight initializer, bias initializer or "")
  for node in runner.graph_nodes:
    if node.op == "Conv" and len(node.inputs) >= 2 and node.inputs[1] in inits and node.outputs:
      convs[node.outputs[0]] = (node.inputs[1], node.inputs[2] if len(node.inputs) > 2 else "")
      node.opts[NODE_KEY] = node.outputs[0]  # the runner passes a node's opts to its op: that names the conv
  consts = _RunnerConsts()
  runner._mrt_winograd = consts
  base = runner.onnx_ops["Conv"]

  def pick(fn):
    def conv(X, W, B=None, **opts):
      from tinygrad import dtypes

      name = opts.pop(NODE_KEY, None)
      if name not in convs:
        return fn(X, W, B, **opts)
      wname, bname = convs[name]
      w = inits[wname]
      if X.dtype != dtypes.float32 or shape_refusal(X.shape, w.shape, w.dtype, opts) is not None:
        return fn(X, W, B, **opts)
      pads = conv_pads(opts.get("auto_pad", "NOTSET"), opts.get("pads", 0), X.shape[2], X.shape[3])
      b = inits.get(bname) if bname else None  # a computed bias is only added: the check runs without it
      if _decide((name, tuple(int(s) for s in X.shape)), name, w, b, X.shape, opts, pads) is not None:
        return fn(X, W, B, **opts)
      from mrt.winograd_ops import conv3x3_winograd

      at, bt = consts.transforms()
      return conv3x3_winograd(X, consts.folded(name, w), B, pads, at, bt)

    return conv

  runner.onnx_ops = {**runner.onnx_ops, "Conv": pick(base) if callable(base) else {v: pick(f) for v, f in base.items()}}
  return runner
