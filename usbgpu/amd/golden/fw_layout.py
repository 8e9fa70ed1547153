#!/usr/bin/env python3
"""Record how tinygrad 0.14's own AM driver reads the Navi31 firmware blobs, as golden data for modelrt's parsers.

tinygrad's AMFirmware (tinygrad/runtime/support/am/amdev.py) is run over the blobs that `cargo xtask firmware` unpacked
into target/amdgpu-firmware/, with its download hook pointed at that directory and a stand-in device that only carries
the Navi31 IP versions (GC 11.0.0, MP0/MP1 13.0.0, SDMA 6.0.0). What it extracts — each PSP sOS component, each region
it would hand to PSP with its GFX_FW_TYPE ids, the RS64 start addresses — is recorded as (file, offset, size), next to
every blob's common header decoded with tinygrad's ctypes structs (autogen/am/am.py, generated from Linux's
amdgpu_ucode.h) and each file's sha256 so a test can tell when the blobs changed.

Usage: python fw_layout.py FIRMWARE_DIR OUT.json
"""
import ctypes, hashlib, json, os, sys

def main(fw_dir: str, out: str) -> None:
  from tinygrad.helpers import mv_address
  from tinygrad.runtime.autogen.am import am
  from tinygrad.runtime.support.am import amdev

  blobs: dict[str, bytes] = {}
  current: list[str] = []
  def fake_fetch(subdir, name, *_a, **_k):
    assert subdir == "amdgpu", subdir
    data = open(os.path.join(fw_dir, name), "rb").read()
    blobs[name] = data
    return data
  amdev.fetch_fw = fake_fetch

  regions, bases = [], {}
  orig_load = amdev.AMFirmware.load_fw
  def load_fw(self, fname, *headers, **kw):
    ret = orig_load(self, fname, *headers, **kw)
    current[:] = [fname]
    bases[fname] = mv_address(ret[0])
    return ret
  def desc(self, blob, offset, size, *types):
    regions.append({"file": current[0], "offset": offset, "size": size, "types": [am.enum_psp_gfx_fw_type[t] for t in types]})
    return (list(types), blob[offset:offset + size])
  amdev.AMFirmware.load_fw, amdev.AMFirmware.desc = load_fw, desc

  class Dev: pass
  dev = Dev()
  dev.ip_ver = {am.GC_HWIP: (11, 0, 0), am.MP0_HWIP: (13, 0, 0), am.MP1_HWIP: (13, 0, 0), am.SDMA0_HWIP: (6, 0, 0)}
  dev.devfmt = "navi31"
  fw = amdev.AMFirmware(dev)

  sos_name = "psp_13_0_0_sos.bin"
  sos = [{"type": am.enum_psp_fw_type.get(t, t), "type_id": t, "offset": mv_address(mv) - bases[sos_name], "size": len(mv)}
         for t, mv in fw.sos_fw.items()]
  headers = {}
  for name in sorted(os.listdir(fw_dir)):
    if not name.endswith(".bin"): continue
    data = open(os.path.join(fw_dir, name), "rb").read()
    h = am.struct_common_firmware_header.from_buffer_copy(data[:ctypes.sizeof(am.struct_common_firmware_header)])
    headers[name] = {"sha256": hashlib.sha256(data).hexdigest(), "file_size": len(data),
                     **{f: getattr(h, f) for f in ("size_bytes", "header_size_bytes", "header_version_major", "header_version_minor",
                                                   "ip_version_major", "ip_version_minor", "ucode_version", "ucode_size_bytes",
                                                   "ucode_array_offset_bytes", "crc32")}}
  doc = {"recorded_with": "tinygrad 0.14.0 AMFirmware (usbgpu/amd/golden/fw_layout.py)", "headers": headers,
         "sos_components": sos, "regions": regions,
         "ucode_start": {k: v for k, v in fw.ucode_start.items()}}
  with open(out, "w") as f: json.dump(doc, f, indent=1, sort_keys=True); f.write("\n")

if __name__ == "__main__":
  if len(sys.argv) != 3: sys.exit(__doc__)
  main(sys.argv[1], sys.argv[2])
