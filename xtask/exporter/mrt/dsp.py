"""Hexagon DSP target (`hexagon-v65`): capture on tinygrad's qemu mock, ship device libraries (docs/hexagon.md).

tinygrad 0.14's DSP backend has no offline (NULL) path, so the model is captured under `MOCKDSP=1 DEV=DSP`: every kernel
really runs under qemu-hexagon during capture (docs/hw/hexagon-dsp.md §2). For each captured PROGRAM the device source is
re-rendered with the real `DSPRenderer` (its FastRPC `entry` wrapper instead of the mock's `_start`), and compiled to a
Hexagon v65 shared object with the device's flags and 4 KiB section layout, with modelrt's helper library
(qcom/hexagon/dsp/dsp_helpers.c) linked hidden so the only dynamic imports are the HAP_* calls.

Two fixes are applied before anything is compiled (mock and device alike):
- vector typedefs are declared with their element's alignment, not the whole vector's: tinygrad 0.14's DSP coalescer
  emits whole-vector loads at offsets the vector size does not divide, and clang trusts the declared alignment
  (docs/hw/hexagon-dsp.md §5, the false-alignment bug);
- the mock's link gets the helper library too (CC wrapper), so kernels needing division, truncf or half conversion link.

Imported only after the environment is pinned; `prepare` must run before tinygrad compiles anything.
"""

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from typing import ClassVar

from mrt.targets import ExportError

CLANG = "clang-19"
HEXAGON_VERSION = 65
TARGET_FLAGS = ["--target=hexagon", f"-mcpu=hexagonv{HEXAGON_VERSION}", f"-mhvx=v{HEXAGON_VERSION}", "-mhvx-length=128b"]
# tinygrad's device flags (docs/hw/hexagon-dsp.md §3)
KERNEL_FLAGS = [*TARGET_FLAGS, "-fuse-ld=lld", "-nostdlib", "-ffreestanding", "-fPIC", "-fno-stack-protector", "-O2", "-Wall", "-Werror"]
HELPER_FLAGS = [*TARGET_FLAGS, "-O2", "-Wall", "-Werror", "-ffreestanding", "-fno-builtin", "-nostdlib", "-fno-stack-protector", "-fPIC"]
# every used section in its own 4 KiB-aligned output section from address 0, notes/.gnu.hash/.comment dropped
SECTIONS = (
  "text",
  "rela.plt",
  "rela.dyn",
  "plt",
  "data",
  "bss",
  "hash",
  "dynamic",
  "got",
  "got.plt",
  "dynsym",
  "dynstr",
  "symtab",
  "shstrtab",
  "strtab",
)
ALLOWED_IMPORTS = {"HAP_power_set", "HAP_mmap", "HAP_munmap", "HAP_perf_get_time_us"}
HELPER_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "qcom", "hexagon", "dsp", "dsp_helpers.c")
RUNNER_SOURCE = os.path.join(os.path.dirname(HELPER_SOURCE), "schedule_runner.c")
# the model library: every kernel plus the DSP-side schedule runner, stored as one extra kernel record under this name
MODEL_LIBRARY = "modelrt_schedule"

_ALIGNED = re.compile(r"aligned\((\d+)\),ext_vector_type\((\d+)\)")


def lower_vector_alignment(typedef: str, itemsize: int) -> str:
  """A vector typedef with the alignment of one element instead of the whole vector (at least 1)."""
  return _ALIGNED.sub(lambda m: f"aligned({max(1, min(int(m.group(1)), itemsize))}),ext_vector_type({m.group(2)})", typedef)


def linker_script() -> str:
  body = "\n".join(f"  .{s} : ALIGN(4096) {{ *(.{s}) }}" for s in SECTIONS)
  return f"SECTIONS {{ . = 0x0;\n{body}\n  /DISCARD/ : {{ *(.note .note.* .gnu.hash .comment) }}\n}}\n"


class _State:
  work: str | None = None
  helper: str | None = None
  script: str | None = None
  cache: ClassVar[dict] = {}  # shared by every export in this process


def _run(cmd: list[str], what: str, cwd: str | None = None, stdin: bytes | None = None):
  try:
    p = subprocess.run(cmd, input=stdin, capture_output=True, cwd=cwd)
  except FileNotFoundError:
    raise ExportError(f"{cmd[0]} is missing ({what}); install it with `cargo xtask setup`") from None
  if p.returncode != 0:
    err = " ".join(p.stderr.decode(errors="replace").split())[:300]
    raise ExportError(f"{what} failed: {err}")


def prepare(out_dir: str) -> dict:
  """Build the helper object, install the CC wrapper for the mock's link and the alignment fix. Before any compile.
  Returns the producer flags to record (DSP_ALIGN_FIX=0 marks a test-only bundle built without the fix)."""
  work = os.path.join(os.path.abspath(out_dir), "hexagon")
  os.makedirs(work, exist_ok=True)
  shutil.copyfile(HELPER_SOURCE, os.path.join(work, "dsp_helpers.c"))  # compiled by relative name: no path inside the object
  _run([CLANG, *HELPER_FLAGS, "-c", "dsp_helpers.c", "-o", "dsp_helpers.o"], "compiling the Hexagon helper library", cwd=work)
  with open(os.path.join(work, "dsp.ld"), "w") as f:
    f.write(linker_script())
  _State.work, _State.helper, _State.script = work, os.path.join(work, "dsp_helpers.o"), os.path.join(work, "dsp.ld")
  os.environ["CC"] = f"{CLANG} {_State.helper}"  # tinygrad splits CC on spaces: the helper object joins every mock link
  from tinygrad.runtime.ops_dsp import DSPRenderer

  fix = os.environ.get("MODELRT_DSP_NO_ALIGN_FIX") != "1"  # "1": tests only, shows the false-alignment bug is real
  if fix and not getattr(DSPRenderer, "_modelrt_aligned", False):
    plain = DSPRenderer.render_vector_prefix
    DSPRenderer.render_vector_prefix = lambda self, dt, count: lower_vector_alignment(plain(self, dt, count), dt.itemsize)
    DSPRenderer._modelrt_aligned = True
  if fixture := os.environ.get("MODELRT_DSP_FIXTURE"):
    record_mock_launches(fixture)
  return {"DSP_ALIGN_FIX": "1" if fix else "0"}


def record_mock_launches(out_dir: str, keep: int = 64):
  """Test fixture: the bytes of every argument before and after each of the last `keep` launches tinygrad's own mock
  ran (MOCKDSP, the same launch replayed through modelrt's harness must give the same bytes). Written at exit as
  out_dir/index.txt + out_dir/NNN.bin (all arguments before, then all after)."""
  import atexit
  import ctypes

  from tinygrad.runtime.ops_dsp import MockDSPProgram

  calls: list = []
  init, call = MockDSPProgram.__init__, MockDSPProgram.__call__

  def init_named(self, dev, obj):
    init(self, dev, obj)
    self._modelrt_name = obj.name

  def call_recorded(self, *bufs, vals=(), **kw):
    before = [ctypes.string_at(b.va_addr, b.size) for b in bufs]
    ret = call(self, *bufs, vals=vals, **kw)
    calls.append((self._modelrt_name, before, [ctypes.string_at(b.va_addr, b.size) for b in bufs], [int(v) for v in vals]))
    del calls[:-keep]
    return ret

  def write():  # index.txt: one line per launch: "NAME FILE SIZE,SIZE,... VAL,VAL,..." ("-" when empty)
    os.makedirs(out_dir, exist_ok=True)
    lines = []
    for i, (name, before, after, vals) in enumerate(calls):
      with open(os.path.join(out_dir, f"{i:03}.bin"), "wb") as f:
        f.write(b"".join(before + after))
      lines.append(f"{name} {i:03}.bin {','.join(str(len(b)) for b in before) or '-'} {','.join(map(str, vals)) or '-'}\n")
    with open(os.path.join(out_dir, "index.txt"), "w") as f:
      f.write("".join(lines))

  MockDSPProgram.__init__, MockDSPProgram.__call__ = init_named, call_recorded
  atexit.register(write)


def device_source(prg) -> str:
  """The device C for a captured PROGRAM: the same linearized kernel rendered by the real DSPRenderer (FastRPC entry)."""
  from tinygrad.helpers import Target
  from tinygrad.runtime.ops_dsp import DSPRenderer

  src = DSPRenderer(Target("DSP")).render(list(prg.src[1].src))
  if "int entry(" not in src:
    raise ExportError(f"kernel {prg.arg.function_name}: the DSP renderer produced no entry wrapper")
  return src


def dynamic_imports(lib: bytes) -> set[str]:
  """Undefined symbols of the shared object's .dynsym (ELF32 little-endian)."""
  import struct

  (shoff,) = struct.unpack_from("<I", lib, 32)
  shentsize, shnum = struct.unpack_from("<HH", lib, 46)
  secs = [struct.unpack_from("<IIIIIIIIII", lib, shoff + i * shentsize) for i in range(shnum)]
  out = set()
  for s in secs:
    if s[1] != 11:
      continue  # SHT_DYNSYM
    strtab = secs[s[6]]
    for i in range(1, s[5] // 16):
      name, _value, _size, _info, _other, shndx = struct.unpack_from("<IIIBBH", lib, s[4] + i * 16)
      if shndx == 0:
        end = lib.index(b"\0", strtab[4] + name)
        out.add(lib[strtab[4] + name : end].decode())
  return out


def compile_device(src: str, name: str) -> bytes:
  """Device C -> Hexagon v65 shared object (helper linked hidden); refuses imports other than the HAP_* calls."""
  key = hashlib.sha256(src.encode()).hexdigest()
  if key in _State.cache:
    return _State.cache[key]
  with tempfile.TemporaryDirectory(dir=_State.work) as d:
    _run(
      [CLANG, "-shared", *KERNEL_FLAGS, f"-T{_State.script}", "-x", "c", "-", "-x", "none", _State.helper, "-o", "k.so"],
      f"compiling DSP kernel {name}",
      cwd=d,
      stdin=src.encode(),
    )
    with open(os.path.join(d, "k.so"), "rb") as f:
      lib = f.read()
  if extra := dynamic_imports(lib) - ALLOWED_IMPORTS:
    raise ExportError(f"DSP kernel {name} imports {', '.join(sorted(extra))}; only {', '.join(sorted(ALLOWED_IMPORTS))} exist on the DSP")
  _State.cache[key] = lib
  return lib


def _dispatcher(n: int) -> str:
  """C for `mrt_call(k, …)`: kernel k's renamed FastRPC wrapper (an if-chain compiled without jump tables, so the
  library needs no data relocations beyond the kernels' own)."""
  lines = ["typedef union { struct { void *pv; unsigned int len; } buf; struct { int fd; unsigned int offset; } dma; } remote_arg;"]
  lines += [f"int mrt_k{k}(unsigned long long, unsigned int, remote_arg *);" for k in range(n)]
  lines += [f"const unsigned int mrt_nkernels = {n};", "int mrt_call(unsigned int k, unsigned long long h, unsigned int sc, remote_arg *pra) {"]
  lines += [f"  if (k == {k}) return mrt_k{k}(h, sc, pra);" for k in range(n)]
  lines += ["  return -1;", "}", ""]
  return "\n".join(lines)


def add_model_library(body: dict, blobs: dict, log):
  """Link every kernel of `body` (by index) with the schedule runner (qcom/hexagon/dsp/schedule_runner.c) into one shared object and
  append it as a kernel record named MODEL_LIBRARY with no parameters (no step launches it): the runtime opens it
  once and runs a whole step with one FastRPC invoke. Each kernel's `entry` becomes `mrt_k<index>` and its function
  `mrt_f<index>` (hidden), so kernels cannot clash; the only export is the runner's `entry`."""
  kernels = body["kernels"]
  cflags = [f for f in KERNEL_FLAGS if f != "-fuse-ld=lld"] + ["-fvisibility=hidden"]  # objects: no link yet
  with tempfile.TemporaryDirectory(dir=_State.work) as d:
    objs = []
    for k, rec in enumerate(kernels):
      src = blobs[rec["source"]].decode()
      _run(
        [CLANG, *cflags, f"-Dentry=mrt_k{k}", f"-D{rec['entry']}=mrt_f{k}", "-c", "-x", "c", "-", "-o", f"k{k}.o"],
        f"compiling DSP kernel {rec['name']} for the model library",
        cwd=d,
        stdin=src.encode(),
      )
      objs.append(f"k{k}.o")
    with open(os.path.join(d, "dispatch.c"), "w") as f:
      f.write(_dispatcher(len(kernels)))
    shutil.copyfile(RUNNER_SOURCE, os.path.join(d, "schedule_runner.c"))  # by relative name: no path inside the object
    for c in ("dispatch", "schedule_runner"):
      _run([CLANG, *cflags, "-fno-jump-tables", "-c", f"{c}.c", "-o", f"{c}.o"], "compiling the DSP schedule runner", cwd=d)
    _run(
      [CLANG, "-shared", *KERNEL_FLAGS, f"-T{_State.script}", *objs, "dispatch.o", "schedule_runner.o", _State.helper, "-o", "model.so"],
      "linking the DSP model library",
      cwd=d,
    )
    with open(os.path.join(d, "model.so"), "rb") as f:
      lib = f.read()
  if extra := dynamic_imports(lib) - ALLOWED_IMPORTS:
    raise ExportError(f"the DSP model library imports {', '.join(sorted(extra))}; only {', '.join(sorted(ALLOWED_IMPORTS))} exist on the DSP")
  path = "blobs/model.so"
  blobs[path] = lib
  kernels.append({"name": MODEL_LIBRARY, "entry": "entry", "binary": path, "source": None, "params": [], "meta": {"cpu": {"threads": 1}}})
  log(f"DSP model library: {len(kernels) - 1} kernels + schedule runner, {len(lib)} bytes")


def hexagon_meta(prg, elf):
  """kernel_meta for hexagon: (device .so, device source, meta, extra blobs). A DSP kernel runs on one hardware thread."""
  src = device_source(prg)
  return compile_device(src, prg.arg.function_name), src.encode(), {"cpu": {"threads": 1}}, {}
