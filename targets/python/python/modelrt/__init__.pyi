"""Type stubs for modelrt, the Python API of the modelrt runtime (crate targets/python: the extension modelrt._native
and this package)."""

from os import PathLike
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

__version__: str

class Error(RuntimeError):
  """A runtime or device fault in modelrt (a bundle that cannot load, a failed run)."""

class TensorInfo:
  """An input, output or state of a Model."""

  @property
  def name(self) -> str: ...
  @property
  def shape(self) -> tuple[int, ...]: ...
  @property
  def dtype(self) -> np.dtype[Any]: ...
  @property
  def nbytes(self) -> int: ...

class Model:
  """A bundle loaded on a device (from modelrt.load). Use it from the thread that loaded it: a call from another
  thread raises modelrt.Error (load one Model per thread)."""

  @property
  def inputs(self) -> list[TensorInfo]: ...
  @property
  def outputs(self) -> list[TensorInfo]: ...
  @property
  def states(self) -> list[TensorInfo]: ...
  @property
  def output_slices(self) -> dict[str, tuple[str, int, int]]:
    """Named parts of the outputs (bundle format 2.4, `convert --metadata`): {name: (output name, start, stop)},
    elements start:stop along that output's last dimension; empty when the bundle has none."""
  @property
  def checkpoint(self) -> str | None:
    """The model checkpoint the output slices describe (format 2.4), or None."""
  def split(self, outputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """{slice name: outputs[output][..., start:stop]} for the dict `run` returned (numpy views, no copies)."""
  @property
  def device(self) -> str: ...
  @property
  def last_timing(self) -> dict[str, float] | None: ...
  @property
  def last_input_paths(self) -> dict[str, str]: ...
  def run(
    self,
    feeds: dict[str, npt.NDArray[Any]],
    outputs: dict[str, npt.NDArray[Any]] | None = None,
  ) -> dict[str, npt.NDArray[Any]]:
    """Run one step. Arrays are checked (dtype, shape, contiguity, size) against numpy's own array header, never
    through Python-level methods of an ndarray subclass; inputs that are not C-contiguous are copied with numpy's C
    API. Every array is held (with a weak reference, which makes numpy refuse `resize`, even with refcheck=False) for
    the call, so neither a callback nor another thread can resize or free it while the GIL is released; an array
    that changed anyway is refused with ValueError."""
  def reset_state(self) -> None: ...
  def read_state(self, name: str) -> npt.NDArray[Any]: ...
  def verify(self) -> dict[str, dict[str, Any]]: ...
  def info(self) -> dict[str, Any]: ...

def load(
  path: str | PathLike[str],
  device: str = "auto",
  threads: int | None = None,
  firmware_dir: str | PathLike[str] | None = None,
  trusted_keys: list[str | PathLike[str]] | None = None,
  mmap: bool = True,
) -> Model:
  """Load a bundle. With mmap=True (the default) the file is memory-mapped read-only and stays mapped while the Model
  lives. Mapping hazard: truncating the file under a loaded Model kills the process (SIGBUS); rewriting it in place
  runs bytes that were never checked (the CRCs and the validator run once, at load). Replace bundles with a rename,
  or pass mmap=False to read the file into memory at load (Model.info()["mapped"] says which)."""

def _rust_allocations() -> int:
  """Heap allocations made so far by Rust code in the extension (a test diagnostic: Model.run with preallocated
  outputs makes none)."""

def compile(
  model: str | PathLike[str] | None,
  output: str | PathLike[str],
  *,
  target: str = "cpu",
  **options: Any,
) -> Path:
  """Compile an ONNX model (or, with model=None and tinygrad="SCRIPT.py:FN", a tinygrad program) into the bundle
  `output` for `target`, as `modelrt compile` does, and return its path. The options are `modelrt compile`'s with
  `-` written `_` (reference=True, image=True, dim={"N": 8}, emu_check=False, ...). Needs the compile extra
  (pip install 'modelrt[compile]'); bad options raise ValueError, a refused or failed compile modelrt.Error."""

def convert(
  pickle: str | PathLike[str],
  output: str | PathLike[str],
  *,
  state_init: dict[str, str | PathLike[str]] | None = None,
  metadata: str | PathLike[str] | None = None,
  sign: str | PathLike[str] | None = None,
) -> Path:
  """Turn a tinygrad compile3 pickle into the bundle `output` (`modelrt convert`) and return its path; `metadata`
  (openpilot's `*_metadata.pkl`) as `--metadata`."""
