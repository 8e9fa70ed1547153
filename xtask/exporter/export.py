#!/usr/bin/env python3
"""modelrt exporter: ONNX (or a compile3 pickle) -> neutral manifest.json + blobs/, with tinygrad 0.14.0 as kernel compiler.

  export.py --onnx MODEL.onnx --target cpu-x86_64|cpu-aarch64|adreno-a630|amd-gfx1100|amd-gfx1201 --out DIR
            [--reference] [--seed N] [--threads N] [--float16] [--image] [--cpu-baseline x86-64-v3|x86-64-v4|host]
  export.py --pickle MODEL.pkl --out DIR [--state-init NAME=zeros|FILE.npy] [--metadata FILE_metadata.pkl[.gz]]
  export.py --tinygrad SCRIPT.py:FN --target ... --out DIR [--reference] [--seed N]   (a tinygrad program, mrt/script.py)
  cpu-* only: [--beam N [--beam-cache-out FILE]] searches the kernels, [--beam-cache FILE] applies a search (mrt/beam.py)
  cpu-* only: [--winograd auto|on|off] stride-1 3x3 convs as Winograd F(4x4,3x3) (mrt/winograd.py; default auto)

User errors (unsupported op, missing model, wrong target, unsupported pickle version, ...) are printed as one line on
stderr and exit with code 2. Contract: docs/hw/tinygrad-export.md §10 (format 1). Facts: docs/hw/tinygrad-export.md.
CPU targets pin NUM_CPU_THREADS=4 by default (the thread split is baked into the kernels); --threads overrides. CPU
kernels are built by clang-19 -O3 with DMC=1 for the --cpu-baseline (docs/cpu-kernels.md).
--reference tolerances: 1e-4 (fp32), 5e-2 with --image; comparisons raise them for float16/bfloat16 outputs
(core/src/verify.rs).

The library is the package mrt/ next to this file (importable because Python puts this script's directory on its
path). Test-only helpers: tests/ (test_exporter.py; check_manifest.py, an independent x86-64 replayer vs onnxruntime;
check_manifest_aarch64.py + replay_aarch64.c, cpu-aarch64 manifests under qemu-aarch64), tools/ (test-data generators
such as make_test_pickle.py), and the validation-only target `cpu-x86_64-null` (the NULL-device recipe compiled for x86-64 so the
init phase / python constants / ONNX weight bytes can be replayed here).
"""

import argparse
import os
import sys
import time

from mrt.targets import FORBIDDEN_FLAGS, PASSTHROUGH_FLAGS, TARGETS, ExportError, make_target


def log(msg: str):
  print(f"exporter: {msg}", file=sys.stderr, flush=True)


class _OneLineErrorParser(argparse.ArgumentParser):
  def error(self, message):  # one-line user error, exit code 2 (argparse would print the whole usage first)
    print(f"error: {message} (see export.py --help)", file=sys.stderr)
    sys.exit(2)


def build_parser() -> argparse.ArgumentParser:
  ap = _OneLineErrorParser(prog="export.py", description="ONNX -> modelrt manifest via tinygrad 0.14.0")
  src = ap.add_mutually_exclusive_group(required=True)
  src.add_argument("--onnx", help="ONNX model to compile")
  src.add_argument("--pickle", help="existing openpilot compile3 pickle to import (plain or PICKLE_OOB=1 layout)")
  src.add_argument(
    "--tinygrad",
    metavar="SCRIPT.py:FN",
    help="tinygrad program to capture: FN() returns the function and its example inputs and state (mrt/script.py)",
  )
  ap.add_argument("--target", help=f"one of {', '.join(TARGETS)} (required with --onnx)")
  ap.add_argument("--out", required=True, help="output directory (manifest.json + blobs/)")
  ap.add_argument("--reference", action="store_true", help="embed seeded random inputs and onnxruntime outputs")
  ap.add_argument("--seed", type=int, default=0, help="seed for reference/capture inputs (default 0)")
  ap.add_argument("--threads", type=int, default=None, help="CPU threads baked into CPU kernels (default 4)")
  ap.add_argument(
    "--float16", action="store_true", help="FLOAT16=1; tinygrad 0.14 uses it only with --image (which implies it), so alone it is refused"
  )
  ap.add_argument("--image", action="store_true", help="adreno only: IMAGE=1 with IMAGE_PITCH_ALIGNMENT=64 (implies --float16)")
  ap.add_argument(
    "--cpu-baseline",
    default=None,
    help="cpu-x86_64: x86-64-v3 (default; AVX2) or x86-64-v4 (AVX-512, 512-bit vectors); cpu-aarch64: cortex-a76 "
    "(default) or armv8.2-a; host: the best of these this machine supports (printed). Kernels: clang-19 -O3 (mrt/cpu_compile.py)",
  )
  ap.add_argument(
    "--const", action="append", metavar="NAME=FILE.npy", help="fold a fixed value for graph input NAME into the graph before capture (repeatable)"
  )
  ap.add_argument(
    "--dim",
    action="append",
    metavar="NAME=VALUE",
    help="ONNX models: the value of the dynamic dimension NAME of the graph inputs (default 1; repeatable)",
  )
  ap.add_argument(
    "--trust-tinygrad",
    action="store_true",
    help="compile ops tinygrad is known to get wrong, and skip the cross-check of tinygrad's result with onnxruntime",
  )
  ap.add_argument(
    "--state-init",
    action="append",
    metavar="NAME=zeros|FILE.npy",
    help="initial contents of input NAME, which the program advances in place (a queue passed in on every "
    "call) and the bundle keeps as state (repeatable)",
  )
  ap.add_argument(
    "--metadata",
    metavar="FILE",
    default=None,
    help="--pickle: openpilot's *_metadata.pkl (plain or gzipped), checked against the program; its output slices and "
    "checkpoint go into the bundle (format 2.4; mrt/op_metadata.py)",
  )
  ap.add_argument(
    "--compile3-dtypes", action="store_true", help="compile3's dtypes: feed float16 inputs as float32 and return float outputs as float32"
  )
  ap.add_argument(
    "--winograd",
    choices=("auto", "on", "off"),
    default=None,
    help="cpu-* targets: stride-1 3x3 convs as Winograd F(4x4,3x3) instead of channel-last direct convs: auto (default) "
    "where the measured rule says it is faster (x86-64 only), on for every qualifying conv, off for none; each rewrite is checked "
    "against onnxruntime (mrt/winograd.py)",
  )
  ap.add_argument("--role", default=None, help="--tinygrad: compile this device role of a multi-device bundle (mrt/roles.py)")
  ap.add_argument("--roles", default=None, help="with --role: every role, comma-separated, in --target order")
  from mrt.beam import add_args

  add_args(ap)
  return ap


def parse_args(argv):
  return build_parser().parse_args(argv)


def option_names() -> list[str]:
  """Every option export.py takes, sorted (without --help): the Rust side checks that the argv it builds uses exactly
  these (xtask/src/exporter.rs, EXPORT_OPTIONS)."""
  return sorted(s for a in build_parser()._actions for s in a.option_strings if s not in ("-h", "--help"))


def pin_environment(flags: dict, dev: str) -> dict:
  """Set the compile-affecting environment before tinygrad is imported; returns the flags recorded in the manifest."""
  for k, why in FORBIDDEN_FLAGS.items():
    if os.environ.get(k, "0") not in ("", "0"):
      raise ExportError(f"environment variable {k} must not be set ({why})")
  for k in ("DEV", "CPU", "NULL", "AMD", "QCOM", "CACHEDB"):
    os.environ.pop(k, None)
  os.environ.update(flags)
  os.environ["DEV"] = dev
  recorded = dict(sorted(flags.items()))
  for k in sorted(os.environ):
    if k in PASSTHROUGH_FLAGS or (k.startswith("TC") and k.isupper()):
      recorded[k] = os.environ[k]
  return recorded


def prepare_cpu_compiler(cfg, flags: dict):
  """CPU targets: kernels built by clang-19 -O3 for the target's baseline (mrt/cpu_compile.py); records it in `flags`."""
  if cfg.target["kind"] != "cpu":
    return
  # tinygrad lowers and compiles kernels in spawned worker processes unless PARALLEL=0; those would not see the
  # compiler and kernel-option hooks installed in this process (it changes no kernel by itself, so it is not recorded)
  os.environ["PARALLEL"] = "0"
  from mrt.cpu_compile import install

  flags.update(install(cfg.dev.split(":")[2].split(",")[0], cfg.target["baseline"]))


def check_versions(needs_mesa: bool):
  from importlib.metadata import PackageNotFoundError, version

  from mrt.targets import TINYGRAD_VERSION, TINYMESA_VERSION

  try:
    tg = version("tinygrad")
  except PackageNotFoundError:
    raise ExportError(f"tinygrad is not installed (need tinygrad=={TINYGRAD_VERSION})") from None
  if tg != TINYGRAD_VERSION:
    raise ExportError(f"tinygrad {tg} is installed but the exporter supports only {TINYGRAD_VERSION}")
  try:
    mesa_v = version("tinymesa")
  except PackageNotFoundError:
    mesa_v = None
  if needs_mesa and mesa_v != TINYMESA_VERSION:
    raise ExportError(f"tinymesa {mesa_v} is installed but IR3 export needs tinymesa=={TINYMESA_VERSION}")
  return tg, mesa_v


INTERNAL_ERROR_EXIT = 3


def internal_error(e: BaseException, out_dir: str) -> int:
  """One `error:` line naming where the traceback went; exit code 3 (2 is a user error)."""
  import traceback

  where = os.path.join(out_dir, "exporter-traceback.txt")
  try:
    os.makedirs(out_dir, exist_ok=True)
    with open(where, "w") as f:
      f.write(traceback.format_exc())
  except OSError:
    where = None
  msg = " ".join(f"{type(e).__name__}: {e}".split())[:300]
  print(f"error: the exporter failed on this model: {msg}" + (f" (traceback: {where})" if where else ""), file=sys.stderr)
  return INTERNAL_ERROR_EXIT


def main(argv) -> int:
  t0 = time.monotonic()
  try:
    ap = parse_args(argv)
  except SystemExit as e:
    return 2 if e.code not in (0, None) else 0
  try:
    if ap.pickle is not None:
      if ap.beam is not None or ap.beam_cache is not None or ap.winograd is not None:
        raise ExportError("--beam, --beam-cache and --winograd apply to ONNX models, not --pickle")
      from mrt.pickle_import import export_pickle
      from mrt.state import parse_state_init

      export_pickle(ap.pickle, ap.out, log, parse_state_init(ap.state_init or []), ap.metadata)
      log(f"done in {time.monotonic() - t0:.1f}s -> {ap.out}")
      return 0
    if ap.metadata is not None:
      raise ExportError("--metadata applies to --pickle (openpilot's *_metadata.pkl next to a model pickle)")
    if ap.target is None:
      raise ExportError(f"--target is required (one of {', '.join(TARGETS)})")
    if ap.cpu_baseline == "host" and ap.target in ("cpu-x86_64", "cpu-aarch64"):
      from mrt.cpu_compile import resolve_baseline

      ap.cpu_baseline = resolve_baseline(ap.target, "host", log)
    cfg = make_target(ap.target, ap.threads, ap.float16, ap.image, ap.cpu_baseline)
    if ap.tinygrad is None and not os.path.isfile(ap.onnx):
      raise ExportError(f"model not found: {ap.onnx}")
    flags = pin_environment(cfg.flags, cfg.dev)
    tg_v, mesa_v = check_versions(cfg.needs_mesa)
    prepare_cpu_compiler(cfg, flags)
    from mrt.beam import configure

    flags.update(configure(ap, cfg))
    if cfg.target["kind"] == "hexagon":  # helper object, mock CC wrapper and the alignment fix, before any compile
      from mrt.dsp import prepare

      flags.update(prepare(ap.out))
    from mrt.winograd import DEFAULT, configure

    if (ap.tinygrad is not None) and ap.winograd is not None:
      raise ExportError("--winograd applies to ONNX models, not --tinygrad")
    configure(ap.winograd or DEFAULT, cfg.name, log)
    if ap.role is not None and ap.tinygrad is None:
      raise ExportError("--role applies to --tinygrad programs")
    if ap.tinygrad is not None:
      from mrt.roles import set_context

      set_context(ap.role, ap.roles)
      if ap.const or ap.compile3_dtypes or ap.trust_tinygrad or ap.state_init:
        raise ExportError("--const, --compile3-dtypes, --trust-tinygrad and --state-init apply to ONNX models and pickles, not --tinygrad")
      if ap.dim:
        raise ExportError("--dim applies to ONNX models (their dynamic dimensions), not --tinygrad")
      from mrt.script_export import export_script

      export_script(cfg, ap, flags, tg_v, mesa_v if cfg.needs_mesa else None, log)
      log(f"done in {time.monotonic() - t0:.1f}s -> {ap.out}")
      return 0
    from mrt.export import export_onnx

    export_onnx(cfg, ap, flags, tg_v, mesa_v if cfg.needs_mesa else None, log)
  except ExportError as e:
    print(f"error: {e}", file=sys.stderr)
    return 2
  except NotImplementedError as e:  # tinygrad's own "op='X' is not supported" for unsupported ONNX ops
    print(f"error: unsupported ONNX model: {e}", file=sys.stderr)
    return 2
  except Exception as e:  # anything else is our bug or tinygrad's: one line, the traceback kept in a file
    return internal_error(e, ap.out)
  log(f"done in {time.monotonic() - t0:.1f}s -> {ap.out}")
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
