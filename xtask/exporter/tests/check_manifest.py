#!/usr/bin/env python3
"""Test-only independent replayer for cpu-x86_64 manifests (does NOT import tinygrad).

Loads every kernel ELF object itself (docs/hw/tinygrad-export.md §6.3: SHF_ALLOC sections laid out with their alignment in
a page-aligned mapping, RELA applied as S + A - P, entry looked up by symbol name, pages RW then RX, undefined symbols and
unknown relocations rejected), runs the manifest's init ops once and then the run ops per inference on numpy buffers, and
compares the outputs with the embedded onnxruntime reference (and, with --onnx, with onnxruntime on fresh inputs).

  check_manifest.py DIR [--onnx MODEL.onnx --trials N] [--runs N]
Exit code 0 when every comparison is within the manifest's tolerance, 1 otherwise.
"""

import argparse
import ctypes
import json
import mmap
import os
import struct
import sys

import numpy as np

SHT_PROGBITS, SHT_SYMTAB, SHT_RELA, SHT_NOBITS, SHT_REL = 1, 2, 4, 8, 9
SHF_ALLOC = 0x2
R_X86_64_64, R_X86_64_PC32, R_X86_64_PLT32, R_X86_64_32, R_X86_64_32S, R_X86_64_PC64 = 1, 2, 4, 10, 11, 24
PROT_READ, PROT_EXEC = 1, 4

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]


class LoadError(Exception):
  pass


class ElfKernel:
  """One relocated ET_REL x86-64 object in executable memory."""

  def __init__(self, blob: bytes, entry: str):
    if blob[:4] != b"\x7fELF" or blob[4] != 2 or blob[5] != 1:
      raise LoadError("not an ELF64 little-endian object")
    e_type, e_machine = struct.unpack_from("<HH", blob, 16)
    if e_type != 1 or e_machine != 62:
      raise LoadError(f"expected ET_REL x86-64, got type {e_type} machine {e_machine}")
    (shoff,) = struct.unpack_from("<Q", blob, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", blob, 0x3A)
    secs = [struct.unpack_from("<IIQQQQIIQQ", blob, shoff + i * shentsize) for i in range(shnum)]

    def sname(off, tab):
      return blob[tab + off : blob.index(b"\0", tab + off)].decode()

    shstr = secs[shstrndx][4]
    names = [sname(s[0], shstr) for s in secs]
    # lay out allocated sections
    addr, size = {}, 0
    for i, (_, typ, flags, _, _off, sz, _, _, align, _) in enumerate(secs):
      if flags & SHF_ALLOC and typ in (SHT_PROGBITS, SHT_NOBITS) and sz:
        size = (size + max(align, 1) - 1) // max(align, 1) * max(align, 1)
        addr[i] = size
        size += sz
    self.size = max((size + 4095) // 4096 * 4096, 4096)
    self.mem = mmap.mmap(-1, self.size, prot=mmap.PROT_READ | mmap.PROT_WRITE)
    self.base = ctypes.addressof(ctypes.c_char.from_buffer(self.mem))
    img = bytearray(self.size)
    for i, a in addr.items():
      if secs[i][1] == SHT_PROGBITS:
        img[a : a + secs[i][5]] = blob[secs[i][4] : secs[i][4] + secs[i][5]]
    symtab_i = next(i for i, s in enumerate(secs) if s[1] == SHT_SYMTAB)
    st = secs[symtab_i]
    strtab = secs[st[6]][4]
    syms = []
    for j in range(st[5] // 24):
      st_name, st_info, _, st_shndx, st_value, _ = struct.unpack_from("<IBBHQQ", blob, st[4] + j * 24)
      syms.append((sname(st_name, strtab), st_info, st_shndx, st_value))

    def sym_addr(k):
      n, _, shndx, val = syms[k]
      if shndx == 0:
        raise LoadError(f"undefined symbol {n!r}")
      if shndx >= 0xFF00:
        raise LoadError(f"unsupported special section index for {n!r}")
      if shndx not in addr:
        raise LoadError(f"symbol {n!r} in non-allocated section {names[shndx]}")
      return self.base + addr[shndx] + val

    for i, (_, typ, _, _, off, sz, _, info, _, _entsize) in enumerate(secs):
      if typ == SHT_REL:
        raise LoadError("SHT_REL relocations are not supported")
      if typ != SHT_RELA or info not in addr:
        continue
      if names[i] == ".rela.eh_frame":
        continue
      for r in range(sz // 24):
        r_off, r_info, r_add = struct.unpack_from("<QQq", blob, off + r * 24)
        rtyp, rsym = r_info & 0xFFFFFFFF, r_info >> 32
        p = self.base + addr[info] + r_off
        s = sym_addr(rsym)
        loc = addr[info] + r_off
        if rtyp in (R_X86_64_PC32, R_X86_64_PLT32):
          v = s + r_add - p
          if not -(2**31) <= v < 2**31:
            raise LoadError("PC32 relocation out of range")
          struct.pack_into("<i", img, loc, v)
        elif rtyp == R_X86_64_PC64:
          struct.pack_into("<q", img, loc, s + r_add - p)
        elif rtyp == R_X86_64_64:
          struct.pack_into("<Q", img, loc, (s + r_add) & (2**64 - 1))
        else:
          raise LoadError(f"unknown relocation type {rtyp}")
    fn = [s for s in syms if s[0] == entry and s[2] != 0]
    if len(fn) != 1:
      raise LoadError(f"entry symbol {entry!r} not found")
    self.mem[:] = bytes(img)
    if _libc.mprotect(self.base, self.size, PROT_READ | PROT_EXEC) != 0:
      raise LoadError("mprotect RX failed")
    self.fn = ctypes.CFUNCTYPE(None)(sym_addr(syms.index(fn[0])))

  def __call__(self, *args: int):
    self.fn(*[ctypes.c_uint64(a & (2**64 - 1)) for a in args])


class Replayer:
  def __init__(self, d: str):
    self.dir = d
    with open(os.path.join(d, "manifest.json")) as f:
      self.m = json.load(f)
    m = self.m
    if m["format"] != 1:
      raise LoadError(f"unsupported manifest format {m['format']}")
    if m["target"] != {"kind": "cpu", "arch": "x86_64", "baseline": m["target"].get("baseline")}:
      raise LoadError(f"checker only runs cpu x86_64 manifests, got {m['target']}")
    self.bufs = []
    for b in m["buffers"]:
      raw = np.zeros(b["size"] + 4096, dtype=np.uint8)
      pad = (-raw.ctypes.data) % 4096
      arr = raw[pad : pad + b["size"]]
      if b["blob"] is not None:
        data = self.blob(b["blob"])
        if len(data) != b["size"]:
          raise LoadError(f"buffer {b['id']} blob has {len(data)} bytes, want {b['size']}")
        arr[:] = np.frombuffer(data, dtype=np.uint8)
      self.bufs.append((raw, arr))
    self.kernels = [ElfKernel(self.blob(k["binary"]), k["entry"]) for k in m["kernels"]]
    self.inited = False

  def blob(self, p: str) -> bytes:
    with open(os.path.join(self.dir, p), "rb") as f:
      return f.read()

  def addr(self, bid: int, off: int) -> int:
    return self.bufs[bid][1].ctypes.data + off

  def _run_phase(self, phase: str):
    for op in self.m["ops"]:
      if op["phase"] != phase:
        continue
      if op["op"] == "copy":
        d, s = op["dst"], op["src"]
        ctypes.memmove(self.addr(d["buffer"], d["offset"]), self.addr(s["buffer"], s["offset"]), op["size"])
        continue
      k = self.m["kernels"][op["kernel"]]
      args, core_pos = [], None
      for p, a in zip(k["params"], op["args"]):
        if p["kind"] in ("buffer", "image"):
          args.append(self.addr(a["buffer"], a["offset"]))
        else:
          if p["kind"] == "core_id":
            core_pos = len(args)
          args.append(a["int"])
      n = op["global"][0] if core_pos is not None else 1
      for tid in range(n):
        if core_pos is not None:
          args[core_pos] = tid
        self.kernels[op["kernel"]](*args)

  def run(self, feeds: dict) -> dict:
    if not self.inited:
      self._run_phase("init")
      self.inited = True
    for i in self.m["inputs"]:
      a = np.ascontiguousarray(feeds[i["name"]], dtype=np.dtype(i["dtype"])).reshape(i["shape"])
      self.bufs[i["buffer"]][1][i["offset"] : i["offset"] + a.nbytes] = a.reshape(-1).view(np.uint8)
    self._run_phase("run")
    out = {}
    for o in self.m["outputs"]:
      dt = np.dtype(o["dtype"])
      n = int(np.prod(o["shape"])) * dt.itemsize
      out[o["name"]] = self.bufs[o["buffer"]][1][o["offset"] : o["offset"] + n].view(dt).reshape(o["shape"]).copy()
    return out


def compare(got: dict, want: dict, atol: float, rtol: float, label: str) -> bool:
  ok = True
  for n, w in want.items():
    g = got[n].astype(np.float64)
    w = np.asarray(w).astype(np.float64).reshape(g.shape)
    err = float(np.max(np.abs(g - w))) if g.size else 0.0
    good = bool(np.allclose(g, w, atol=atol, rtol=rtol))
    print(f"{label}: output '{n}' max abs err {err:.3g} {'OK' if good else 'FAIL'} (atol {atol}, rtol {rtol})")
    ok &= good
  return ok


def main() -> int:
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  ap.add_argument("dir")
  ap.add_argument("--onnx", help="also compare with onnxruntime on fresh random inputs")
  ap.add_argument("--trials", type=int, default=2)
  ap.add_argument("--runs", type=int, default=2, help="repeat the reference inference N times on the same memory")
  a = ap.parse_args()
  try:
    r = Replayer(a.dir)
  except LoadError as e:
    print(f"error: {e}", file=sys.stderr)
    return 1
  ok = True
  ref = r.m["reference"]
  atol, rtol = (ref["atol"], ref["rtol"]) if ref else (1e-4, 1e-4)
  if ref:
    feeds = {i["name"]: np.frombuffer(r.blob(ref["inputs"][i["name"]]), dtype=i["dtype"]).reshape(i["shape"]) for i in r.m["inputs"]}
    want = {o["name"]: np.frombuffer(r.blob(ref["outputs"][o["name"]]), dtype=o["dtype"]).reshape(o["shape"]) for o in r.m["outputs"]}
    for k in range(a.runs):
      ok &= compare(r.run(feeds), want, atol, rtol, f"reference run {k}")
  elif not a.onnx:
    print("error: manifest has no reference and no --onnx given", file=sys.stderr)
    return 1
  if a.onnx:
    import onnxruntime as ort

    sess = ort.InferenceSession(a.onnx, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(12345)
    for t in range(a.trials):
      feeds = {}
      for i in r.m["inputs"]:
        dt = np.dtype(i["dtype"])
        feeds[i["name"]] = rng.standard_normal(i["shape"]).astype(dt) if dt.kind == "f" else rng.integers(0, 2, i["shape"]).astype(dt)
      ort_types = {x.name: x.type for x in sess.get_inputs()}
      ort_feeds = {n: v.astype(np.float16) if ort_types[n] == "tensor(float16)" else v for n, v in feeds.items()}
      names = [o["name"] for o in r.m["outputs"]]
      ort_names = [o.name for o in sess.get_outputs()]
      # pickles (compile3) return only the first ONNX output, named output0 here: match by position then
      want = dict(zip(names, sess.run(names if set(names) <= set(ort_names) else ort_names[: len(names)], ort_feeds)))
      ok &= compare(r.run(feeds), want, atol, rtol, f"fresh trial {t}")
  print("PASS" if ok else "FAIL")
  return 0 if ok else 1


if __name__ == "__main__":
  sys.exit(main())
