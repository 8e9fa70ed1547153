#!/usr/bin/env python3
"""Test-only numerical check of a cpu-aarch64 manifest on an x86 host, without tinygrad: lays out and relocates every
kernel ELF (EM_AARCH64, ET_REL) at a fixed address here, places the buffers (weights + reference inputs) at fixed
addresses, and lets replay_aarch64.c (cross-compiled, run under qemu-aarch64) execute the init and run ops once.
The outputs are compared with the manifest's onnxruntime reference (export with --reference).

  check_manifest_aarch64.py DIR      (needs aarch64-linux-gnu-gcc and qemu-aarch64; exit 0 = PASS)
"""

import json
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SHT_PROGBITS, SHT_SYMTAB, SHT_RELA, SHT_NOBITS, SHT_REL = 1, 2, 4, 8, 9
SHF_ALLOC = 0x2
BUF_BASE, CODE_BASE, PAGE = 0x1000_0000, 0x4000_0000, 0x1000
LDST_SHIFT = {278: 0, 284: 1, 285: 2, 286: 3, 299: 4}  # R_AARCH64_LDST{8,16,32,64,128}_ABS_LO12_NC


class LoadError(Exception):
  pass


def page_up(n: int) -> int:
  return (n + PAGE - 1) // PAGE * PAGE


def link_aarch64(blob: bytes, entry: str, base: int) -> tuple[bytes, int]:
  """Relocate an aarch64 ET_REL object to run at `base`; returns (image, entry address)."""
  if blob[:4] != b"\x7fELF" or struct.unpack_from("<HH", blob, 16) != (1, 183):
    raise LoadError("not an aarch64 ET_REL object")
  (shoff,) = struct.unpack_from("<Q", blob, 0x28)
  shentsize, shnum, shstrndx = struct.unpack_from("<HHH", blob, 0x3A)
  secs = [struct.unpack_from("<IIQQQQIIQQ", blob, shoff + i * shentsize) for i in range(shnum)]

  def cstr(off):
    return blob[off : blob.index(b"\0", off)].decode()

  names = [cstr(secs[shstrndx][4] + s[0]) for s in secs]
  addr, size = {}, 0
  for i, s in enumerate(secs):
    if s[2] & SHF_ALLOC and s[1] in (SHT_PROGBITS, SHT_NOBITS) and s[5]:
      al = max(s[8], 1)
      size = (size + al - 1) // al * al
      addr[i] = size
      size += s[5]
  img = bytearray(page_up(max(size, 1)))
  for i, a in addr.items():
    if secs[i][1] == SHT_PROGBITS:
      img[a : a + secs[i][5]] = blob[secs[i][4] : secs[i][4] + secs[i][5]]
  st = next(s for s in secs if s[1] == SHT_SYMTAB)
  syms = []
  for j in range(st[5] // 24):
    n, info, _, shndx, val, _ = struct.unpack_from("<IBBHQQ", blob, st[4] + j * 24)
    syms.append((cstr(secs[st[6]][4] + n), shndx, val))

  def sym(k):
    n, shndx, val = syms[k]
    if shndx == 0 or shndx >= 0xFF00 or shndx not in addr:
      raise LoadError(f"unresolvable symbol {n!r}")
    return base + addr[shndx] + val

  for i, s in enumerate(secs):
    if s[1] == SHT_REL:
      raise LoadError("SHT_REL relocations are not supported")
    if s[1] != SHT_RELA or s[7] not in addr or names[i] == ".rela.eh_frame":
      continue
    for r in range(s[5] // 24):
      off, info, add = struct.unpack_from("<QQq", blob, s[4] + r * 24)
      typ, loc = info & 0xFFFFFFFF, addr[s[7]] + off
      p, v = base + loc, sym(info >> 32) + add
      (ins,) = struct.unpack_from("<I", img, loc)
      if typ == 257:
        struct.pack_into("<Q", img, loc, v)  # ABS64
      elif typ == 261:
        struct.pack_into("<i", img, loc, v - p)  # PREL32
      elif typ == 275:  # ADR_PREL_PG_HI21
        imm = ((v & ~0xFFF) - (p & ~0xFFF)) >> 12
        ins = (ins & ~((3 << 29) | (0x7FFFF << 5))) | ((imm & 3) << 29) | (((imm >> 2) & 0x7FFFF) << 5)
        struct.pack_into("<I", img, loc, ins)
      elif typ == 277:
        struct.pack_into("<I", img, loc, (ins & ~(0xFFF << 10)) | ((v & 0xFFF) << 10))  # ADD_ABS_LO12_NC
      elif typ in LDST_SHIFT:
        struct.pack_into("<I", img, loc, (ins & ~(0xFFF << 10)) | (((v & 0xFFF) >> LDST_SHIFT[typ]) << 10))
      elif typ in (282, 283):  # JUMP26 / CALL26 within the image
        d = (v - p) >> 2
        if not -(1 << 25) <= d < (1 << 25):
          raise LoadError("CALL26 out of range")
        struct.pack_into("<I", img, loc, (ins & 0xFC000000) | (d & 0x3FFFFFF))
      else:
        raise LoadError(f"unknown aarch64 relocation type {typ}")
  fn = [k for k, s in enumerate(syms) if s[0] == entry and s[1] != 0]
  if len(fn) != 1:
    raise LoadError(f"entry {entry!r} not found")
  return bytes(img), sym(fn[0])


def build_plan(d: str) -> tuple[bytes, list, dict]:
  with open(os.path.join(d, "manifest.json")) as f:
    m = json.load(f)
  if m["target"].get("arch") != "aarch64":
    raise LoadError(f"not a cpu-aarch64 manifest: {m['target']}")
  if m["reference"] is None:
    raise LoadError("manifest has no reference (export with --reference)")

  def blob(p):
    with open(os.path.join(d, p), "rb") as f:
      return f.read()

  buf_addr, regions, a = [], [], BUF_BASE
  init = {b["id"]: bytearray(blob(b["blob"])) if b["blob"] else bytearray(b["size"]) for b in m["buffers"]}
  for i in m["inputs"]:
    data = blob(m["reference"]["inputs"][i["name"]])
    init[i["buffer"]][i["offset"] : i["offset"] + len(data)] = data
  for b in m["buffers"]:
    buf_addr.append(a)
    regions.append((a, page_up(max(b["size"], 1)), 0, bytes(init[b["id"]])))
    a += page_up(max(b["size"], 1)) + PAGE
  kaddr, a = [], CODE_BASE
  for k in m["kernels"]:
    img, entry = link_aarch64(blob(k["binary"]), k["entry"], a)
    regions.append((a, len(img), 1, img))
    kaddr.append(entry)
    a += len(img) + PAGE
  out = bytearray(b"MRTPLAN1")

  def put(*vals):
    out.extend(struct.pack(f"<{len(vals)}Q", *[v & (2**64 - 1) for v in vals]))

  put(len(regions))
  for addr, size, ex, data in regions:
    put(addr, size, ex, len(data))
    out.extend(data + b"\0" * (-len(data) % 8))
  ops = [o for o in m["ops"] if o["phase"] == "init"] + [o for o in m["ops"] if o["phase"] == "run"]
  put(len(ops))
  for o in ops:
    if o["op"] == "copy":
      put(1, buf_addr[o["dst"]["buffer"]] + o["dst"]["offset"], buf_addr[o["src"]["buffer"]] + o["src"]["offset"], o["size"])
      continue
    k = m["kernels"][o["kernel"]]
    args, core = [], -1
    for p, arg in zip(k["params"], o["args"]):
      if p["kind"] in ("buffer", "image"):
        args.append(buf_addr[arg["buffer"]] + arg["offset"])
      else:
        if p["kind"] == "core_id":
          core = len(args)
        args.append(arg["int"])
    put(0, kaddr[o["kernel"]], o["global"][0] if core >= 0 else 1, core, len(args), *args)
  put(len(m["outputs"]))
  outs = []
  for o in m["outputs"]:
    n = int(np.prod(o["shape"])) * np.dtype(o["dtype"]).itemsize
    put(buf_addr[o["buffer"]] + o["offset"], n)
    outs.append((o, np.frombuffer(blob(m["reference"]["outputs"][o["name"]]), dtype=o["dtype"]).reshape(o["shape"]), n))
  return bytes(out), outs, m["reference"]


def main() -> int:
  if len(sys.argv) != 2:
    print(__doc__, file=sys.stderr)
    return 2
  try:
    plan, outs, ref = build_plan(sys.argv[1])
  except LoadError as e:
    print(f"error: {e}", file=sys.stderr)
    return 1
  with tempfile.TemporaryDirectory() as t:
    exe, pf = os.path.join(t, "replay"), os.path.join(t, "plan.bin")
    subprocess.run(["aarch64-linux-gnu-gcc", "-static", "-O1", "-o", exe, os.path.join(HERE, "replay_aarch64.c")], check=True, timeout=120)
    with open(pf, "wb") as f:
      f.write(plan)
    r = subprocess.run(["qemu-aarch64", exe, pf], capture_output=True, timeout=600)
  if r.returncode != 0:
    print(f"error: replay failed ({r.returncode}): {r.stderr.decode(errors='replace').strip()}", file=sys.stderr)
    return 1
  ok, pos = True, 0
  for o, want, n in outs:
    got = np.frombuffer(r.stdout[pos : pos + n], dtype=o["dtype"]).reshape(o["shape"])
    pos += n
    err = float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64))))
    good = bool(np.allclose(got, want, atol=ref["atol"], rtol=ref["rtol"]))
    print(f"aarch64 (qemu) output '{o['name']}': max abs err {err:.3g} {'OK' if good else 'FAIL'}")
    ok &= good
  print("PASS" if ok else "FAIL")
  return 0 if ok else 1


if __name__ == "__main__":
  sys.exit(main())
