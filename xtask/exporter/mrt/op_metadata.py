"""openpilot's `*_metadata.pkl` (`export.py --pickle P --metadata FILE`, `cargo xtask convert --metadata`): the output
slices of a model, checked against the converted program and written into the manifest (bundle format 2.4).

The file is a plain dict pickled next to each model by openpilot (`model_checkpoint`: str; `output_slices`: name ->
`builtins.slice`; `input_shapes`, `output_shapes`: name -> tuple of ints), gzipped or not. It is read by the restricted
reader (mrt/safe_pickle.py) only: nothing it names is imported or run, and a file that references any class but
`builtins.slice` is refused.

`read` checks the file by itself (types, step 1, every slice inside the last dimension of its output_shapes entry)
before anything is converted; `apply` checks it against the program, each refusal one line naming the field: every `input_shapes` entry is an input of
that shape; every `output_shapes` entry is an output of that shape, matched by name, else (a TinyJit's outputs have
their own names) by shape among the outputs no entry names, when exactly one fits, and that output is renamed to
openpilot's name. The slices cut the one output of `output_shapes` (openpilot's models have one, `outputs`) and are
resolved exactly as Python's `slice.indices(n)` over its LAST dimension n (`slice(-2, None)` of 1000 is 998:1000); a step
other than 1, a bound outside -n..n, or an empty result is refused.

Manifest fields written: `output_slices` = [{"output": name, "name", "start", "stop"}], `checkpoint` = str.
"""

import gzip
import io
import zlib

from mrt.targets import ExportError

MAX_BYTES = 1 << 20  # a metadata pickle is a few hundred bytes
# The bundle's bounds (modelrt-core bundle::schema MAX_SLICE_NAME, MAX_SLICES, MAX_CHECKPOINT).
MAX_SLICE_NAME = 128
MAX_SLICES = 256
MAX_CHECKPOINT = 256
FIELDS = ("model_checkpoint", "output_slices", "input_shapes", "output_shapes")


class MetadataError(ExportError):
  """The metadata file is unreadable or does not describe the program; str() is one line."""


def _fail(path: str, what: str):
  raise MetadataError(f"--metadata {path}: {what}")


def _shape(path: str, field: str, name, v) -> tuple:
  if not isinstance(name, str) or not name:
    _fail(path, f"{field} has the key {name!r}, not a tensor name")
  if not isinstance(v, tuple) or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in v):
    _fail(path, f"{field}[{name!r}] is {v!r}, not a tuple of dimensions")
  return v


def read(path: str) -> dict:
  """The metadata of `path`, its structure checked and its slices resolved over the last dimension of the one output
  of `output_shapes`: {checkpoint, slices: {name: {output, name, start, stop}}, inputs: {name: shape}, outputs}."""
  from mrt import safe_pickle

  try:
    with open(path, "rb") as f:
      data = f.read(MAX_BYTES + 1)
  except OSError as e:
    _fail(path, f"cannot read it ({e.strerror or e})")
  if data[:2] == b"\x1f\x8b":
    try:
      data = gzip.GzipFile(fileobj=io.BytesIO(data)).read(MAX_BYTES + 1)
    except (OSError, EOFError, zlib.error) as e:
      _fail(path, f"not a valid gzip file ({e})")
  if len(data) > MAX_BYTES:
    _fail(path, f"more than {MAX_BYTES} bytes; openpilot's metadata pickles are under 1 KiB — is this the model pickle?")
  try:
    obj, names = safe_pickle.read(data)
  except safe_pickle.SafePickleError as e:
    _fail(path, str(e))
  other = sorted(f"{m}.{n}" for m, n in names if (m, n) not in (("builtins", "slice"), ("__builtin__", "slice")))
  if other:
    _fail(path, f"references {', '.join(other)}; a metadata pickle holds only a dict of strings, tuples and builtins.slice")
  return read_obj(obj, path)


def read_obj(obj, path: str) -> dict:
  """`read` of the unpickled value `obj` (plain values and slices) of file `path`."""
  if not isinstance(obj, dict):
    _fail(path, f"holds a {type(obj).__name__}, not openpilot's metadata dict (keys {', '.join(FIELDS)})")
  missing = [k for k in FIELDS if k not in obj]
  if missing:
    _fail(path, f"has no {', '.join(missing)} (keys found: {', '.join(map(str, obj)) or 'none'}); is it a *_metadata.pkl?")
  ck = obj["model_checkpoint"]
  if not isinstance(ck, str) or len(ck.encode()) > MAX_CHECKPOINT:
    _fail(path, f"model_checkpoint is {ck!r:.80}, not a string of at most {MAX_CHECKPOINT} bytes")
  out = {"checkpoint": ck, "slices": {}, "inputs": {}, "outputs": {}}
  for field, key in (("input_shapes", "inputs"), ("output_shapes", "outputs")):
    if not isinstance(obj[field], dict):
      _fail(path, f"{field} is a {type(obj[field]).__name__}, not a dict of name -> shape")
    out[key] = {n: _shape(path, field, n, v) for n, v in obj[field].items()}
  sl = obj["output_slices"]
  if not isinstance(sl, dict):
    _fail(path, f"output_slices is a {type(sl).__name__}, not a dict of name -> slice")
  if len(sl) > MAX_SLICES:
    _fail(path, f"output_slices has {len(sl)} entries, more than a bundle holds ({MAX_SLICES})")
  for n, s in sl.items():
    if not isinstance(n, str) or not n or len(n.encode()) > MAX_SLICE_NAME:
      _fail(path, f"output_slices has the key {n!r:.80}, not a name of 1 to {MAX_SLICE_NAME} bytes")
    if not isinstance(s, slice):
      _fail(path, f"output_slices[{n!r}] is {s!r:.80}, not a slice")
    if s.step not in (None, 1):
      _fail(path, f"output_slices[{n!r}] is {s!r}: step {s.step}; only contiguous slices (step 1) name a part of an output")
  if sl:
    if len(out["outputs"]) != 1:
      _fail(
        path,
        f"output_slices with {len(out['outputs'])} entries in output_shapes: the output each slice cuts is not recorded",
      )
    ((out_name, shape),) = out["outputs"].items()
    if not shape:
      _fail(path, f"output_shapes[{out_name!r}] is (), a scalar: it has no last dimension to slice")
    for n, s in sl.items():
      start, stop = _resolve(path, n, s, shape[-1])
      out["slices"][n] = {"output": out_name, "name": n, "start": start, "stop": stop}
  return out


def _resolve(path: str, name: str, s: slice, n: int) -> tuple[int, int]:
  """(start, stop) of `s` over a last dimension of `n`, as `s.indices(n)`; bounds outside -n..n or empty refused."""
  for bound in (s.start, s.stop):
    if bound is not None and not -n <= bound <= n:
      _fail(path, f"output_slices[{name!r}] is {s!r}, outside the output's last dimension of {n}; fix the metadata or use this model's")
  start, stop, _ = s.indices(n)
  if start >= stop:
    _fail(path, f"output_slices[{name!r}] is {s!r}, which selects nothing of the output's last dimension of {n}")
  return start, stop


def apply(meta: dict, manifest: dict, path: str, log) -> None:
  """Check `meta` (from `read`) against `manifest`'s inputs and outputs; rename outputs to openpilot's names where they
  are matched by shape; add `output_slices` and `checkpoint`."""
  ins = {t["name"]: tuple(t["shape"]) for t in manifest["inputs"]}
  for n, shape in meta["inputs"].items():
    if n not in ins:
      _fail(path, f"input_shapes names {n!r}, which is not an input of the program (inputs: {', '.join(ins) or 'none'}); use this model's metadata")
    if ins[n] != shape:
      _fail(path, f"input_shapes[{n!r}] is {shape}, but the program's input {n!r} has shape {ins[n]}; use this model's metadata")
  outs = manifest["outputs"]
  named = {t["name"] for t in outs}
  claimed: set[int] = set()
  for n, shape in meta["outputs"].items():
    if n in named:
      i = next(i for i, t in enumerate(outs) if t["name"] == n)
      if tuple(outs[i]["shape"]) != shape:
        _fail(path, f"output_shapes[{n!r}] is {shape}, but the program's output {n!r} has shape {tuple(outs[i]['shape'])}; use this model's metadata")
      claimed.add(i)
      continue
    fits = [i for i, t in enumerate(outs) if i not in claimed and t["name"] not in meta["outputs"] and tuple(t["shape"]) == shape]
    have = ", ".join(f"{t['name']} {tuple(t['shape'])}" for t in outs)
    if not fits:
      _fail(path, f"output_shapes[{n!r}] is {shape}, but no output of the program has that shape (outputs: {have}); use this model's metadata")
    if len(fits) > 1:
      _fail(path, f"output_shapes[{n!r}] is {shape}, which {len(fits)} outputs of the program have ({have}); which one it names is ambiguous")
    i = fits[0]
    log(f"metadata: output {outs[i]['name']} {shape} is openpilot's {n!r}")
    outs[i]["name"] = n
    claimed.add(i)
  slices = list(meta["slices"].values())
  manifest["output_slices"] = slices
  manifest["checkpoint"] = meta["checkpoint"]
  log(
    f"metadata: checkpoint {meta['checkpoint']!r}, {len(slices)} output slices: " + ", ".join(f"{s['name']} {s['start']}:{s['stop']}" for s in slices)
  )
