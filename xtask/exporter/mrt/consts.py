"""`--const NAME=FILE.npy`: fold a fixed value for a graph input into the ONNX graph before capture.

The input is removed from the graph's inputs and becomes an initializer with exactly the given bytes, so tinygrad
treats it like any other constant (a Reshape shape, Slice bounds, Clip limits, ...). The value must have the input's
declared element type and a shape compatible with its declared shape (symbolic dimensions match any size); nothing is
converted. The folded model is written next to the export's output and used for capture and for onnxruntime's
reference alike; the manifest records each folded input with the sha256 of its bytes.
"""

import hashlib
import os

import numpy as np

from mrt.targets import ExportError


def parse_const_args(items: list[str]) -> dict[str, str]:
  out: dict[str, str] = {}
  for it in items:
    name, eq, path = it.partition("=")
    if not eq or not name or not path:
      raise ExportError(f"--const takes NAME=FILE.npy, got '{it}'")
    if name in out:
      raise ExportError(f"--const {name} is given twice")
    out[name] = path
  return out


def _load_npy(name: str, path: str) -> np.ndarray:
  try:
    return np.load(path, allow_pickle=False)
  except FileNotFoundError:
    raise ExportError(f"--const {name}: file not found: {path}") from None
  except Exception as e:
    raise ExportError(f"--const {name}: {path} is not a readable .npy file ({type(e).__name__}: {e})") from None


def fold_consts(onnx_path: str, consts: dict[str, str], work_dir: str) -> tuple[str, dict[str, str]]:
  """Returns (path of the model to compile, {input name: sha256 of the folded bytes})."""
  if not consts:
    return onnx_path, {}
  import onnx
  from onnx import helper, numpy_helper

  from mrt.capture import load_onnx

  load_onnx(onnx_path)  # one line for a file that is not ONNX
  model = onnx.load(onnx_path)
  inputs = {i.name: i for i in model.graph.input}
  inits = {i.name for i in model.graph.initializer}
  recorded = {}
  for name, path in consts.items():
    if name not in inputs or name in inits:
      raise ExportError(f"--const {name}: the model has no graph input named '{name}' (inputs: {', '.join(n for n in inputs if n not in inits)})")
    vi = inputs[name]
    if not vi.type.HasField("tensor_type"):
      raise ExportError(f"--const {name}: the input is not a tensor")
    want = np.dtype(helper.tensor_dtype_to_np_dtype(vi.type.tensor_type.elem_type))
    arr = _load_npy(name, path)
    if arr.dtype != want:
      raise ExportError(f"--const {name}: {path} holds {arr.dtype}, the input is declared {want}")
    dims = [d.dim_value if d.HasField("dim_value") else None for d in vi.type.tensor_type.shape.dim]
    if len(dims) != arr.ndim or any(d is not None and d != s for d, s in zip(dims, arr.shape)):
      shown = "x".join("?" if d is None else str(d) for d in dims) or "scalar"
      raise ExportError(f"--const {name}: {path} has shape {list(arr.shape)}, the input is declared {shown}")
    model.graph.input.remove(vi)
    arr = arr.copy(order="C")  # not np.ascontiguousarray: it turns a 0-d array into a 1-d one
    model.graph.initializer.append(numpy_helper.from_array(arr, name))
    recorded[name] = hashlib.sha256(arr.tobytes()).hexdigest()
  os.makedirs(work_dir, exist_ok=True)
  out = os.path.join(work_dir, "model-with-consts.onnx")
  onnx.save(model, out)
  return out, recorded
