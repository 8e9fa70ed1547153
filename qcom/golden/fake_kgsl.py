"""Test-only fake of the KGSL kernel driver at tinygrad 0.14's Python ioctl/mmap layer, so `Device["QCOM"]` (the real
QCOM backend with the IR3 compiler) runs on a host without an Adreno GPU.

tinygrad's QCOMDevice opens /dev/kgsl-3d0 through `FileIOInterface` (ops_qcom.py); `install()` replaces that class with
`FakeKGSL`, which answers the nine ioctls the backend uses, backs every GPUOBJ with anonymous host memory (GPU VA ==
CPU VA, as with KGSL_MEMFLAGS_USE_CPU_MAP) and, on GPU_COMMAND, records the IB dwords and performs the two memory
side effects a stream needs to make progress (CP_EVENT_WRITE CACHE_FLUSH_TS stores and CP_REG_TO_MEM timestamps).
No shader executes: kernel outputs are garbage. Copy-in/copy-out are host memmoves into that memory, so uploaded
bytes (e.g. weights) are real. Used by capture.py (golden streams) and xtask/exporter/tools/make_qcom_pickle.py.
"""
import ctypes

CHIP_ID, GPU_ID = 0x06030001, 630  # Adreno 630 (what capture.py's goldens and modelrt's a630 target assume)


def install(submissions: list | None) -> type:
  """Patch tinygrad's QCOM backend to use the fake; every GPU_COMMAND appends {"ib_addr", "dwords"} to `submissions`
  (not recorded when None). Must run before `Device["QCOM"]` is first opened. Returns the fake class."""
  from tinygrad.runtime import ops_qcom
  from tinygrad.runtime.autogen import kgsl
  from tinygrad.runtime.support.hcq import FileIOInterface

  libc = ctypes.CDLL(None, use_errno=True)
  libc.mmap.restype = ctypes.c_void_p
  libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
  MAP_PRIVATE_ANON = 0x02 | 0x20

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
        info.chip_id, info.gpu_id, info.mmu_enabled = CHIP_ID, GPU_ID, 1
      elif nr == 0x07: pass
      elif nr == 0x4A:
        obj = kgsl.struct_kgsl_command_object.from_address(arg.cmdlist)
        assert arg.numcmds == 1 and obj.flags == 1
        dws = list((ctypes.c_uint32 * (obj.size // 4)).from_address(obj.gpuaddr))
        if submissions is not None: submissions.append({"ib_addr": obj.gpuaddr, "dwords": dws})
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
  return FakeKGSL
