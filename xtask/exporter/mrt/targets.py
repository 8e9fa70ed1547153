"""Target table for the modelrt exporter: DEV strings, pinned compile flags and target records.

Everything here is pure data and must be computed *before* tinygrad is imported, because tinygrad reads several of these
variables at import/class-definition time (THREADS, NUM_CPU_THREADS, IMAGE, FLOAT16, ...).
"""

from dataclasses import dataclass

TINYGRAD_VERSION = "0.14.0"
TINYMESA_VERSION = "25.2.7.2"
DEFAULT_CPU_THREADS = 4  # pinned so the thread split baked into CPU kernels does not depend on the build host

TARGETS = ("cpu-x86_64", "cpu-aarch64", "adreno-a630", "amd-gfx1100", "amd-gfx1201", "hexagon-v65")
# Validation-only target: the NULL-device (offline) flow of docs/hw/tinygrad-export.md §3.1 compiled for x86-64, so check_manifest.py can replay
# it and prove python consts, the init phase and ONNX weight bytes numerically. Not for shipping.
VALIDATION_TARGETS = ("cpu-x86_64-null",)
# A FastRPC launch carries at most 15 buffers (its count sits in a 4-bit field of the scalars word, docs/hw/fastrpc.md §3).
# tinygrad's own per-device buffer limit (MAX_KERNEL_BUFFERS, output included) makes it split wider kernels at schedule
# time, as it does for Metal or WebGPU, so every hexagon kernel stays tinygrad's own and launchable.
DSP_MAX_KERNEL_BUFFERS = 15

# Compile-affecting variables that we do not set ourselves but must record (and keep stable) when the caller sets them.
# They form tinygrad's compile-cache key (to_program_config) or change the captured linear.
PASSTHROUGH_FLAGS = (
  "OPENPILOT_HACKS",
  "NOOPT",
  "DEFAULT_FLOAT",
  "TRANSCENDENTAL",
  "NOLOCALS",
  "DONT_GROUP_REDUCES",
  "SPLIT_REDUCEOP",
  "USE_TC",
  "TC",
  "TC_OPT",
  "TC_SELECT",
  "AMX",
  "DISABLE_COMPILER_CACHE",
  "MAX_KERNEL_BUFFERS",
)
# Variables that change the capture in ways the manifest cannot represent.
FORBIDDEN_FLAGS = {
  "HCQ2": "HCQ2 swaps in a different compile/link path",
  "VALIDATE_WITH_CPU": "it inserts CPU validation calls",
  "NO_MEMORY_PLANNER": "the exporter expects the memory-planned arena",
  "MSELECT": "multi-device is out of scope",
}


class ExportError(Exception):
  """A user-facing error: printed as one line on stderr, exit code 2."""


@dataclass(frozen=True)
class TargetConfig:
  name: str
  dev: str  # tinygrad DEV string
  null: bool  # NULL device: no data, offline cross-compile (docs/hw/tinygrad-export.md §3.1 steps needed)
  flags: dict  # env vars pinned by the exporter (all strings)
  target: dict  # manifest "target" record
  needs_mesa: bool = False


def make_target(name: str, threads: int | None, float16: bool, image: bool, cpu_baseline: str | None) -> TargetConfig:
  if name not in TARGETS + VALIDATION_TARGETS:
    raise ExportError(f"unsupported target '{name}' (supported: {', '.join(TARGETS)})")
  if image and name not in ("adreno-a630", "cpu-x86_64-null"):
    raise ExportError(f"--image is only supported for adreno-a630, not {name}")
  if cpu_baseline is not None and name not in ("cpu-x86_64", "cpu-aarch64"):
    raise ExportError("--cpu-baseline is only supported for cpu-x86_64 and cpu-aarch64")
  if threads is not None and not name.startswith("cpu-"):
    raise ExportError("--threads is only meaningful for cpu-* targets")
  if threads is not None and not 1 <= threads <= 64:
    raise ExportError(f"--threads must be in 1..64, got {threads}")
  if float16 and not image:  # tinygrad 0.14 reads FLOAT16 only in its IMAGE paths: alone it changes no kernel
    raise ExportError(
      f"--float16 alone changes no kernel (tinygrad 0.14 applies FLOAT16 only to --image's half images), it would "
      f"only loosen the check: it applies to adreno-a630 with --image, which implies it; drop --float16 for {name}"
    )
  half = float16 or image  # --image implies FLOAT16 (image_conv2d stores half images)
  flags = {
    "BEAM": "0",
    "JITBEAM": "0",
    "CACHELEVEL": "0",
    "IMAGE": "1" if image else "0",
    "FLOAT16": "1" if half else "0",
    "JIT": "1",
    "JIT_BATCH_SIZE": "0",
  }
  if name.startswith("cpu-"):
    n = threads if threads is not None else DEFAULT_CPU_THREADS
    # DMC=1: tinygrad 0.14 then leaves loads/stores unmerged (no float4 coalescing), so clang vectorises the kernels'
    # contiguous axis at the full vector width (docs/cpu-kernels.md §2; guarded by tests/tests/cpu/cpu_layout.rs)
    flags.update(THREADS="1", NUM_CPU_THREADS=str(n), DMC="1")
    if name in ("cpu-x86_64", "cpu-aarch64") and cpu_baseline in ("native", ""):
      raise ExportError("--cpu-baseline must name a fixed CPU (e.g. x86-64-v3) or host, never 'native'")
    if name == "cpu-x86_64":
      from mrt.cpu_compile import resolve_baseline

      baseline = resolve_baseline(name, cpu_baseline)
      return TargetConfig(name, f"CPU:CLANG:x86_64,{baseline}", False, flags, {"kind": "cpu", "arch": "x86_64", "baseline": baseline})
    if name == "cpu-x86_64-null":
      return TargetConfig(
        name, "NULL:CLANG:x86_64,x86-64-v3", True, {**flags, "NULL_ALLOW_COPYOUT": "1"}, {"kind": "cpu", "arch": "x86_64", "baseline": "x86-64-v3"}
      )
    from mrt.cpu_compile import resolve_baseline

    baseline = resolve_baseline(name, cpu_baseline)
    return TargetConfig(
      name, f"NULL:CLANG:arm64,{baseline}", True, {**flags, "NULL_ALLOW_COPYOUT": "1"}, {"kind": "cpu", "arch": "aarch64", "baseline": baseline}
    )
  if name == "adreno-a630":
    dev = "NULL:IR3:a630,IMAGE_PITCH_ALIGNMENT=64" if image else "NULL:IR3:a630"
    return TargetConfig(
      name, dev, True, {**flags, "NULL_ALLOW_COPYOUT": "1"}, {"kind": "adreno", "chip": 630, "image": image, "half": half}, needs_mesa=True
    )
  if name == "hexagon-v65":  # captured on tinygrad's qemu mock, the only offline DSP path (mrt/dsp.py)
    dsp_flags = {**flags, "MOCKDSP": "1", "PARALLEL": "0", "MAX_KERNEL_BUFFERS": str(DSP_MAX_KERNEL_BUFFERS)}
    return TargetConfig(name, "DSP", False, dsp_flags, {"kind": "hexagon", "version": 65})
  gfx = name.split("-", 1)[1]
  return TargetConfig(name, f"NULL:AMDLLVM:{gfx}", True, {**flags, "NULL_ALLOW_COPYOUT": "1"}, {"kind": "amd", "gfx": gfx})
