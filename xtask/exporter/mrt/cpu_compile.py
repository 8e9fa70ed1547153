"""CPU kernel compiler settings: clang-19 at -O3 for the chosen baseline, and how `--cpu-baseline` is resolved.

tinygrad 0.14's CLANG compiler runs `$CC` (default: the unversioned `clang`) at a fixed `-O2`. CPU bundles are built
with the Debian `clang-19` at `-O3` instead: clang 14 mostly fails to vectorise the channel-last kernels to ymm/zmm,
and the AVX-512 baseline asks for 512-bit vectors (`-mprefer-vector-width=512`; clang otherwise caps x86-64-v4 code at
256 bits). `install()` swaps the compile command before any kernel is built; the compiler, its version line and the
flags go into the manifest's producer flags (`CPU_CC`, `CPU_CC_VERSION`, `CPU_CFLAGS`), so a bundle says what built
its kernels. Rule and measurements: docs/cpu-kernels.md.

Baselines: x86-64-v3 (default, AVX2+FMA), x86-64-v4 (AVX-512, 512-bit vectors) for cpu-x86_64; cortex-a76 (default)
and armv8.2-a for cpu-aarch64; `host` picks the best of these this machine supports (same architecture only).
"""

import os
import platform
import shutil
import subprocess

from mrt.targets import ExportError

CPU_CC = "clang-19"
OPT = "-O3"
X86_BASELINES = ("x86-64-v3", "x86-64-v4")
A64_BASELINES = ("cortex-a76", "armv8.2-a")
# compiler arguments that follow `-march=`/`-mcpu=` per baseline (beyond tinygrad's own target arguments)
EXTRA = {"x86-64-v4": ["-mprefer-vector-width=512"]}
# every x86-64-v4 feature the psABI level names (avx512f/bw/cd/dq/vl) must be present for `host` to pick v4
_V4_FLAGS = ("avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl")
_V3_FLAGS = ("avx", "avx2", "fma", "f16c", "bmi1", "bmi2", "movbe", "abm")


def _cpuinfo_flags() -> set[str]:
  try:
    with open("/proc/cpuinfo") as f:
      for line in f:
        key, _, val = line.partition(":")
        if key.strip() in ("flags", "Features"):
          return set(val.split())
  except OSError:
    pass
  return set()


def host_baseline(target: str) -> str:
  """The best baseline of `target` this host can run, or an ExportError when the host is another architecture."""
  machine = platform.machine().lower()
  flags = _cpuinfo_flags()
  if target == "cpu-x86_64":
    if machine not in ("x86_64", "amd64"):
      raise ExportError(f"--cpu-baseline host: this host is {machine}, not x86_64; name a baseline ({', '.join(X86_BASELINES)})")
    if all(f in flags for f in _V4_FLAGS):
      return "x86-64-v4"
    if all(f in flags for f in _V3_FLAGS):
      return "x86-64-v3"
    raise ExportError("--cpu-baseline host: this CPU lacks AVX2/FMA (x86-64-v3), the oldest baseline CPU bundles support")
  if machine not in ("aarch64", "arm64"):
    raise ExportError(f"--cpu-baseline host: this host is {machine}, not aarch64; name a baseline ({', '.join(A64_BASELINES)})")
  return "cortex-a76" if {"asimddp", "fphp"} <= flags else "armv8.2-a"


def resolve_baseline(target: str, baseline: str | None, log=None) -> str:
  """`--cpu-baseline` -> the baseline compiled for (default v3 / cortex-a76); `host` is resolved and said."""
  allowed = X86_BASELINES if target == "cpu-x86_64" else A64_BASELINES
  if baseline is None:
    return allowed[0]
  if baseline == "host":
    picked = host_baseline(target)
    if log is not None:
      log(f"--cpu-baseline host: this CPU supports {picked}; compiling for {picked}")
    return picked
  if baseline not in allowed:
    raise ExportError(f"--cpu-baseline for {target} must be one of {', '.join(allowed)} or host, got '{baseline}'")
  _check_host_runs(target, baseline)
  return baseline


def _check_host_runs(target: str, baseline: str) -> None:
  """A cpu-x86_64 compile captures and verifies its kernels by running them on this host: refuse a baseline this CPU
  cannot execute before anything runs (it would die of SIGILL mid-capture)."""
  if target != "cpu-x86_64" or platform.machine().lower() not in ("x86_64", "amd64"):
    return
  need = _V4_FLAGS if baseline == "x86-64-v4" else _V3_FLAGS
  missing = [f for f in need if f not in _cpuinfo_flags()]
  if missing:
    raise ExportError(
      f"--cpu-baseline {baseline}: this CPU lacks {', '.join(missing)}, and a compile runs its kernels on the host to "
      f"capture and verify them; compile on a CPU with {baseline} (or pick --cpu-baseline host)"
    )


def cflags(arch: str, baseline: str) -> list[str]:
  """The target arguments of one kernel compile (after clang's fixed ones)."""
  if arch == "x86_64":
    return [f"-march={baseline}", *EXTRA.get(baseline, [])]
  # x18 is the platform register on Apple/Windows arm64: tinygrad keeps it free, so do the bundles
  return ["-ffixed-x18", f"-march={baseline}" if baseline.startswith("armv") else f"-mcpu={baseline}"]


def compiler_version() -> str:
  if shutil.which(CPU_CC) is None:
    raise ExportError(f"{CPU_CC} is not installed (Debian package clang-19; `cargo xtask setup` installs it)")
  out = subprocess.run([CPU_CC, "--version"], capture_output=True, text=True, check=True).stdout
  return out.splitlines()[0].strip()


def command(arch: str, target_args: list[str]) -> list[str]:
  """The full compile command: C source on stdin, a relocatable ELF object on stdout."""
  fixed = ["-c", "-x", "c", OPT, "-fPIC", "-ffreestanding", "-fno-math-errno", "-nostdlib", "-fno-ident"]
  return [CPU_CC, *fixed, f"--target={arch}-none-unknown-elf", *target_args, "-", "-o", "-"]


def install(arch: str, baseline: str) -> dict:
  """Make tinygrad's CLANG compiler use `command()`; returns the producer flags that record it. Must run before any
  CPU kernel is compiled. The bundle's own device compiles with `baseline`; other CLANG devices (the host `CPU` device
  tinygrad's eager reference run uses) keep their own `-march` but get the same compiler and -O level."""
  from tinygrad.runtime.support.compiler_cpu import ClangCompiler

  version = compiler_version()
  ours = cflags(arch, baseline)

  def compile_c(self, src: str) -> bytes:
    args = ours if self.arch == arch and self.args and self.args[-1].endswith(baseline) else self.args
    try:
      return subprocess.check_output(command(self.arch, args), input=src.encode("utf-8"), env={**os.environ, "LC_ALL": "C"})
    except FileNotFoundError:
      raise ExportError(f"{CPU_CC} is not installed (Debian package clang-19; `cargo xtask setup` installs it)") from None

  ClangCompiler.compile = compile_c
  return {"CPU_CC": CPU_CC, "CPU_CC_VERSION": version, "CPU_CFLAGS": " ".join([OPT, *ours])}
