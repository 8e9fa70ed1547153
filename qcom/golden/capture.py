#!/usr/bin/env python3
"""Capture tinygrad 0.14's own QCOM (IR3) command streams against a fake KGSL, for modelrt's golden tests.

tinygrad's QCOMDevice runs on the fake KGSL of fake_kgsl.py (ioctls answered at the Python layer, GPU memory is host
memory, every GPU_COMMAND's IB dwords are recorded). No shader executes: outputs are garbage and are never read.
Kernels are compiled by the real Mesa ir3 (tinymesa).

Usage: python capture.py OUT_DIR       (writes OUT_DIR/<case>.json; runs one subprocess per env configuration)
"""
import ctypes, json, os, subprocess, sys

CASES = {
  # case name -> extra env
  "plain": {},
  "image": {"IMAGE": "1"},
  "image_half": {"IMAGE": "1", "FLOAT16": "1"},
  # one kernel reading 20 half images: more textures than CP_LOAD_STATE6 loads inline (16)
  "image_many": {"IMAGE": "1", "FLOAT16": "1"},
}

def run_case(case: str) -> dict:
  import numpy as np
  from tinygrad.runtime import ops_qcom
  sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
  from fake_kgsl import install

  submissions = []
  install(submissions)

  from tinygrad import Tensor, Device, dtypes
  from tinygrad.runtime.support.compiler_mesa import IR3Compiler
  from tinygrad.helpers import is_image_shape

  dev = Device["QCOM"]
  kernels, progs = [], {}
  orig_init, orig_call = ops_qcom.QCOMProgram.__init__, ops_qcom.QCOMProgram.__call__

  def init(self, d, obj):
    orig_init(self, d, obj)
    v, cs, imm, isa = IR3Compiler.unpack_lib(obj.lib)
    progs[id(self)] = {"imm_off": cs.allocs.max_const_offset_vec4 * 16, "immediates": imm.hex()}

  def call(self, *bufs, global_size=(1, 1, 1), local_size=(1, 1, 1), vals=(), wait=False, **kw):
    assert self.NIR, "capture needs the IR3 renderer"
    start = len(submissions)
    ret = orig_call(self, *bufs, global_size=global_size, local_size=local_size, vals=vals, wait=wait, **kw)
    assert len(submissions) == start + 1, "one GPU_COMMAND per launch expected"
    sub = submissions[-1]
    # find ARGS via the constant load (CP_LOAD_STATE6_FRAG d0 0x40364000) and snapshot the region tinygrad filled
    dws = sub["dwords"]
    k = next(i for i in range(len(dws) - 3) if dws[i] == 0x70348003 and dws[i + 1] == 0x40364000)
    args_va = dws[k + 2] | dws[k + 3] << 32
    args = bytes((ctypes.c_uint8 * self.kernargs_alloc_size).from_address(args_va))
    params = []
    for _, slot, dt, shape in self.signature:
      if slot < len(bufs):
        kind = {"kind": "image", "height": shape[0], "width": shape[1]} if is_image_shape(shape) else {"kind": "buffer"}
        params.append({**kind, "dtype": dt.base.name if hasattr(dt, "base") else dt.name, "itemsize": dt.itemsize})
      else: params.append({"kind": "var", "dtype": dt.name, "itemsize": dt.itemsize})
    kernels.append({
      "name": self.name,
      "meta": {"image_size": self.image_size, "fregs": self.fregs, "hregs": self.hregs, "branchstack": self.brnchstck,
               "pvtmem": self.pvtmem, "shmem": self.shmem, "wgid": self.wgid, "lid": self.lid, "wgsz": self.wgsz,
               "buf_off": self.buf_off, **progs[id(self)], "tex_cnt": self.tex_cnt, "ibo_cnt": self.ibo_cnt,
               "tex_to_image": list(self.tex_to_image[:self.tex_cnt])},
      "isa": bytes(self.image).hex(),
      "params": params,
      "global": [int(x) for x in global_size], "local": [int(x) for x in local_size], "vals": [int(v) for v in vals],
      "addrs": {"dummy": dev.dummy_addr, "border": dev.border_color_buf.va_addr, "stack": dev._stack.va_addr,
                "lib": self.lib_gpu.va_addr, "args": args_va, "timeline": dev.timeline_signal.value_addr,
                "bufs": [b.va_addr for b in bufs]},
      "ib": dws, "args": args.hex(), "kernargs_alloc_size": self.kernargs_alloc_size,
    })
    return ret

  ops_qcom.QCOMProgram.__init__, ops_qcom.QCOMProgram.__call__ = init, call
  rng = np.random.default_rng(0)
  def t(*shape): return Tensor(rng.standard_normal(shape).astype(np.float32), device="QCOM").realize()
  labels = []
  def run(label, fn):
    n = len(kernels)
    fn().realize()
    labels.extend([label] * (len(kernels) - n))
  if case == "plain":
    a, b = t(1024), t(1024)
    run("elementwise", lambda: a * 3.7 + b)
    m = t(64, 256)
    run("reduction", lambda: m.sum(axis=1))
    x, y = t(64, 64), t(64, 64)
    run("matmul", lambda: x @ y)
  elif case == "image_many":
    img = t(1, 8, 8, 8)
    outs = [img.conv2d(t(8, 8, 1, 1)) for _ in range(20)]
    # the 1x1 convs only make 20 image buffers; their kernels are not recorded
    run("setup", lambda: Tensor.realize(*outs))
    run("many_textures", lambda: outs[0].cat(*outs[1:], dim=1).relu())
  else:
    img, w = t(1, 16, 16, 16), t(16, 16, 3, 3)
    run("conv", lambda: img.conv2d(w, padding=1))
  for k, l in zip(kernels, labels): k["label"] = l
  kernels = [k for k in kernels if k["label"] != "setup"]
  return {"case": case, "env": CASES[case], "tinygrad_device": "QCOM:IR3", "kernels": kernels}

def main():
  if len(sys.argv) == 3 and sys.argv[1] == "--case":
    print(json.dumps(run_case(sys.argv[2])))
    return
  out = sys.argv[1]
  os.makedirs(out, exist_ok=True)
  for case, extra in CASES.items():
    env = {**os.environ, "DEV": "QCOM:IR3", "JIT": "0", **extra}
    res = subprocess.run([sys.executable, __file__, "--case", case], env=env, capture_output=True, text=True, check=False)
    if res.returncode != 0: sys.exit(f"capture case {case} failed:\n{res.stderr[-4000:]}")
    with open(os.path.join(out, f"{case}.json"), "w") as f: f.write(json.dumps(json.loads(res.stdout), indent=1) + "\n")

if __name__ == "__main__": main()
