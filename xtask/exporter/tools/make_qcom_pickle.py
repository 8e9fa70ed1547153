#!/usr/bin/env python3
"""Test-only: write a real tinygrad 0.14 QCOM (IR3) compile3-style pickle of an ONNX model on a host without an Adreno.

  make_qcom_pickle.py MODEL.onnx OUT.pkl [--oob] [--image]

tinygrad's real QCOM backend (Mesa ir3 compiler, HCQ command streams) runs on the fake KGSL of
qcom/golden/fake_kgsl.py, whose GPU memory is host memory: weights uploaded by copy-in hold their real bytes, so the
pickle's buffers carry the model's weights exactly as on a comma device. Shaders are NOT executed: buffers that tinygrad
computes on the GPU (outputs, and weights it derives by kernels, e.g. FLOAT16 casts or IMAGE re-layouts) hold zeros, and
OUT.pkl.out.npy is garbage. --image sets IMAGE=1 FLOAT16=1 (openpilot's configuration). Capture and pickle layout are
make_test_pickle.py's (--oob = PICKLE_OOB=1 layout).
"""

import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
FAKE_KGSL = os.path.join(HERE, "..", "..", "..", "qcom", "golden", "fake_kgsl.py")


def load_fake_kgsl():
  """qcom/golden/fake_kgsl.py, loaded by its path (it is a test fixture of another folder, not an installed module)."""
  spec = importlib.util.spec_from_file_location("fake_kgsl", os.path.abspath(FAKE_KGSL))
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


def main():
  args = [a for a in sys.argv[1:] if not a.startswith("--")]
  flags = {a for a in sys.argv[1:] if a.startswith("--")}
  if len(args) != 2 or not flags <= {"--oob", "--image"}:
    sys.exit("usage: make_qcom_pickle.py MODEL.onnx OUT.pkl [--oob] [--image]")
  for k in ("CPU", "NULL", "AMD", "QCOM", "CACHEDB", "IMAGE", "FLOAT16"):
    os.environ.pop(k, None)
  os.environ["DEV"] = "QCOM:IR3"
  if "--image" in flags:
    os.environ.update(IMAGE="1", FLOAT16="1")
  load_fake_kgsl().install(None)  # before tinygrad opens the device; the submitted streams are not needed here
  from make_test_pickle import make_pickle  # next to this script, so on Python's path

  make_pickle(args[0], args[1], "--oob" in flags)


if __name__ == "__main__":
  main()
