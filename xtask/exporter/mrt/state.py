"""Stateful JITs: which buffers carry values from one step to the next, and where their initial bytes come from
(docs/hw/tinygrad-export.md §12).

A captured step carries state in a buffer when the step reads contents it did not write itself in that step (read
before written) AND writes the buffer: the next step then reads what this one wrote. tinygrad programs do this with
`buf.assign(...)`, e.g. openpilot's `queue.assign(queue[1:].cat(new))`. Two shapes occur:
  - a realized Tensor the jitted function captured (a held buffer): the capture holds its bytes, which are the state a
    replay of that capture starts from;
  - a Tensor passed in as a JIT input on every call (compile_modeld.py passes its queues this way): the capture holds
    no bytes for it, so its initial contents must be given (`--state-init NAME=zeros|FILE.npy`, or build()'s `state`).
Both become bundle State buffers (initialised at load, persisted across runs). An output that is a view of a state
buffer is copied out at the end of the step, so returning a queue never turns it into an output buffer and loses its
initial bytes. A carried buffer without initial bytes is refused: a stateful graph never becomes a stateless bundle.
"""

import numpy as np

from mrt.targets import ExportError


def carried_buffers(builder) -> set[int]:
  """Ids of non-input buffers whose pre-step contents a step reads and that the step writes."""
  from tinygrad.uop.ops import Ops

  return {
    bid
    for bid in builder.read_before_write & builder.run_written
    if builder.buf_base.get(bid) is not None and builder.buf_base[bid].op is not Ops.PARAM
  }


def carried_inputs(builder) -> dict[int, int]:
  """JIT input slot -> buffer id, for inputs the step reads and then writes (queues passed in on every call)."""
  from tinygrad.uop.ops import Ops

  out = {}
  for bid in builder.read_before_write & builder.run_written:
    base = builder.buf_base.get(bid)
    if base is not None and base.op is Ops.PARAM:
      out[base.arg.slot] = bid
  return out


def input_state_bytes(builder, state_init: dict | None) -> dict[int, bytes]:
  """JIT input slot -> initial bytes, for every carried input. `state_init`: name -> "zeros" or a numpy array. Refuses
  carried inputs without initial contents and initial contents given for inputs the program does not carry."""
  carried = carried_inputs(builder)
  names = {slot: builder.param_info[slot]["name"] for slot in carried}
  given = resolve_state_init(builder, state_init or {})
  missing = sorted(n for n in names.values() if n not in given)
  if missing:
    raise ExportError(
      f"the program advances input(s) {', '.join(missing)} in place (assign), so they carry state from step "
      "to step, but their initial contents are not known; give them with --state-init NAME=zeros or "
      "--state-init NAME=FILE.npy"
    )
  if extra := sorted(set(given) - set(names.values())):
    raise ExportError(
      f"--state-init names {', '.join(extra)}, which the program does not carry across steps "
      f"(carried inputs: {', '.join(sorted(names.values())) or 'none'})"
    )
  out = {}
  for slot, bid in carried.items():
    data, size = given[names[slot]], builder.buffers[bid]["size"]
    if len(data) != size:
      raise ExportError(
        f"--state-init {names[slot]}: {len(data)} bytes given, the state buffer has {size} "
        f"({list(builder.param_info[slot]['shape'])} {builder.buffers[bid]['dtype']})"
      )
    out[slot] = data
  return out


def parse_state_init(specs: list[str]) -> dict:
  """`NAME=zeros` or `NAME=FILE.npy` -> {name: "zeros" | numpy array}."""
  out: dict = {}
  for s in specs:
    name, sep, src = s.partition("=")
    if not sep or not name or not src:
      raise ExportError(f"--state-init expects NAME=zeros or NAME=FILE.npy, got '{s}'")
    if name in out:
      raise ExportError(f"--state-init {name} given twice")
    if src == "zeros":
      out[name] = "zeros"
    else:
      try:
        out[name] = np.load(src, allow_pickle=False)
      except (OSError, ValueError) as e:
        raise ExportError(f"--state-init {name}: cannot read {src}: {e}".splitlines()[0]) from None
  return out


def resolve_state_init(builder, parsed: dict) -> dict[str, bytes]:
  """Turn parsed --state-init values into bytes of each input's declared dtype and shape."""
  from mrt.manifest import dtype_name

  out = {}
  by_name = {p["name"]: p for p in builder.param_info}
  for name, v in parsed.items():
    if name not in by_name:
      raise ExportError(f"--state-init names {name}, which is not an input of the program (inputs: {', '.join(sorted(by_name))})")
    p = by_name[name]
    dt = np.dtype(dtype_name(p["tg_dtype"]))
    if isinstance(v, str):
      out[name] = bytes(int(np.prod(p["capture_shape"], dtype=np.int64)) * dt.itemsize)
    else:
      if v.dtype != dt or tuple(v.shape) != tuple(p["shape"]):
        raise ExportError(f"--state-init {name}: the file holds {v.dtype} {list(v.shape)}, the input is {dt} {list(p['shape'])}")
      out[name] = np.ascontiguousarray(v).tobytes()
  return out


def log_state(buffers: list[dict], log):
  """One line naming the state buffers (or saying there are none), so a convert's output shows what persists."""
  st = [b for b in buffers if b["kind"] == "state"]
  if st:
    log(f"state: {len(st)} buffer(s) persist across steps: " + ", ".join(f"{b['label']} ({b['size']} bytes)" for b in st))
  else:
    log("state: none (every step depends only on its inputs)")
