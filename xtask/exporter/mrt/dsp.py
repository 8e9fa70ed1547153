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

Build economy (docs/hexagon.md, "Compile time"): each kernel's device C is compiled once, to one object with hidden
visibility; its per-kernel shared object (`entry` made visible with llvm-objcopy) and the model library (`entry` and
the kernel function renamed to `mrt_k<i>`/`mrt_f<i>`) both link that object. During the capture `hexagon_meta` only
records the device source (the kernel's binary is a placeholder naming it); `add_model_library` then builds every
kernel in parallel (one clang per core) and links the model library. Every step, and tinygrad's mock executables,
goes through the content-hash cache of mrt/dsp_cache.py.

Imported only after the environment is pinned; `prepare` must run before tinygrad compiles anything.
"""

import hashlib
import json
import os
import re
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

from mrt import dsp_cache
from mrt.targets import ExportError

CLANG = "clang-19"
OBJCOPY = "llvm-objcopy-19"
HEXAGON_VERSION = 65
TARGET_FLAGS = ["--target=hexagon", f"-mcpu=hexagonv{HEXAGON_VERSION}", f"-mhvx=v{HEXAGON_VERSION}", "-mhvx-length=128b"]
# tinygrad's device flags (docs/hw/hexagon-dsp.md §3)
KERNEL_FLAGS = [*TARGET_FLAGS, "-fuse-ld=lld", "-nostdlib", "-ffreestanding", "-fPIC", "-fno-stack-protector", "-O2", "-Wall", "-Werror"]
# a kernel's one object: every symbol hidden (the model library exports only the runner's `entry`); no link yet
OBJECT_FLAGS = [f for f in KERNEL_FLAGS if f != "-fuse-ld=lld"] + ["-fvisibility=hidden"]
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
# the binary `hexagon_meta` records for a kernel until `add_model_library` builds it: this prefix + sha256(source)
PENDING = b"modelrt-dsp-pending\0"
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
  helper_bytes: bytes = b""
  script: str | None = None


def _run(cmd: list[str], what: str, cwd: str | None = None, stdin: bytes | None = None):
  try:
    p = subprocess.run(cmd, input=stdin, capture_output=True, cwd=cwd)
  except FileNotFoundError:
    raise ExportError(f"{cmd[0]} is missing ({what}); install it with `cargo xtask setup`") from None
  if p.returncode != 0:
    err = " ".join(p.stderr.decode(errors="replace").split())[:300]
    raise ExportError(f"{what} failed: {err}")


def _build(files: dict[str, bytes], cmds: list[tuple[list[str], str]], out: str) -> bytes:
  """Run `cmds` in a fresh directory holding `files`; the bytes of `out`. Sources are compiled by relative name, so
  no path enters an object."""
  with tempfile.TemporaryDirectory(dir=_State.work) as d:
    for name, data in files.items():
      with open(os.path.join(d, name), "wb") as f:
        f.write(data)
    for cmd, what in cmds:
      _run(cmd, what, cwd=d)
    with open(os.path.join(d, out), "rb") as f:
      return f.read()


def _cc_wrapper(helper: str) -> str:
  """The CC tinygrad runs: clang-19, plus the helper object for a Hexagon link (tinygrad's mock executables). Other
  compiles tinygrad makes during a DSP capture (e.g. constants folded on its CPU device, which passes CC as one
  argv word) run clang-19 unchanged."""
  return f'#!/bin/sh\ncase " $* " in *" --target=hexagon "*) exec {CLANG} "$@" -x none "{helper}" ;; esac\nexec {CLANG} "$@"\n'


def _cache_mock_compiles():
  """tinygrad's mock executables through the content-hash cache (the compiler's args, the helper object and the
  source are the key; tinygrad's own disk cache does not cover the mock)."""
  from tinygrad.runtime.ops_dsp import DSPCompiler

  if getattr(DSPCompiler, "_modelrt_cached", False):
    return
  plain = DSPCompiler.compile

  def compile_cached(self, src: str) -> bytes:
    if not self.mock:
      return plain(self, src)
    parts = [dsp_cache.compiler_id(CLANG), self.args.encode(), _State.helper_bytes, src.encode()]
    return dsp_cache.cached("mock", parts, lambda: plain(self, src))

  DSPCompiler.compile = compile_cached
  DSPCompiler._modelrt_cached = True


def prepare(out_dir: str) -> dict:
  """Build the helper object, install the CC wrapper for the mock's link, the mock's compile cache and the alignment
  fix. Before any compile. Returns the producer flags to record (DSP_ALIGN_FIX=0 marks a test-only bundle built
  without the fix)."""
  work = os.path.join(os.path.abspath(out_dir), "hexagon")
  os.makedirs(work, exist_ok=True)
  _State.work = work
  with open(HELPER_SOURCE, "rb") as f:
    helper_c = f.read()
  helper = dsp_cache.cached(
    "helper",
    [dsp_cache.compiler_id(CLANG), json.dumps(HELPER_FLAGS).encode(), helper_c],
    lambda: _build(
      {"dsp_helpers.c": helper_c},
      [([CLANG, *HELPER_FLAGS, "-c", "dsp_helpers.c", "-o", "dsp_helpers.o"], "compiling the Hexagon helper library")],
      "dsp_helpers.o",
    ),
  )
  _State.helper, _State.helper_bytes = os.path.join(work, "dsp_helpers.o"), helper
  with open(_State.helper, "wb") as f:
    f.write(helper)
  _State.script = os.path.join(work, "dsp.ld")
  with open(_State.script, "w") as f:
    f.write(linker_script())
  cc = os.path.join(work, "cc")
  with open(cc, "w") as f:
    f.write(_cc_wrapper(_State.helper))
  os.chmod(cc, 0o755)
  os.environ["CC"] = cc  # tinygrad splits CC on spaces (the mock) or takes it whole (its CPU compiler): one word
  _cache_mock_compiles()
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


def _check_imports(lib: bytes, what: str):
  if extra := dynamic_imports(lib) - ALLOWED_IMPORTS:
    raise ExportError(f"{what} imports {', '.join(sorted(extra))}; only {', '.join(sorted(ALLOWED_IMPORTS))} exist on the DSP")


def kernel_object(src: str, name: str) -> bytes:
  """Device C -> the kernel's one relocatable object (every symbol hidden), cached by content."""
  parts = [dsp_cache.compiler_id(CLANG), json.dumps(OBJECT_FLAGS).encode(), src.encode()]
  return dsp_cache.cached(
    "obj",
    parts,
    lambda: _build({"k.c": src.encode()}, [([CLANG, *OBJECT_FLAGS, "-c", "k.c", "-o", "k.o"], f"compiling DSP kernel {name}")], "k.o"),
  )


def _link(objs: dict[str, bytes], what: str, objcopy: list[list[str]] | None = None) -> bytes:
  """Link objects (after optional llvm-objcopy edits, one argv tail per object) and the helper into a shared object
  with the device flags and section layout; cached by content."""
  edits = objcopy or [[] for _ in objs]
  script = linker_script().encode()
  parts = [dsp_cache.compiler_id(CLANG), json.dumps([KERNEL_FLAGS, edits]).encode(), script, _State.helper_bytes, *objs.values()]
  cmds = [([OBJCOPY, *e, n], f"{what}: editing {n}") for n, e in zip(objs, edits) if e]
  cmds.append(([CLANG, "-shared", *KERNEL_FLAGS, "-Tdsp.ld", *objs, "dsp_helpers.o", "-o", "out.so"], what))
  files = {**objs, "dsp.ld": script, "dsp_helpers.o": _State.helper_bytes}
  return dsp_cache.cached("so", parts, lambda: _build(files, cmds, "out.so"))


def kernel_library(obj: bytes, name: str) -> bytes:
  """A kernel's own shared object (tinygrad's one-library-per-kernel form) from its object: `entry` made visible,
  helper linked hidden; refuses imports other than the HAP_* calls."""
  lib = _link({"k.o": obj}, f"linking DSP kernel {name}", [["--set-symbol-visibility=entry=default"]])
  _check_imports(lib, f"DSP kernel {name}")
  return lib


def compile_device(src: str, name: str) -> bytes:
  """Device C -> the kernel's Hexagon v65 shared object, through the same object and link a bundle's kernels get
  (helper linked hidden; only HAP_* imports)."""
  return kernel_library(kernel_object(src, name), name)


def _dispatcher(n: int) -> str:
  """C for `mrt_call(k, …)`: kernel k's renamed FastRPC wrapper (an if-chain compiled without jump tables, so the
  library needs no data relocations beyond the kernels' own)."""
  lines = ["typedef union { struct { void *pv; unsigned int len; } buf; struct { int fd; unsigned int offset; } dma; } remote_arg;"]
  lines += [f"int mrt_k{k}(unsigned long long, unsigned int, remote_arg *);" for k in range(n)]
  lines += [f"const unsigned int mrt_nkernels = {n};", "int mrt_call(unsigned int k, unsigned long long h, unsigned int sc, remote_arg *pra) {"]
  lines += [f"  if (k == {k}) return mrt_k{k}(h, sc, pra);" for k in range(n)]
  lines += ["  return -1;", "}", ""]
  return "\n".join(lines)


def _jobs() -> int:
  """Parallel clang processes: one per core (2 on the build machine)."""
  return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))


def add_model_library(body: dict, blobs: dict, log):
  """Build every kernel of `body` (the placeholders `hexagon_meta` recorded become their shared objects) and link
  them with the schedule runner (qcom/hexagon/dsp/schedule_runner.c) into one shared object, appended as a kernel
  record named MODEL_LIBRARY with no parameters (no step launches it): the runtime opens it once and runs a whole
  step with one FastRPC invoke. Each kernel's `entry` becomes `mrt_k<index>` and its function `mrt_f<index>` (hidden),
  so kernels cannot clash; the only export is the runner's `entry`. A bundle without kernels (constant outputs, copies
  only) gets a library too: its runner executes the copies, and dsp-emu runs it like any other."""
  kernels = body["kernels"]
  t, hits0, builds0 = time.monotonic(), dsp_cache.Stats.hits, dsp_cache.Stats.builds
  srcs = [blobs[rec["source"]].decode() for rec in kernels]
  names = [rec["name"] for rec in kernels]
  jobs = _jobs()
  with ThreadPoolExecutor(jobs) as ex:
    objs = list(ex.map(kernel_object, srcs, names))
    pending = [i for i, rec in enumerate(kernels) if blobs[rec["binary"]].startswith(PENDING)]
    libs = ex.map(lambda i: kernel_library(objs[i], names[i]), pending)
    for i, lib in zip(pending, libs):
      blobs[kernels[i]["binary"]] = lib
  with open(RUNNER_SOURCE, "rb") as f:
    runner_c = f.read()
  runner_flags = [*OBJECT_FLAGS, "-fno-jump-tables"]
  runner = {}
  for name, c in (("dispatch", _dispatcher(len(kernels)).encode()), ("schedule_runner", runner_c)):
    parts = [dsp_cache.compiler_id(CLANG), json.dumps(runner_flags).encode(), c]
    cmd = [CLANG, *runner_flags, "-c", f"{name}.c", "-o", f"{name}.o"]
    runner[f"{name}.o"] = dsp_cache.cached(
      "obj", parts, lambda c=c, cmd=cmd, name=name: _build({f"{name}.c": c}, [(cmd, "compiling the DSP schedule runner")], f"{name}.o")
    )
  renames = [["--redefine-sym", f"entry=mrt_k{k}", "--redefine-sym", f"{rec['entry']}=mrt_f{k}"] for k, rec in enumerate(kernels)]
  objects = {**{f"k{k}.o": o for k, o in enumerate(objs)}, **runner}
  lib = _link(objects, "linking the DSP model library", [*renames, [], []])
  _check_imports(lib, "the DSP model library")
  path = "blobs/model.so"
  blobs[path] = lib
  kernels.append({"name": MODEL_LIBRARY, "entry": "entry", "binary": path, "source": None, "params": [], "meta": {"cpu": {"threads": 1}}})
  hits, builds = dsp_cache.Stats.hits - hits0, dsp_cache.Stats.builds - builds0
  log(
    f"DSP model library: {len(kernels) - 1} kernels + schedule runner, {len(lib)} bytes; device code built in "
    f"{time.monotonic() - t:.1f}s ({builds} steps built, {hits} from {dsp_cache.cache_dir()}, {jobs} parallel)"
  )


def hexagon_meta(prg, elf):
  """kernel_meta for hexagon: (placeholder for the device .so, device source, meta, extra blobs). A DSP kernel runs
  on one hardware thread."""
  src = device_source(prg)
  # built later, all kernels in parallel, by add_model_library; identical sources share one record as identical
  # binaries would
  return PENDING + hashlib.sha256(src.encode()).digest(), src.encode(), {"cpu": {"threads": 1}}, {}
