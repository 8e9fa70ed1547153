"""A numpy model of openpilot's whole road-camera warp step (the v0.10.4 `warp_1928x1208` pickle): for each of the
two cameras, warp the NV12 frame into a 512x256 Y plane and 256x128 U and V planes (warp_model.py), split Y into its
four 2x2 phases, push those six 128x256 channels into the camera's 30-channel frame queue (dropping the oldest six)
and hand the model the oldest and newest six channels of the queue.

  Y = warp(frame, M, y, 512, 256);  U, V = warp(frame, M * UV, u|v, 256, 128)
  new = [Y[0::2, 0::2], Y[1::2, 0::2], Y[0::2, 1::2], Y[1::2, 1::2], U, V]
  queue' = queue[6:] ++ new;  model input = queue'[:6] ++ queue'[24:]

UV is the pickle's constant 3x3 (element-wise factors taking the transform to the half-size chroma plane). Written
from openpilot's description of the step, not from the kernels.

Usage: road_warp_model.py QUEUE.npy FRAME.npy M.npy UV.npy OUT_QUEUE.npy OUT_INPUT.npy (one camera).
"""
import sys

import numpy as np
from warp_model import warp


def step(queue, frame, m, uv):
  m = np.asarray(m, np.float32).reshape(9)
  y = warp(frame, m, "y", 512, 256)
  mu = m * np.asarray(uv, np.float32).reshape(9)
  new = np.stack([y[0::2, 0::2], y[1::2, 0::2], y[0::2, 1::2], y[1::2, 1::2],
                  warp(frame, mu, "u", 256, 128), warp(frame, mu, "v", 256, 128)])
  q = np.concatenate([queue.reshape(30, 128, 256)[6:], new])
  return q, np.concatenate([q[:6], q[24:]])[None]


def main(argv):
  if len(argv) != 7:
    print("error: usage: road_warp_model.py QUEUE.npy FRAME.npy M.npy UV.npy OUT_QUEUE.npy OUT_INPUT.npy",
          file=sys.stderr)
    return 2
  queue, frame, m, uv = (np.load(p) for p in argv[1:5])
  q, model_input = step(queue, frame.reshape(-1), m, uv)
  np.save(argv[5], q)
  np.save(argv[6], model_input)
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv))
