#!/usr/bin/env python3
"""Capture tinygrad 0.14's own QCOM (IR3) command streams against a fake KGSL, for modelrt's golden tests.

tinygrad's QCOMDevice opens /dev/kgsl-3d0 through `FileIOInterface` (ops_qcom.py); we replace that class with
`FakeKGSL`, which answers the nine ioctls the backend uses, backs every GPUOBJ with anonymous host memory (GPU VA ==
CPU VA, as with KGSL_MEMFLAGS_USE_CPU_MAP) and, on GPU_COMMAND, records the IB dwords and performs the two memory
side effects a stream needs to make progress (CP_EVENT_WRITE CACHE_FLUSH_TS stores and CP_REG_TO_MEM timestamps).
No shader executes: outputs are garbage and are never read. Kernels are compiled by the real Mesa ir3 (tinymesa).

Usage: python capture.py OUT_DIR       (writes OUT_DIR/<case>.json; runs one subprocess per env configuration)
"""
import ctypes, json, os, subprocess, sys

CASES = {
  # case name -> extra env
  "plain": {},
  "image": {"IMAGE": "1"},
  "image_half": {"IMAGE": "1", "FLOAT16": "1"},
}

def run_case(case: str) -> dict:
  import numpy as np
  from tinygrad.runtime import ops_qcom
  from tinygrad.runtime.autogen import kgsl
  from tinygrad.runtime.support.hcq import FileIOInterface

  libc = ctypes.CDLL(None, use_errno=True)
  libc.mmap.restype, libc.mmap.argtypes = ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
  MAP_PRIVATE_ANON = 0x02 | 0x20

  submissions = []

  class FakeKGSL(FileIOInterface):
    def __init__(self, path: str = "", flags: int = 0, fd=None):
      assert path == "/dev/kgsl-3d0", path
      self.path, self.objs, self.next_id, self.ts = path, {}, 1, 0
    def __del__(self): pass
    def mmap(self, start, sz, prot, flags, offset):
      va = libc.mmap(None, sz, 3, MAP_PRIVATE_ANON, -1, 0)
      assert va not in (None, 2**64 - 1)
      self.objs[offset >> 12]["va"] = va
      return va
    def ioctl(self, request, arg):
      nr = request & 0xFF
      if nr == 0x45:  # GPUOBJ_ALLOC
        arg.id, self.next_id = self.next_id, self.next_id + 1
        self.objs[arg.id] = {"size": arg.size, "flags": arg.flags, "va": None}
      elif nr == 0x46: self.objs.pop(arg.id)
      elif nr == 0x13: arg.drawctxt_id = 1
      elif nr == 0x32: pass
      elif nr == 0x02:
        info = kgsl.struct_kgsl_devinfo.from_address(arg.value)
        info.chip_id, info.gpu_id, info.mmu_enabled = 0x06030001, 630, 1
      elif nr == 0x07: pass
      elif nr == 0x4A:
        obj = kgsl.struct_kgsl_command_object.from_address(arg.cmdlist)
        assert arg.numcmds == 1 and obj.flags == 1
        dws = list((ctypes.c_uint32 * (obj.size // 4)).from_address(obj.gpuaddr))
        submissions.append({"ib_addr": obj.gpuaddr, "dwords": dws})
        self._side_effects(dws)
        self.ts += 1
        arg.timestamp = self.ts
      else: raise AssertionError(f"unexpected ioctl {request:#x}")
      return 0
    def _side_effects(self, dws):
      i = 0
      while i < len(dws):
        h = dws[i]
        if h >> 28 == 7:
          op, cnt = (h >> 16) & 0x7F, h & 0x3FFF
          p = dws[i + 1:i + 1 + cnt]
          if op == 0x46 and cnt == 4 and p[0] == 4: ctypes.c_uint32.from_address(p[1] | p[2] << 32).value = p[3]
          if op == 0x3E: ctypes.c_uint64.from_address(p[1] | p[2] << 32).value = 0
          i += 1 + cnt
        elif h >> 28 == 4: i += 1 + (h & 0x7F)
        else: raise AssertionError(f"bad header {h:#x}")

  ops_qcom.FileIOInterface = FakeKGSL

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
  else:
    img, w = t(1, 16, 16, 16), t(16, 16, 3, 3)
    run("conv", lambda: img.conv2d(w, padding=1))
  for k, l in zip(kernels, labels): k["label"] = l
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
