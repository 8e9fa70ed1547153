"""An openpilot-shaped modeld pipeline written in tinygrad, with synthetic seeded weights (the real models are not
available offline): one raw NV12 camera frame at the comma three's road-camera geometry (1928x1208) is warped by a
per-frame 3x3 transform to the model's input size, pushed into an on-device frame queue, read by a small vision-like net
whose feature vector enters a feature queue of past frames, which a small policy-like net reads together with a desire
queue and the traffic convention. The queues are passed in on every call and advanced with `assign`, the way
openpilot's selfdrive/modeld/compile_modeld.py builds its one JIT per camera geometry.

  cargo xtask compile --tinygrad xtask/models/modeld_pipeline.py:build --target cpu -o modeld.mrt
  cargo xtask compile --tinygrad xtask/models/modeld_pipeline.py:build --target warp=adreno-a630 --target model=amd-gfx1100 -o split.mrt

Device roles (openpilot's usbgpu layout, docs/pipeline.md "Device roles"): `warp` runs the camera warp and the frame queue
(openpilot: WARP=QCOM), `model` runs the vision and policy nets with the feature and desire queues (QUEUE=AMD on a USB
GPU). The warped frame pair moves from warp to model with `.to(devices["model"])`, the one crossing of a step.

`build()` is the contract of `cargo xtask compile --tinygrad` (docs/hw/tinygrad-export.md, "Stateful JITs"):
it returns a dict with
  fn      the function to capture; called as fn(**state, **inputs) with tinygrad Tensors
  inputs  per-step inputs: name -> example numpy array (shape and dtype; the values are not used)
  state   name -> numpy array: the initial contents of the buffers fn advances with assign (become bundle state)
  sample  optional: sample(rng: numpy Generator) -> one step's inputs (name -> numpy array); default: seeded random
  outputs optional: output names for fn's returned tuple
  placement optional: input/state name -> role (unplaced names go on the first --target's role)
`build(devices=...)` gets role name -> tinygrad device string; with one --target every role is that target's device.
Weights are created from numpy (seeded), so their bytes are known even when the compile runs on tinygrad's data-less
NULL device (cpu-aarch64, adreno-a630).
"""
import numpy as np

CAM_W, CAM_H = 1928, 1208          # comma three road camera (AR0231 / OX03C10 sensor mode)
MODEL_W, MODEL_H = 128, 64         # luma size of the model input (openpilot: 512x256)
FRAME_SKIP = 2                     # queue entries per model context step
N_FRAMES = 2                       # frames the vision net sees
N_CTX = 5                          # feature history the policy sees
FEAT, DESIRE, VISION_OUT, POLICY_OUT = 32, 8, 48, 16


def nv12_layout(w: int, h: int) -> tuple[int, int, int, int]:
  """(row stride, luma rows, chroma rows, total bytes) of an NV12 buffer with the padding comma's camera driver uses:
  rows padded to 128 bytes, the luma plane to a multiple of 16 rows and the interleaved UV plane to a multiple of 8."""
  def up(x, a): return (x + a - 1) // a * a
  stride, y_rows, uv_rows = up(w, 128), up(h, 16), up(h // 2, 8)
  return stride, y_rows, uv_rows, stride * (y_rows + uv_rows)


def _warp_plane(plane, m, out_w: int, out_h: int, src_w: int, src_h: int, row_stride: int, col_step: int = 1, col0: int = 0):
  """Nearest-neighbour perspective warp: destination pixel (x, y) takes the source pixel at M @ (x, y, 1) (homogeneous,
  rounded, clamped to the image). `plane` is the flat source buffer; a source pixel (sx, sy) sits at
  sy * row_stride + col0 + sx * col_step. The 3x3 product is spelled out element by element so the whole warp stays one
  gather with no reduction."""
  from tinygrad import Tensor
  xs = Tensor.arange(out_w).reshape(1, out_w).expand(out_h, out_w).reshape(-1).float()
  ys = Tensor.arange(out_h).reshape(out_h, 1).expand(out_h, out_w).reshape(-1).float()
  den = m[2, 0] * xs + m[2, 1] * ys + m[2, 2]
  sx = ((m[0, 0] * xs + m[0, 1] * ys + m[0, 2]) / den).round().clip(0, src_w - 1).cast("int")
  sy = ((m[1, 0] * xs + m[1, 1] * ys + m[1, 2]) / den).round().clip(0, src_h - 1).cast("int")
  return plane[sy * row_stride + sx * col_step + col0].reshape(out_h, out_w)


def prepare_frame(frame, tfm):
  """NV12 camera frame (flat uint8) + model->camera transform -> the model's 6-channel YUV420 tensor (6, H/2, W/2):
  the four 2x2 phases of the warped luma, then U and V."""
  stride, y_rows, _, _ = nv12_layout(CAM_W, CAM_H)
  y = _warp_plane(frame, tfm, MODEL_W, MODEL_H, CAM_W, CAM_H, stride)
  # chroma is subsampled 2x2: the same transform in half-resolution coordinates is S @ M @ S^-1 with S = diag(.5, .5, 1)
  from tinygrad import Tensor
  half = tfm * Tensor([[1.0, 1.0, 0.5], [1.0, 1.0, 0.5], [2.0, 2.0, 1.0]], device=frame.device)
  uv = frame[stride * y_rows:]
  u = _warp_plane(uv, half, MODEL_W // 2, MODEL_H // 2, CAM_W // 2, CAM_H // 2, stride, 2, 0)
  v = _warp_plane(uv, half, MODEL_W // 2, MODEL_H // 2, CAM_W // 2, CAM_H // 2, stride, 2, 1)
  return Tensor.stack(y[0::2, 0::2], y[1::2, 0::2], y[0::2, 1::2], y[1::2, 1::2], u, v)


def _push(queue, new):
  """Drop the oldest entry of `queue` and append `new` (on the device, in place)."""
  queue.assign(queue[1:].cat(new, dim=0).contiguous())
  return queue


def make_weights(seed: int) -> dict:
  rng = np.random.default_rng(seed)
  def lin(i, o): return (rng.standard_normal((i, o)) / np.sqrt(i)).astype(np.float32), (rng.standard_normal(o) * 0.1).astype(np.float32)
  n_pix = N_FRAMES * 6 * (MODEL_H // 8) * (MODEL_W // 8)
  return {"v1": lin(n_pix, 64), "v2": lin(64, VISION_OUT), "p1": lin(N_CTX * FEAT + N_CTX * DESIRE + 2, 64), "p2": lin(64, POLICY_OUT)}


def make_step(weights: dict, devices: dict):
  from tinygrad import Tensor
  warp, model = devices["warp"], devices["model"]
  w = {k: (Tensor(a, device=model).realize(), Tensor(b, device=model).realize()) for k, (a, b) in weights.items()}
  def dense(x, name): return x @ w[name][0] + w[name][1]

  def step(img_q, feat_q, desire_q, frame, tfm, desire, traffic_convention):
    img = _push(img_q, prepare_frame(frame, tfm.to(warp)).unsqueeze(0))[::FRAME_SKIP].to(model)       # (N_FRAMES, 6, h, w)
    x = img.float().div(255.0).reshape(1, N_FRAMES * 6, MODEL_H // 2, MODEL_W // 2).avg_pool2d(4).reshape(1, -1)
    vision_out = dense(dense(x, "v1").relu(), "v2")
    feats = _push(feat_q, vision_out[:, :FEAT].reshape(1, 1, FEAT))[::FRAME_SKIP].reshape(1, -1)
    desires = _push(desire_q, desire.to(model).reshape(1, 1, DESIRE))
    desires = desires.reshape(N_CTX, FRAME_SKIP, DESIRE).max(1).reshape(1, -1)
    h = feats.cat(desires, traffic_convention.to(model).reshape(1, 2), dim=1)
    policy_out = dense(dense(h, "p1").relu(), "p2")
    return vision_out.contiguous(), policy_out.contiguous()
  return step


def sample_inputs(rng) -> dict:
  """One step's host inputs: a random NV12 frame, a transform near the one mapping the model's view onto the camera
  (scale + offset, jittered like a calibration change), a one-hot-ish desire and a traffic convention."""
  _, _, _, size = nv12_layout(CAM_W, CAM_H)
  s = CAM_W / MODEL_W * 0.8
  tfm = np.array([[s, 0, CAM_W * 0.1], [0, s, CAM_H * 0.25], [0, 0, 1]], dtype=np.float64)
  tfm += rng.standard_normal((3, 3)) * np.array([[0.2, 0.02, 20], [0.02, 0.2, 20], [1e-5, 1e-5, 0]])
  desire = np.zeros(DESIRE, np.float32)
  desire[rng.integers(0, DESIRE)] = 1.0
  tc = np.zeros(2, np.float32)
  tc[rng.integers(0, 2)] = 1.0
  return {"frame": rng.integers(0, 256, size, dtype=np.uint8), "tfm": tfm.astype(np.float32), "desire": desire,
          "traffic_convention": tc}


def initial_state() -> dict:
  return {"img_q": np.zeros((FRAME_SKIP * (N_FRAMES - 1) + 1, 6, MODEL_H // 2, MODEL_W // 2), np.uint8),
          "feat_q": np.zeros((FRAME_SKIP * (N_CTX - 1) + 1, 1, FEAT), np.float32),
          "desire_q": np.zeros((FRAME_SKIP * N_CTX, 1, DESIRE), np.float32)}


# Everything the model role reads; the rest (frame, tfm, img_q) goes on the first role, warp.
PLACEMENT = {"desire": "model", "traffic_convention": "model", "feat_q": "model", "desire_q": "model"}


def build(seed: int = 1234, devices: dict | None = None) -> dict:
  if devices is None:  # called directly (not by the exporter): every role on tinygrad's default device
    from tinygrad import Device
    devices = {"warp": Device.DEFAULT, "model": Device.DEFAULT}
  return {"fn": make_step(make_weights(seed), devices), "inputs": sample_inputs(np.random.default_rng(0)), "state": initial_state(),
          "host_inputs": ["tfm", "desire", "traffic_convention"], "sample": sample_inputs, "outputs": ["vision_out", "policy_out"],
          "placement": PLACEMENT}
