"""A numpy model of openpilot's camera warp, the end-to-end meaning of the warp kernels in qcom_cl_kernels.rs:
every output pixel (x, y) takes the nearest source pixel of the NV12 frame under a 3x3 perspective transform.

  p = M @ (x, y, 1);  (sx, sy) = (p0, p1) * (1 / p2);  round half to even;  clip to the plane;  read the plane.

Written from that description, not from the kernels' code. All arithmetic is float32, one rounding per
operation, in the order the description gives (the products summed left to right, the division as a
multiplication by the reciprocal, as tinygrad lowers it).

Usage: warp_model.py PLANE OUT_W OUT_H FRAME OUT MATRIX... where PLANE is y, u or v, FRAME the frame buffer
file, MATRIX one or more files of 9 little-endian float32 (several are multiplied element by element, as the
UV warp's two transforms are), OUT the file the output plane is written to (OUT_H rows of OUT_W bytes).
"""
import sys

import numpy as np

# The NV12 frame as openpilot's road camera delivers it: 1928x1208 luma with a 2048-byte stride, the
# interleaved UV plane (964x604 pairs) 1216 rows further on.
WIDTH, HEIGHT, STRIDE, UV_ROW = 1928, 1208, 2048, 1216


def warp(frame, m, plane, out_w, out_h):
  """The OUT_H x OUT_W plane of nearest samples of `plane` (y, u or v) of the NV12 `frame` under the 3x3 `m`."""
  if plane == "y":
    w, h, base, step = WIDTH, HEIGHT, 0, 1
  else:
    w, h, base, step = WIDTH // 2, HEIGHT // 2, UV_ROW * STRIDE + (plane == "v"), 2
  m = np.asarray(m, np.float32).reshape(9)
  x = np.arange(out_w, dtype=np.float32)[None, :].repeat(out_h, 0)
  y = np.arange(out_h, dtype=np.float32)[:, None].repeat(out_w, 1)
  px = m[0] * x + m[1] * y + m[2]
  py = m[3] * x + m[4] * y + m[5]
  inv = np.float32(1) / (m[6] * x + m[7] * y + m[8])
  sx = np.clip(np.rint(px * inv), 0, w - 1).astype(np.int64)
  sy = np.clip(np.rint(py * inv), 0, h - 1).astype(np.int64)
  return frame[base + sy * STRIDE + sx * step].astype(np.uint8)


def main(argv):
  if len(argv) < 7 or argv[1] not in ("y", "u", "v"):
    print("error: usage: warp_model.py y|u|v OUT_W OUT_H FRAME OUT MATRIX...", file=sys.stderr)
    return 2
  plane, out_w, out_h, frame_path, out_path = argv[1], int(argv[2]), int(argv[3]), argv[4], argv[5]
  m = np.ones(9, np.float32)
  for path in argv[6:]:
    m = m * np.fromfile(path, np.float32)
  warp(np.fromfile(frame_path, np.uint8), m, plane, out_w, out_h).tofile(out_path)
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv))
