"""``modelrt.compile`` and ``modelrt.convert``: the compile of ``modelrt compile`` / ``cargo xtask compile`` from
Python. The extension parses the options and runs the compile (exporter, bundle writer, pre-write check on the
target's device model); the exporter is the copy this package ships in ``modelrt/_exporter``, run by this Python."""

import importlib.util
import os
import shutil
import sys
import tempfile
from pathlib import Path

from . import _native

EXPORTER_DIR = Path(__file__).resolve().parent / "_exporter"
# What the ``compile`` extra installs (pyproject.toml's optional-dependencies, the exporter venv's pins).
COMPILE_EXTRA = ("tinygrad", "onnx", "onnxruntime", "numpy")


def missing_compile_extra() -> list[str]:
  """The packages of the ``compile`` extra that this Python cannot import."""
  return [name for name in COMPILE_EXTRA if importlib.util.find_spec(name) is None]


def native_call(name: str, args: list[str]):
  """Call ``_native.NAME(args, python, exporter_dir, scratch)`` with a scratch directory removed afterwards."""
  scratch = tempfile.mkdtemp(prefix="modelrt-compile-")
  try:
    return getattr(_native, name)(args, sys.executable, str(EXPORTER_DIR), scratch)
  finally:
    shutil.rmtree(scratch, ignore_errors=True)


def _flag_args(options: dict) -> list[str]:
  """Keyword options as ``modelrt compile`` flags: ``name_x=True`` → ``--name-x``; a value → ``--name-x VALUE``; a
  list → the flag once per item; a dict (``dim``, ``const``) → ``--dim KEY=VALUE`` per item; ``emu_check=False`` →
  ``--no-emu-check``. False and None give no flag."""
  argv: list[str] = []
  for key, value in options.items():
    if key == "emu_check":
      if value is False:
        argv.append("--no-emu-check")
      continue
    flag = "--" + key.replace("_", "-")
    if value is None or value is False:
      continue
    if value is True:
      argv.append(flag)
    elif isinstance(value, dict):
      for k, v in value.items():
        argv += [flag, f"{k}={os.fspath(v) if isinstance(v, os.PathLike) else v}"]
    elif isinstance(value, (list, tuple)):
      for v in value:
        argv += [flag, os.fspath(v) if isinstance(v, os.PathLike) else str(v)]
    else:
      argv += [flag, os.fspath(value) if isinstance(value, os.PathLike) else str(value)]
  return argv


def compile(model, output, *, target: str = "cpu", **options) -> Path:
  """Compile the ONNX model ``model`` into the bundle ``output`` for ``target`` and return its path. For a tinygrad
  program give ``model=None, tinygrad="SCRIPT.py:FN"`` (``modelrt compile --tinygrad``).

  The options are ``modelrt compile``'s (see ``modelrt compile --help``), with ``-`` written ``_``:
  ``reference=True``, ``seed=0``, ``image=True``, ``dim={"N": 8}``, ``const={"shape": "shape.npy"}``,
  ``cpu_baseline="x86-64-v4"``, ``emu_check=False``, ``sign="key"``, ... Bad options raise ValueError; a refused or
  failed compile raises modelrt.Error with the compile's one-line reason. Needs the ``compile`` extra."""
  missing = missing_compile_extra()
  if missing:
    raise ImportError(f"modelrt.compile needs the compiler ({', '.join(missing)} missing): pip install 'modelrt[compile]'")
  args = ["compile", *([] if model is None else [os.fspath(model)]), "--output", os.fspath(output), "--target", target, *_flag_args(options)]
  return Path(native_call("_compile", args))


def convert(pickle, output, *, state_init: dict | None = None, metadata=None, sign=None) -> Path:
  """Turn a tinygrad compile3 pickle into the bundle ``output`` (``modelrt convert``) and return its path.
  ``state_init={"NAME": "zeros" or "FILE.npy"}`` as ``--state-init``; ``metadata`` (openpilot's ``*_metadata.pkl``)
  as ``--metadata``: its output slices go into the bundle (``Model.output_slices``); errors as for ``compile``."""
  missing = missing_compile_extra()
  if missing:
    raise ImportError(f"modelrt.convert needs the compiler ({', '.join(missing)} missing): pip install 'modelrt[compile]'")
  args = ["convert", os.fspath(pickle), "--output", os.fspath(output), *_flag_args({"state_init": state_init, "metadata": metadata, "sign": sign})]
  return Path(native_call("_compile", args))
