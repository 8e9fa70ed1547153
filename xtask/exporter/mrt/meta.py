"""Per-target kernel metadata: CPU thread count, decoded IR3 fields (docs/hw/adreno-kgsl-pm4.md §9.2), AMD descriptor fields
(docs/hw/tinygrad-export.md §8). Each `kernel_meta(prg, elf)` returns (binary, source bytes|None, meta dict, extra blobs).
"""

import ctypes
import struct

from tinygrad.helpers import round_up

from mrt.targets import ExportError

IR3_VARIANT_SIZE, IR3_CONST_STATE_SIZE = 2040, 1424


def _source_bytes(prg) -> bytes | None:
  src = prg.src[2].arg
  if src is None:
    return None
  return src.encode() if isinstance(src, str) else bytes(src)


def _cpu_meta(prg, elf):
  info = prg.arg
  threads = int(info.global_size[0]) if "core_id" in info.runtimevars else 1
  return bytes(elf.lib), _source_bytes(prg), {"cpu": {"threads": threads}}, {}


def _check_mesa_layout():
  from tinygrad.runtime.autogen import mesa

  v, cs = ctypes.sizeof(mesa.struct_ir3_shader_variant), ctypes.sizeof(mesa.struct_ir3_const_state)
  if (v, cs) != (IR3_VARIANT_SIZE, IR3_CONST_STATE_SIZE):
    raise ExportError(
      f"tinymesa struct sizes ir3_shader_variant={v}, ir3_const_state={cs}; expected {IR3_VARIANT_SIZE}/{IR3_CONST_STATE_SIZE} (tinymesa 25.2.7.2)"
    )


def _ir3_meta(prg, elf):
  from tinygrad.runtime.autogen import mesa
  from tinygrad.runtime.support.compiler_mesa import IR3Compiler

  v, cs, imm, isa = IR3Compiler.unpack_lib(bytes(elf.lib))
  if len(isa) != v.info.size:
    raise ExportError(f"IR3 kernel {prg.arg.function_name}: ISA {len(isa)} B != info.size {v.info.size}")
  alloc = cs.allocs.consts[mesa.IR3_CONST_ALLOC_DRIVER_PARAMS]
  nt = int(v.image_mapping.num_tex)
  meta = {
    "image_size": int(v.info.size),
    "fregs": int(v.info.max_reg) + 1,
    "hregs": max(int(v.info.max_half_reg) + 1, 0),
    "branchstack": int(v.branchstack),
    "pvtmem": int(v.pvtmem_size),
    "shmem": int(v.shared_size),
    "wgid": int(v.cs.work_group_id),
    "lid": int(v.cs.local_invocation_id),
    "wgsz": int(alloc.offset_vec4) * 4 + 8 if alloc.size_vec4 else 0xFC,
    "buf_off": int(cs.ubo_state.range[0].offset),
    "imm_off": int(cs.allocs.max_const_offset_vec4) * 16,
    "immediates": "blobs/k{kid}.imm",
    "tex_cnt": nt,
    "ibo_cnt": int(v.num_uavs) - nt,
    "tex_to_image": [int(x) for x in list(v.image_mapping.tex_to_image)[:nt]],
  }
  return bytes(isa), _source_bytes(prg), {"ir3": meta}, {"blobs/k{kid}.imm": bytes(imm)}


# ---- AMD: ELF section walk, descriptor, msgpack metadata note ----


def _msgpack(data: bytes, pos: int = 0):
  """Minimal msgpack decoder (maps, arrays, strings, ints, bools, nil, floats) for the AMDGPU metadata note."""
  b = data[pos]

  def rd(fmt, n):
    return struct.unpack_from(fmt, data, pos + 1)[0], pos + 1 + n

  if b <= 0x7F:
    return b, pos + 1
  if b >= 0xE0:
    return b - 0x100, pos + 1
  if 0x80 <= b <= 0x8F:
    return _map(data, pos + 1, b & 0x0F)
  if 0x90 <= b <= 0x9F:
    return _arr(data, pos + 1, b & 0x0F)
  if 0xA0 <= b <= 0xBF:
    n = b & 0x1F
    return data[pos + 1 : pos + 1 + n].decode(), pos + 1 + n
  if b == 0xC0:
    return None, pos + 1
  if b in (0xC2, 0xC3):
    return b == 0xC3, pos + 1
  simple = {
    0xCC: (">B", 1),
    0xCD: (">H", 2),
    0xCE: (">I", 4),
    0xCF: (">Q", 8),
    0xD0: (">b", 1),
    0xD1: (">h", 2),
    0xD2: (">i", 4),
    0xD3: (">q", 8),
    0xCA: (">f", 4),
    0xCB: (">d", 8),
  }
  if b in simple:
    return rd(*simple[b])
  if b in (0xD9, 0xDA, 0xDB):
    n, p = rd(*{0xD9: (">B", 1), 0xDA: (">H", 2), 0xDB: (">I", 4)}[b])
    return data[p : p + n].decode(), p + n
  if b in (0xC4, 0xC5, 0xC6):
    n, p = rd(*{0xC4: (">B", 1), 0xC5: (">H", 2), 0xC6: (">I", 4)}[b])
    return data[p : p + n], p + n
  if b in (0xDC, 0xDD):
    n, p = rd(*{0xDC: (">H", 2), 0xDD: (">I", 4)}[b])
    return _arr(data, p, n)
  if b in (0xDE, 0xDF):
    n, p = rd(*{0xDE: (">H", 2), 0xDF: (">I", 4)}[b])
    return _map(data, p, n)
  raise ExportError(f"unsupported msgpack byte 0x{b:02x} in AMDGPU metadata")


def _arr(data, pos, n):
  out = []
  for _ in range(n):
    v, pos = _msgpack(data, pos)
    out.append(v)
  return out, pos


def _map(data, pos, n):
  out = {}
  for _ in range(n):
    k, pos = _msgpack(data, pos)
    v, pos = _msgpack(data, pos)
    out[k] = v
  return out, pos


def _amd_note(lib: bytes) -> dict:
  (shoff,) = struct.unpack_from("<Q", lib, 0x28)
  shentsize, shnum = struct.unpack_from("<HH", lib, 0x3A)
  for i in range(shnum):
    _, sh_type, _, _, off, size = struct.unpack_from("<IIQQQQ", lib, shoff + i * shentsize)
    if sh_type != 7:
      continue  # SHT_NOTE
    p = off
    while p + 12 <= off + size:
      namesz, descsz, ntype = struct.unpack_from("<III", lib, p)
      name = lib[p + 12 : p + 12 + namesz].rstrip(b"\0")
      d = p + 12 + round_up(namesz, 4)
      if name == b"AMDGPU" and ntype == 32:
        return _msgpack(lib[d : d + descsz])[0]  # NT_AMDGPU_METADATA
      p = d + round_up(descsz, 4)
  raise ExportError("AMDGPU metadata note not found in kernel ELF")


def _amd_meta(prg, elf):
  from tinygrad.runtime.support.elf import elf_loader

  lib = bytes(elf.lib)
  image, sections, relocs = elf_loader(lib)
  rodata = next((sh.header.sh_addr for sh in sections if sh.name == ".rodata"), None)
  if rodata is None:
    raise ExportError(f"AMD kernel {prg.arg.function_name}: no .rodata (kernel descriptor)")
  image = bytearray(image)
  for off, sym, typ, addend in relocs:
    if typ != 5:
      raise ExportError(f"AMD kernel {prg.arg.function_name}: unknown relocation type {typ}")
    struct.pack_into("<q", image, off, sym - off + addend)  # R_AMDGPU_REL64 = S + A - P (image-relative)
  (gseg, pseg, kargs), entry = struct.unpack_from("<III", image, rodata), struct.unpack_from("<q", image, rodata + 16)[0]
  rsrc3, rsrc1, rsrc2 = struct.unpack_from("<III", image, rodata + 44)
  (props,) = struct.unpack_from("<H", image, rodata + 56)
  md = _amd_note(lib)
  kern = next((k for k in md.get("amdhsa.kernels", []) if k.get(".name") == prg.arg.function_name), None)
  if kern is None:
    raise ExportError(f"AMD kernel {prg.arg.function_name}: not in metadata note")
  meta = {
    "descriptor_offset": int(rodata),
    "entry_offset": int(rodata + entry),
    "group_segment_fixed_size": gseg,
    "private_segment_fixed_size": pseg,
    "kernarg_size": kargs,
    "compute_pgm_rsrc1": rsrc1,
    "compute_pgm_rsrc2": rsrc2,
    "compute_pgm_rsrc3": rsrc3,
    "kernel_code_properties": props,
    "wavefront_size": int(kern[".wavefront_size"]),
    "sgpr_count": int(kern[".sgpr_count"]),
    "vgpr_count": int(kern[".vgpr_count"]),
  }
  return lib, _source_bytes(prg), {"amd": meta}, {}


def kernel_meta_for(cfg, renderer: str):
  kind = cfg.target["kind"]
  if kind == "cpu":
    if renderer != "ClangRenderer":
      raise ExportError(f"CPU export expects ClangRenderer, got {renderer}")
    return _cpu_meta
  if kind == "adreno":
    if renderer != "IR3Renderer":
      raise ExportError(f"adreno export expects IR3Renderer, got {renderer}")
    _check_mesa_layout()
    return _ir3_meta
  if kind == "hexagon":
    if renderer != "MockDSPRenderer":
      raise ExportError(f"hexagon export expects MockDSPRenderer, got {renderer}")
    from mrt.dsp import hexagon_meta

    return hexagon_meta
  if renderer != "AMDLLVMRenderer":
    raise ExportError(f"AMD export expects AMDLLVMRenderer, got {renderer}")
  return _amd_meta
