"""A small two-role tinygrad program of the modeld pipeline's shape, for the multi-device tests
(tests/tests/amd/multi_device.rs): role `sensor` samples a raw 64x48 uint8 frame through a per-frame 2x3 affine transform
(nearest neighbour, a gather) into 16x8, pushes it into a frame queue, and sends the two newest entries and the frame's
mean brightness to role `gpu`; `gpu` runs a small dense layer over them, pushes its features into a queue of its own and
reads the whole queue with the per-step gains into its outputs. Two values
cross devices per step (`.to(devices["gpu"])`), unlike the pipeline's one.

  cargo xtask compile --tinygrad xtask/models/two_roles.py:build --target sensor=adreno-a630 --target gpu=amd-gfx1100 -o t.mrt
  cargo xtask compile --tinygrad xtask/models/two_roles.py:build --target cpu -o t-cpu.mrt   # every role on the CPU
"""
import numpy as np

W, H, OW, OH, HIST, HID = 64, 48, 16, 8, 3, 8


def sample(rng) -> dict:
  a = np.array([[W / OW * 0.9, 0.05, 2.0], [-0.05, H / OH * 0.9, 1.5]], np.float32)
  a += (rng.standard_normal((2, 3)) * np.array([[0.05, 0.01, 0.5], [0.01, 0.05, 0.5]])).astype(np.float32)
  return {"frame": rng.integers(0, 256, W * H, dtype=np.uint8), "affine": a, "gain": rng.standard_normal(2).astype(np.float32)}


def build(seed: int = 5, devices: dict | None = None) -> dict:
  from tinygrad import Device, Tensor

  devices = devices or {"sensor": Device.DEFAULT, "gpu": Device.DEFAULT}
  sensor, gpu = devices["sensor"], devices["gpu"]
  rng = np.random.default_rng(seed)
  w1 = Tensor((rng.standard_normal((2 * OW * OH + 1, HID)) / 16).astype(np.float32), device=gpu).realize()
  w2 = Tensor((rng.standard_normal((HIST * HID + 2, 4)) / 4).astype(np.float32), device=gpu).realize()

  def fn(frames, hidden, frame, affine, gain):
    xs = Tensor.arange(OW).reshape(1, OW).expand(OH, OW).reshape(-1).float()
    ys = Tensor.arange(OH).reshape(OH, 1).expand(OH, OW).reshape(-1).float()
    m = affine.to(sensor)
    sx = (m[0, 0] * xs + m[0, 1] * ys + m[0, 2]).round().clip(0, W - 1).cast("int")
    sy = (m[1, 0] * xs + m[1, 1] * ys + m[1, 2]).round().clip(0, H - 1).cast("int")
    small = frame[sy * W + sx].reshape(1, OH, OW)
    frames.assign(frames[1:].cat(small, dim=0).contiguous())
    newest = frames[1:].to(gpu)  # crossing 0: the two newest queue entries
    bright = frame.float().mean().reshape(1).to(gpu)  # crossing 1: the frame's mean brightness
    x = newest.float().div(255.0).reshape(1, -1).cat(bright.div(255.0).reshape(1, 1), dim=1)
    h = (x @ w1).tanh()
    hidden.assign(hidden[1:].cat(h, dim=0).contiguous())
    out = hidden.reshape(1, -1).cat(gain.to(gpu).reshape(1, 2), dim=1) @ w2
    return out.contiguous(), (h * h).sum(axis=1).contiguous()

  return {
    "fn": fn,
    "inputs": sample(np.random.default_rng(0)),
    "state": {"frames": np.zeros((HIST, OH, OW), np.uint8), "hidden": np.zeros((HIST, HID), np.float32)},
    "host_inputs": ["affine", "gain"],
    "sample": sample,
    "outputs": ["out", "energy"],
    "placement": {"hidden": "gpu", "gain": "gpu"},
  }
