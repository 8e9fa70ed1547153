#!/usr/bin/env python3
"""Capture tinygrad 0.14's own QCOM (CL) command streams for the real Qualcomm-compiled kernels of openpilot's warp
pickles (qcom/testdata/qcom-cl/), against the fake KGSL of fake_kgsl.py, for modelrt's golden test
(qcom/tests/golden_cl.rs).

No compiler runs: tinygrad's `QCOMProgram` is built directly from each kernel's Qualcomm container (the `.adreno.bin`
next to the pickle, byte-identical to the binary inside it) with the CL path selected (`NIR` false: tinygrad decides by
the device's renderer class, and its Qualcomm compiler cannot start here, so the IR3 renderer class is swapped out
after the device opened). Each distinct kernel is launched once with the global/local sizes and buffer sizes of its
first launch in the pickle's schedule (read with the exporter's restricted reader, mrt/safe_pickle.py). Recorded per
launch: the submitted IB dwords, the filled kernel-argument region, and the GPU addresses involved (for
normalisation). No shader executes.

Usage: $MODELRT_PYTHON qcom/golden/capture_cl.py qcom/testdata/qcom-cl qcom/golden/qcom_cl.json
"""
import ctypes
import gzip
import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent.parent / "xtask" / "exporter"))


def launches(pkl_gz: Path) -> list[dict]:
  """First launch of each distinct kernel in the pickle's schedule: name, global, local, parameter byte sizes."""
  from mrt import safe_pickle

  top = safe_pickle.loads(gzip.decompress(pkl_gz.read_bytes()))
  cj = next(a for a in top.args if isinstance(a, safe_pickle.Record) and a.name == "CapturedJit")
  out, seen = [], set()
  for ei in cj.args[1]:
    prg = ei.field("prg")
    if prg.name != "CompiledRunner":
      continue
    p = prg.args[0]
    name = p.field("src").split("__kernel void ", 1)[1].split("(", 1)[0]
    if name in seen:
      continue
    seen.add(name)
    sizes = [d.args[-1] * (d.args[1] // 8) for d in p.field("aux")[0]]
    out.append({"name": name, "global": p.field("global_size"), "local": p.field("local_size"), "sizes": sizes})
  return out


def main():
  data, out = Path(sys.argv[1]), Path(sys.argv[2])
  from fake_kgsl import install

  submissions = []
  install(submissions)
  from tinygrad import Device, dtypes
  from tinygrad.device import TinyELF
  from tinygrad.runtime import ops_qcom

  dev = Device["QCOM"]
  ops_qcom.IR3Renderer = type("NotIR3Renderer", (), {})  # select the CL path in QCOMProgram (see module doc)
  kernels = []
  for pkl in sorted(data.glob("*.pkl.gz")):
    stem = pkl.name[: -len(".pkl.gz")]
    for ln in launches(pkl):
      file = f"{stem}.{ln['name']}.adreno.bin"
      lib = (data / file).read_bytes()
      sig = tuple((f"data{i}", i, dtypes.uchar, ()) for i in range(len(ln["sizes"])))
      prg = ops_qcom.QCOMProgram(dev, TinyELF(lib=lib, name=ln["name"], target=None, signature=sig))
      assert not prg.NIR
      bufs = [dev.allocator.alloc(n) for n in ln["sizes"]]
      start = len(submissions)
      prg(*bufs, global_size=tuple(ln["global"]), local_size=tuple(ln["local"]))
      assert len(submissions) == start + 1, "one GPU_COMMAND per launch expected"
      dws = submissions[-1]["dwords"]
      k = next(i for i in range(len(dws) - 3) if dws[i] == 0x70348003 and dws[i + 1] == 0x40364000)
      args_va = dws[k + 2] | dws[k + 3] << 32
      args = bytes((ctypes.c_uint8 * prg.kernargs_alloc_size).from_address(args_va))
      kernels.append({
        "pickle": pkl.name, "file": file, "name": ln["name"], "global": ln["global"], "local": ln["local"],
        "sizes": ln["sizes"], "ib": dws, "args": args.hex(), "kernargs_alloc_size": prg.kernargs_alloc_size,
        "addrs": {"dummy": dev.dummy_addr, "border": dev.border_color_buf.va_addr, "stack": dev._stack.va_addr,
                  "lib": prg.lib_gpu.va_addr, "args": args_va, "timeline": dev.timeline_signal.value_addr,
                  "bufs": [b.va_addr for b in bufs]},
      })
  out.write_text(json.dumps({"tinygrad": "0.14", "tinygrad_device": "QCOM (CL path)", "kernels": kernels}) + "\n")


if __name__ == "__main__":
  os.environ.setdefault("DEV", "QCOM")
  main()
