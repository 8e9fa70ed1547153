#!/usr/bin/env python3
"""An openpilot-style model build step with modelrt: what openpilot's SConscript does for modeld (run tinygrad's
compile script per model, rebuild only when an input changed), with `modelrt compile` in place of compile3.py and a
bundle (.mrt) in place of the pickle. The modeld-like loop that runs the result is examples/modeld.py.

  pip install 'modelrt[compile]'
  python examples/openpilot_build.py --out build/models                       # cpu bundle of the modeld pipeline
  python examples/openpilot_build.py --out build/models --target adreno-a630 --image   # comma three GPU (IMAGE=1 FLOAT16=1)
  python examples/modeld.py build/models/modeld-cpu.mrt --frames 20

Each bundle is rebuilt only when its build signature changes: the sha256 of every source file plus the compile's
command line, kept next to the bundle in BUNDLE.sig (as SCons keeps content signatures). The compile itself is the
`modelrt` command the wheel installs, so its output, checks and refusals are `cargo xtask compile`'s.
"""

import argparse
import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
# The modeld pipeline (warp -> vision -> feature/desire queues -> policy) as a tinygrad program: openpilot's
# compile_modeld.py would be the script here.
PIPELINE = HERE.parent / "xtask" / "models" / "modeld_pipeline.py"


def signature(sources: list[Path], argv: list[str]) -> str:
  """Content signature of a build step: its sources' bytes and its command line."""
  h = hashlib.sha256()
  for s in sources:
    h.update(s.name.encode() + b"\0" + hashlib.sha256(s.read_bytes()).digest())
  h.update("\0".join(argv).encode())
  return h.hexdigest()


def build(target: Path, sources: list[Path], argv: list[str]) -> bool:
  """Run `argv` to (re)build `target` unless its signature is unchanged; returns whether it ran."""
  sig_file = target.with_suffix(target.suffix + ".sig")
  sig = signature(sources, argv)
  if target.is_file() and sig_file.is_file() and sig_file.read_text().strip() == sig:
    print(f"{target} is up to date")
    return False
  print("+ " + " ".join(argv), flush=True)
  subprocess.run(argv, check=True)
  sig_file.write_text(sig + "\n")
  return True


def main() -> int:
  ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  ap.add_argument("--out", type=Path, default=Path("build/models"), help="where the bundles go")
  ap.add_argument("--target", default="cpu", help="modelrt compile --target (cpu, cpu-aarch64, adreno-a630, ...)")
  ap.add_argument("--image", action="store_true", help="adreno-a630: openpilot's IMAGE=1 FLOAT16=1 layout")
  ap.add_argument("--script", type=Path, default=PIPELINE, help="the tinygrad program (SCRIPT.py with build())")
  a = ap.parse_args()
  modelrt = shutil.which("modelrt")
  if modelrt is None:
    print("error: no `modelrt` command: pip install 'modelrt[compile]'", file=sys.stderr)
    return 1
  if not a.script.is_file():
    print(f"error: {a.script} not found", file=sys.stderr)
    return 1
  a.out.mkdir(parents=True, exist_ok=True)
  bundle = a.out / f"modeld-{a.target}{'-image' if a.image else ''}.mrt"
  argv = [modelrt, "compile", "--tinygrad", f"{a.script}:build", "--target", a.target, "--reference", "-o", str(bundle)]
  if a.image:
    argv.append("--image")
  try:
    build(bundle, [a.script], argv)
  except subprocess.CalledProcessError as e:
    # modelrt compile printed its one-line reason
    return e.returncode or 1
  # the bundle checks itself against the reference the compile embedded (--reference)
  return subprocess.run([modelrt, "verify", str(bundle)], check=False).returncode


if __name__ == "__main__":
  raise SystemExit(main())
