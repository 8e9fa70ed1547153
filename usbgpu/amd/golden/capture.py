#!/usr/bin/env python3
"""Record tinygrad 0.14's own AM driver booting a Navi31-shaped GPU over its USB mock, for modelrt's golden tests.

tinygrad's real AM driver (tinygrad/runtime/support/am/) and USB code run with DEV=MOCKUSB+AMD GMMU=0 AM_RESET=1 against
the mock in tinygrad's test/mockgpu tree (not shipped in the 0.14.0 wheel: pass a tinygrad source checkout with
--tinygrad-src). The mock models a GC 12 part; this script reshapes it into Navi31 (GC 11.0.0, SDMA 6.0.0, MMHUB 3.0.0,
NBIO 4.3.0, MP0/MP1 13.0.0, HDP/OSSSYS 6.0.0) and replaces the answers that golden/README.md
lists as mock artefacts with frozen, realistic ones (see README.md next to this file). Firmware is the real Debian blobs
from target/amdgpu-firmware (`cargo xtask firmware`).

Recorded, in bus order and per phase (bringup, boot, setup, run, fini): every BAR5 register access (dword index, value;
consecutive identical reads collapsed into one with a count), every BAR0 (VRAM) access (contiguous runs merged; bytes
kept for small runs, length + CRC-32 for large ones), every BAR2 doorbell write, the PCI config writes, and per phase the
USB transfer counts by request. Register names come from tinygrad's register tables for the discovered IP versions.

Usage: python capture.py --tinygrad-src DIR --firmware DIR OUT.json
"""
import argparse, json, os, struct, sys, zlib

# Frozen answers that replace mock artefacts (README.md documents each).
SMU_DPM_MHZ = {0: [500, 2529], 1: [500, 960, 1200], 2: [96, 456, 772, 1249], 3: [400, 1000, 1400, 1900]}  # GFX, SOC, UCLK, FCLK
SMU_VERSION = 0x004E4B00  # the ucode_version field of Debian's smu_13_0_0.bin
PSP_TMR_SIZE = 0x1300000  # LOAD_TOC answer: the largest TMR the driver accepts
HDP_REMAP = 0x7F000  # BIF_BX0_REMAP_HDP_MEM_FLUSH_CNTL: the BAR5 byte offset Linux programs (MMIO remap page)
FIXED_NAMES = {0x0: "NBIO:MM_INDEX", 0x1: "NBIO:MM_DATA", 0x6: "NBIO:MM_INDEX_HI", 0xDE3: "NBIO:RCC_CONFIG_MEMSIZE",
               HDP_REMAP // 4: "HDP:remapped HDP_MEM_FLUSH_CNTL"}
NAVI31 = {"GC": (11, 0, 0), "SDMA0": (6, 0, 0), "MMHUB": (3, 0, 0), "NBIO": (4, 3, 0), "MP0": (13, 0, 0), "MP1": (13, 0, 0),
          "HDP": (6, 0, 0), "OSSSYS": (6, 0, 0)}
INLINE_BYTES = 1024  # VRAM runs up to this many bytes keep their data (a PSP command buffer is 1024)


class Recorder:
  def __init__(self):
    self.phase = "bringup"
    self.phases: dict[str, list] = {}
    self.usb: dict[str, dict[str, int]] = {}
    self.config: list = []
    self.active = True

  def ev(self, e: list):
    if not self.active: return
    evs = self.phases.setdefault(self.phase, [])
    last = evs[-1] if evs else None
    # collapse polls: identical consecutive register reads
    if e[0] == "r" and last is not None and last[0] == "r" and last[1] == e[1] and last[2] == e[2]:
      last[3] += 1
      return
    # merge contiguous VRAM runs of the same direction
    if e[0] in ("vw", "vr") and last is not None and last[0] == e[0] and last[1] + last[2] == e[1]:
      last[2] += e[2]
      if e[0] == "vw": last[3] += e[3]
      return
    evs.append(e)

  def count(self, what: str):
    if not self.active: return
    c = self.usb.setdefault(self.phase, {})
    c[what] = c.get(what, 0) + 1

  def finish(self) -> dict:
    out = {}
    for ph, evs in self.phases.items():
      rows = []
      for e in evs:
        if e[0] == "vw":
          data = bytes(e[3])
          rows.append(["vw", e[1], e[2], data.hex()] if len(data) <= INLINE_BYTES else ["vw", e[1], e[2], f"crc32:{zlib.crc32(data):08x}"])
        else: rows.append(e)
      out[ph] = rows
    return out


def install(rec: Recorder, fw_dir: str):
  from tinygrad.runtime.autogen.am import am
  import test.mockgpu.am.amgpu as amgpu
  # the mock builds its GPU when test.mockgpu.mockgpu is imported (through tinygrad's hcq): patch before that
  assert "test.mockgpu.mockgpu" not in sys.modules, "mock GPU already built"

  hwip = {"GC": am.GC_HWIP, "SDMA0": am.SDMA0_HWIP, "MMHUB": am.MMHUB_HWIP, "NBIO": am.NBIO_HWIP, "MP0": am.MP0_HWIP,
          "MP1": am.MP1_HWIP, "HDP": am.HDP_HWIP, "OSSSYS": am.OSSSYS_HWIP}
  for k, v in NAVI31.items(): amgpu.IP_VERSIONS[hwip[k]] = v


  # emulator ISA for gfx1100
  orig_gpu_init = amgpu.MockAMGPU.__init__
  def gpu_init(self, *a, **k):
    orig_gpu_init(self, *a, **k)
    self.arch = "rdna3"
  amgpu.MockAMGPU.__init__ = gpu_init

  # NBIO 4.3.0 registers live in the nbio_* tables (the mock looks in nbif_*)
  def nbio_init(self, gpu, mmio):
    regs = amgpu._build_ip_regs("nbio", am.NBIO_HWIP)
    regs.update(amgpu._build_ip_regs("hdp", am.HDP_HWIP))
    amgpu.MockIPBlock.__init__(self, gpu, mmio, regs)
    self._remap_hdp, self._hdp_flush = self.reg("regBIF_BX0_REMAP_HDP_MEM_FLUSH_CNTL"), self.reg("regHDP_MEM_FLUSH_CNTL")
  amgpu.MockNBIO.__init__ = nbio_init

  # HDP flush remap: the mock reads 0, so flushes land on MM_INDEX; answer what Linux programs there instead
  orig_nbio_read = amgpu.MockNBIO.read
  def nbio_read(self, reg):
    return HDP_REMAP if reg == self._remap_hdp else orig_nbio_read(self, reg)
  amgpu.MockNBIO.read = nbio_read

  # MP1 mailbox addresses belong to the SMU block, not to the PSP block that claimed them first
  orig_mmio_init = amgpu.MockMMIOInterface.__init__
  def mmio_init(self, gpu):
    orig_mmio_init(self, gpu)
    smu = next(b for b in self.blocks if isinstance(b, amgpu.MockSMU))
    for name, a in smu._n2a.items():
      if "MP1_" in name: self._addr_block[a] = smu
  amgpu.MockMMIOInterface.__init__ = mmio_init

  # GC 11 page walk: a PDE with bit 54 set maps a huge page
  def walk(self, pt_paddr, level, va_acc, out, va_base):
    shift = 39 - 9 * level
    for i, pte in enumerate(struct.unpack_from("<512Q", self.gpu.vram, pt_paddr)):
      if not pte & 1: continue
      va, pa = va_acc | (i << shift), pte & 0x0000FFFFFFFFF000
      if level == 3 or pte & (1 << 54): out[va_base + va] = (pa, 1 << shift, bool(pte & 2))
      else: walk(self, pa, level + 1, va, out, va_base)
  amgpu.MockMMU._walk = walk

  # SMU: the firmware puts its answer into C2PMSG_82 (the mock echoes the parameter)
  orig_smu_write = amgpu.MockSMU.write
  def smu_write(self, reg, val):
    orig_smu_write(self, reg, val)
    if reg == self._c2pmsg_66:
      param = self.mmio.regs.get(self._c2pmsg_82, 0)
      if val == 0x1F:  # GetDpmFreqByIndex(clk << 16 | idx); idx 0xFF = level count
        levels = SMU_DPM_MHZ.get(param >> 16, [0])
        idx = param & 0xFFFF
        ans = len(levels) if idx == 0xFF else levels[min(idx, len(levels) - 1)]
      elif val == 0x2: ans = SMU_VERSION
      else: ans = 0
      self.mmio.regs[self._c2pmsg_82] = ans
  amgpu.MockSMU.write = smu_write

  # PSP: LOAD_TOC answers a TMR size (the mock leaves 0)
  orig_ring_submit = amgpu.MockPSP._ring_submit
  def ring_submit(self, new_wptr):
    old = self._ring_wptr
    orig_ring_submit(self, new_wptr)
    ring_mc = self.mmio.regs.get(self._c2pmsg_69, 0) | (self.mmio.regs.get(self._c2pmsg_70, 0) << 32)
    frame = ring_mc - self.gpu.mc_base + old * 4
    lo, hi = struct.unpack_from("<II", self.gpu.vram, frame)
    cmd = ((hi << 32) | lo) - self.gpu.mc_base
    if 0 <= cmd < len(self.gpu.vram) and struct.unpack_from("<I", self.gpu.vram, cmd + 8)[0] == 0x20:
      struct.pack_into("<I", self.gpu.vram, cmd + 880, PSP_TMR_SIZE)
  amgpu.MockPSP._ring_submit = ring_submit

  # --- recording hooks ---
  from tinygrad.runtime.support.am import amdev
  import test.mockgpu.usb as musb

  # firmware: the real blobs
  def fetch_fw(subdir, name, *_a, **_k):
    with open(os.path.join(fw_dir, name), "rb") as f: return f.read()
  amdev.fetch_fw = fetch_fw
  st = musb.MockASM24State
  orig_cfg_write = st._cfg_write
  def cfg_write(self, bus, dev, fn, byte_addr, val, size):
    if rec.active: rec.config.append([rec.phase, bus, dev, fn, byte_addr, val, size])
    return orig_cfg_write(self, bus, dev, fn, byte_addr, val, size)
  st._cfg_write = cfg_write

  orig_read, orig_write = st._pcie_read, st._pcie_write
  def pcie_read(self, address, size):
    data = orig_read(self, address, size)
    bar, off = self._find_bar(address, size)
    if bar == 0x24:
      for i in range(0, size, 4): rec.ev(["r", (off + i) // 4, int.from_bytes(data[i:i + 4], "little"), 1])
    elif bar == 0x10: rec.ev(["vr", off, size])
    else: rec.ev(["dr", off, size])
    return data
  def pcie_write(self, address, data):
    bar, off = self._find_bar(address, len(data))
    if bar == 0x24:
      for i in range(0, len(data), 4): rec.ev(["w", (off + i) // 4, int.from_bytes(bytes(data[i:i + 4]), "little")])
    elif bar == 0x10: rec.ev(["vw", off, len(data), bytearray(data)])
    else: rec.ev(["db", off, int.from_bytes(bytes(data), "little")])
    return orig_write(self, address, data)
  st._pcie_read, st._pcie_write = pcie_read, pcie_write

  u = musb.MockUSB3
  orig_cw, orig_cr, orig_bw, orig_br = u.control_write, u.control_read, u.bulk_write, u.bulk_read
  def cw(self, request, value=0, index=0, data=b"", timeout=1000):
    rec.count(f"ctrl_out_{request:02X}")
    if request == 0xF2 and not value & 0x8000: rec.ev(["sram", index & 0xFF, (value & 0x7FFF) * 512])
    return orig_cw(self, request, value, index, data, timeout)
  def cr(self, request, length, value=0, index=0, timeout=1000):
    rec.count(f"ctrl_in_{request:02X}")
    return orig_cr(self, request, length, value, index, timeout)
  def bw(self, data, timeout=1000):
    rec.count("bulk_out")
    return orig_bw(self, data, timeout)
  def br(self, length, timeout=1000):
    rec.count("bulk_in")
    return orig_br(self, length, timeout)
  u.control_write, u.control_read, u.bulk_write, u.bulk_read = cw, cr, bw, br

  # phases
  holder = {}
  orig_am_init, orig_am_fini = amdev.AMDev.__init__, amdev.AMDev.fini
  def am_init(self, *a, **k):
    holder["adev"] = self
    rec.phase = "boot"
    orig_am_init(self, *a, **k)
    rec.phase = "setup"
  def am_fini(self):
    rec.phase = "fini"
    orig_am_fini(self)
    rec.active = False
  amdev.AMDev.__init__, amdev.AMDev.fini = am_init, am_fini
  return holder


def register_names(adev) -> dict[int, str]:
  """dword index -> 'BLOCK:name' from tinygrad's register tables at the discovered bases (MP1 mailbox names first)."""
  from tinygrad.runtime.autogen.am import am
  from tinygrad.runtime.support.amd import import_asic_regs, AMDReg
  import functools
  names: dict[int, str] = dict(FIXED_NAMES)
  mods = [("MP1", "mp", (11, 0, 0), am.MP1_HWIP)] + [
    (blk, pre, adev.ip_ver[h], h) for blk, pre, h in [("MP0", "mp", am.MP0_HWIP), ("HDP", "hdp", am.HDP_HWIP), ("GC", "gc", am.GC_HWIP),
                                                     ("MMHUB", "mmhub", am.MMHUB_HWIP), ("OSSSYS", "osssys", am.OSSSYS_HWIP),
                                                     ("NBIO", "nbio", am.NBIO_HWIP)]]
  for blk, prefix, ver, h in mods:
    regs = import_asic_regs(prefix, ver, cls=functools.partial(AMDReg, bases=adev.regs_offset[h]))
    for name in sorted(regs):
      if blk == "MP1" and "MP1_" not in name: continue  # the MP 11.0.0 table also names MP0 registers
      for a in regs[name].addr.values(): names.setdefault(a, f"{blk}:{name}")
  return names


def main():
  ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  ap.add_argument("--tinygrad-src", required=True, help="tinygrad checkout holding test/mockgpu (snapshot a9069c17)")
  ap.add_argument("--firmware", required=True, help="directory with the amdgpu blobs (target/amdgpu-firmware)")
  ap.add_argument("out")
  args = ap.parse_args()
  src = os.path.abspath(args.tinygrad_src)
  fw_dir = os.path.abspath(args.firmware)
  out = os.path.abspath(args.out)
  os.environ.update({"DEV": "MOCKUSB+AMD", "GMMU": "0", "AM_RESET": "1"})
  sys.path.insert(0, src)
  os.chdir(src)
  for m in [m for m in sys.modules if m == "test" or m.startswith("test.")]: del sys.modules[m]

  rec = Recorder()
  holder = install(rec, fw_dir)
  from tinygrad import Tensor, Device
  dev = Device["AMD"]
  rec.phase = "run"
  result = (Tensor([1, 2, 3, 4]) + 1).numpy().tolist()
  assert result == [2, 3, 4, 5], result
  rec.phase = "fini"
  dev.finalize()
  adev = holder["adev"]
  names = register_names(adev)
  from tinygrad.runtime.autogen.am import am
  import test.mockgpu.usb as musb
  vram = musb._mock_usb_state.gpu.vram
  table = bytes(vram[adev.vram_size - (64 << 10):adev.vram_size - (54 << 10)]).rstrip(b"\0")
  discovery = {"table_hex": table.hex(),
               "decoded_by_tinygrad": [{"hw_id": am.hw_id_map[h], "version": list(adev.ip_ver[h]),
                                        "instances": {str(i): list(b) for i, b in sorted(adev.regs_offset[h].items())}}
                                       for h in sorted(adev.ip_ver) if h in am.hw_id_map],
               "gc_info_by_tinygrad": {"version": [adev.gc_info.header.version_major, adev.gc_info.header.version_minor],
                                       **{f: getattr(adev.gc_info, f) for f in ("gc_num_se", "gc_num_cu_per_sh", "gc_num_sh_per_se",
                                          "gc_num_rb_per_se", "gc_wave_size", "gc_max_waves_per_simd",
                                          "gc_max_scratch_slots_per_cu", "gc_lds_size")}}}
  phases = rec.finish()
  used = sorted({e[1] for evs in phases.values() for e in evs if e[0] in ("r", "w")})
  doc = {
    "recorded_with": "tinygrad 0.14.0 AM driver over test/mockgpu (snapshot a9069c17), usbgpu/amd/golden/capture.py",
    "env": {"DEV": "MOCKUSB+AMD", "GMMU": "0", "AM_RESET": "1"},
    "program": "(Tensor([1,2,3,4]) + 1).numpy() == [2, 3, 4, 5]",
    "ip_versions": {k: list(v) for k, v in NAVI31.items()},
    "frozen_answers": {"smu_dpm_mhz": {str(k): v for k, v in SMU_DPM_MHZ.items()}, "smu_version": SMU_VERSION,
                       "psp_tmr_size": PSP_TMR_SIZE, "hdp_remap": HDP_REMAP},
    "vram_size": adev.vram_size,
    "discovery": discovery,
    "names": {str(a): names.get(a, "?") for a in used},
    "config_writes": rec.config,
    "usb_counts": rec.usb,
    "phases": phases,
  }
  with open(out, "w") as f:
    f.write("{\n")
    keys = list(doc)
    for i, k in enumerate(keys):
      sep = "," if i + 1 < len(keys) else ""
      if k == "phases":
        f.write(f' "phases": {{\n')
        ph = list(doc[k])
        for j, p in enumerate(ph):
          f.write(f'  {json.dumps(p)}: [\n' + ",\n".join("   " + json.dumps(e) for e in doc[k][p]) + ("\n  ]" + ("," if j + 1 < len(ph) else "") + "\n"))
        f.write(" }" + sep + "\n")
      else: f.write(f" {json.dumps(k)}: {json.dumps(doc[k])}{sep}\n")
    f.write("}\n")
  n = {p: len(e) for p, e in phases.items()}
  print(f"wrote {out}: events per phase {n}", file=sys.stderr)


if __name__ == "__main__":
  main()
