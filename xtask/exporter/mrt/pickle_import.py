"""Import an existing openpilot compile3 pickle (a pickled `_TinyJit`) into a modelrt manifest.

Layouts (tinygrad master examples/openpilot/compile3.py `dump_pickle`):
  plain      : pickle.dump(jit, f)
  PICKLE_OOB : i64 len(opcodes) | protocol-5 opcodes | for each out-of-band buffer: i64 nbytes | nbytes raw bytes
               (the buffers are the realized Buffers' contents, in the order the pickler met them)

Reading: every pickle, whatever its layout, is read once by the restricted reader (mrt/safe_pickle.py: allow-listed
tinygrad data classes as inert records, bounded, nothing executed), its layout told from the records
(mrt/pickle_layout.py, logged with the tinygrad range that wrote it) and its program turned into records-level
descriptions (mrt/pickle_program.py). tinygrad never unpickles the file: for the 0.14 layout, mrt/materialize.py
rebuilds tinygrad 0.14 data objects (UOp, Buffer re-homed onto the host, ...) from the records and the 0.14
converter (mrt/manifest.py) runs on them. Pickles have no init phase: compile3 already ran the one-time kernels,
their results are held buffers with data.

Supported kernel formats (inferred from the kernels, not from flags): CPU CLANG ELF objects (x86-64 / aarch64), AMD
gfx1100/gfx1201 code objects, and QCOM Mesa IR3 (`DEV=QCOM:IR3`, fp32 or IMAGE=1 FLOAT16=1) -> adreno-a630 with the same
decoded IR3 metadata as the ONNX path. Pickles whose kernels came from Qualcomm's own compiler (`DEV=QCOM`, tinygrad's
default QCOM renderer) in tinygrad's 0.12 layout — openpilot's warp pickles — are read first, without running any of
their code, by mrt/safe_pickle.py and converted by mrt/qcom_cl.py (adreno-a630, Qualcomm containers kept as they
are), from the exec-items (<= v0.12.0) and linear-index (v0.12.0-1606) layouts. Refused with a one-line reason: QCOM
kernels whose `lib` is OpenCL C source (no binary), pre-0.14 CPU kernels of raw machine code, tinygrad 0.14 pickles
with Qualcomm CL kernels, NULL-device pickles (no weight bytes), multi-device pickles, unknown layouts (naming the
closest known one).
"""

import hashlib
import os
import struct

from mrt.targets import TINYGRAD_VERSION, ExportError


def _read(path: str) -> tuple[bytes, list[bytes] | None]:
  """Return (opcodes, out-of-band buffers or None for a plain pickle)."""
  try:
    with open(path, "rb") as f:
      data = f.read()
  except FileNotFoundError:
    raise ExportError(f"pickle not found: {path}") from None
  if data[:1] == b"\x80":
    return data, None  # plain pickle starts with the PROTO opcode
  if len(data) < 8:
    raise ExportError(f"{path} is neither a pickle nor a PICKLE_OOB file")
  (n,) = struct.unpack_from("<q", data, 0)
  if not 0 < n <= len(data) - 8 or data[8:9] != b"\x80":
    raise ExportError(f"{path} is neither a pickle nor a PICKLE_OOB file")
  opcodes, pos, bufs = data[8 : 8 + n], 8 + n, []
  while pos < len(data):
    if pos + 8 > len(data):
      raise ExportError(f"truncated PICKLE_OOB buffer header at byte {pos}")
    (sz,) = struct.unpack_from("<q", data, pos)
    if sz < 0 or pos + 8 + sz > len(data):
      raise ExportError(f"truncated PICKLE_OOB buffer at byte {pos} ({sz} bytes)")
    bufs.append(data[pos + 8 : pos + 8 + sz])
    pos += 8 + sz
  return opcodes, bufs


def _elf_machine(lib: bytes):
  if lib[:4] != b"\x7fELF":
    return None, None
  return struct.unpack_from("<H", lib, 18)[0], struct.unpack_from("<I", lib, 48)[0]


def _target_from_kernels(calls, device: str):
  """Infer the manifest target + meta function from the compiled kernels in the pickle."""
  from tinygrad.uop.ops import Ops

  from mrt import meta as mrt_meta

  progs = [c.src[0] for c in calls if c.src[0].op is Ops.PROGRAM]
  if not progs:
    raise ExportError("the pickled program has no kernels")
  p0 = progs[0]
  machine, flags = _elf_machine(bytes(p0.src[3].arg))
  arch = p0.arg.target.arch or ""
  if machine in (62, 183):
    baseline = arch.split(",")[1] if "," in arch else "native"
    if baseline in ("native", ""):
      fix = "CPU:CLANG:x86_64,x86-64-v3" if machine == 62 else "CPU:CLANG:arm64,cortex-a76"
      raise ExportError(
        "the pickle's CPU kernels were compiled for the capturing machine's own CPU (tinygrad's default "
        f"-march=native), which the pickle does not record, so no runtime can check they fit the CPU they "
        f"run on; capture it again with DEV={fix} (a fixed CPU baseline) and convert that pickle"
      )
    tgt = {"kind": "cpu", "arch": "x86_64" if machine == 62 else "aarch64", "baseline": baseline}
    return tgt, mrt_meta._cpu_meta
  if machine == 0xE0:
    gfx = {0x41: "gfx1100", 0x4E: "gfx1201"}.get(flags & 0xFF)
    if gfx is None:
      raise ExportError(f"AMD kernels for mach 0x{flags & 0xFF:x} are not supported (gfx1100/gfx1201 only)")
    return {"kind": "amd", "gfx": gfx}, mrt_meta._amd_meta
  if machine == 164:  # EM_HEXAGON: rebuilt from the same kernels as an ONNX compile, plus the DSP model library
    from mrt.dsp import hexagon_meta

    return {"kind": "hexagon", "version": 65}, hexagon_meta
  src = p0.src[2].arg if isinstance(p0.src[2].arg, str) else ""
  if "__kernel" in src:
    raise ExportError(
      "the pickle holds Qualcomm CL (QCOMCL) kernels in tinygrad 0.14's layout, which is not supported (only the 0.12 "
      "layout of openpilot's DEV=QCOM pickles is); compile the ONNX model with --target adreno-a630 (mesa ir3) instead"
    )
  if device.split(":")[0] in ("QCOM", "NULL"):
    mrt_meta._check_mesa_layout()
    from tinygrad.helpers import is_image_shape

    sigs = [s for p in progs for s in p.to_elf().signature[: len(p.arg.globals)]]
    image = any(is_image_shape(s[3]) for s in sigs)
    half = any(s[2].name == "half" for s in sigs)
    return {"kind": "adreno", "chip": 630, "image": image, "half": half}, mrt_meta._ir3_meta
  raise ExportError(f"cannot tell the kernel format of the pickle (device {device})")


def _warn_zero_weights(buffers: list, blobs: dict, log):
  """One warning line when weight buffers hold only zeros: a pickle captured on a device that ran no kernels (e.g. the
  fake KGSL of make_qcom_pickle.py) has zeros wherever tinygrad derives weights on the GPU (IMAGE re-layouts, FLOAT16
  casts), and its bundle then computes wrong outputs. Not an error: a real model may have an all-zero weight."""
  zero = [b for b in buffers if b["kind"] == "weight" and blobs[b["blob"]].count(0) == len(blobs[b["blob"]])]
  if zero:
    log(
      f"warning: {len(zero)} weight buffer(s) ({sum(b['size'] for b in zero)} bytes) hold only zeros, as when the pickle "
      "was captured on a device that ran no kernels (e.g. a fake KGSL): weights tinygrad computes on the GPU (IMAGE "
      "re-layouts, FLOAT16 casts) are then missing and this bundle computes wrong outputs"
    )


def _read_program(path: str, opcodes: bytes, bufs, log):
  """(records, layout, CapturedJit record) from the restricted reader, the layout logged; one-line refusals."""
  from mrt import pickle_layout, safe_pickle

  try:
    obj, names = safe_pickle.read(opcodes, iter(bufs) if bufs is not None else None)
  except safe_pickle.SafePickleError as e:
    raise ExportError(str(e)) from None
  try:
    layout, cj = pickle_layout.detect(obj, names)
  except pickle_layout.LayoutError as e:
    raise ExportError(str(e)) from None
  log(f"layout: {layout.describe()}")
  return obj, layout, cj


def _qcom_cl_pickle(path: str, layout, cj, out_dir: str, log, metadata=None) -> bool:
  """Convert a Qualcomm-compiled (DEV=QCOM) pickle of any layout from its records; False when it is not one."""
  from mrt import pickle_program, qcom_cl

  if layout.key == "exec-items":
    prog, tg = pickle_program.from_exec_items(cj), "<= 0.12 (exec-items pickle)"
  elif layout.key in ("linear-index", "linear-param"):
    kernels, _ = pickle_program.from_linear(cj, layout.key, kernels_only=True)
    if not qcom_cl.is_qcom_cl(kernels):
      _refuse_other(kernels, layout)
    prog, numbering = pickle_program.from_linear(cj, layout.key)
    tg = f"{numbering} numbering ({layout.key} pickle)"
  else:
    return False
  if not qcom_cl.is_qcom_cl(prog):
    _refuse_other(prog, layout)
  from mrt.export import write_out

  manifest, blobs = qcom_cl.convert(prog, qcom_cl.sha256_of(path), log, tg)
  _apply_metadata(metadata, manifest, log)
  write_out(out_dir, manifest, blobs)
  log(f"{len(manifest['kernels'])} kernels, {len(manifest['ops'])} run ops, {len(manifest['buffers'])} buffers")
  return True


def _refuse_other(prog, layout):
  """One line for a pre-0.14 program whose kernels are not Qualcomm CL ones: what they are and why not converted."""
  ks = [s.kernel for s in prog.steps if s.kernel is not None]
  if not ks:
    raise ExportError("the pickled program has no kernels")
  k = next((k for k in ks if k.device.split(":")[0] != "QCOM" or "__kernel" not in (k.src or "")), ks[0])
  dev = k.device.split(":")[0]
  lib = k.lib or b""
  if dev == "CPU" and lib[:4] != b"\x7fELF" and (k.src or "").lstrip().startswith("define "):
    raise ExportError(
      f"kernel {k.name} (device {k.device}) is LLVM IR plus raw machine code without an ELF header (nothing records "
      "which CPU features that code needs); modelrt never loads raw code as if it were an ELF and does not recompile "
      "the IR — capture the model again with tinygrad 0.14 and a fixed baseline, DEV=CPU:CLANG:x86_64,x86-64-v3"
    )
  raise ExportError(
    f"kernel {k.name} is for device {k.device}; pickles of the {layout.key} layout are converted only when every kernel "
    "is a Qualcomm CL (DEV=QCOM) kernel — capture the model again with tinygrad 0.14"
  )


def _apply_metadata(metadata, manifest: dict, log):
  """Check openpilot metadata (`metadata` = (path, op_metadata.read result), or None) against the manifest and add
  its output slices (mrt/op_metadata.py)."""
  if metadata is not None:
    from mrt import op_metadata

    op_metadata.apply(metadata[1], manifest, metadata[0], log)


def export_pickle(path: str, out_dir: str, log, state_init: dict | None = None, metadata_path: str | None = None):
  from importlib.metadata import version

  from mrt.op_metadata import MetadataError

  tg = version("tinygrad")
  if tg != TINYGRAD_VERSION:
    raise ExportError(f"tinygrad {tg} is installed but the exporter supports only {TINYGRAD_VERSION}")
  metadata = None
  if metadata_path is not None:  # read and checked for itself before the pickle is converted
    from mrt import op_metadata

    metadata = (metadata_path, op_metadata.read(metadata_path))
  opcodes, bufs = _read(path)
  log(
    f"pickle {os.path.basename(path)}: {'PICKLE_OOB' if bufs is not None else 'plain'} layout"
    + (f", {len(bufs)} out-of-band buffers" if bufs is not None else "")
  )
  records, layout, cj = _read_program(path, opcodes, bufs, log)
  try:
    if _qcom_cl_pickle(path, layout, cj, out_dir, log, metadata):
      return
  except MetadataError:
    raise
  except ExportError as e:  # name the layout the refusal is about
    raise ExportError(f"{e} (a pickle of the {layout.describe()})") from None
  if layout.key != "linear-014":
    raise ExportError(f"internal: no converter for the {layout.key} layout")
  from tinygrad.engine.jit import CapturedJit, _TinyJit
  from tinygrad.engine.realize import get_call_arg_uops
  from tinygrad.uop.ops import Ops

  from mrt.export import build_manifest, write_out
  from mrt.manifest import NeedsMaterialize, flatten_calls
  from mrt.materialize import materialize
  from mrt.state import log_state

  obj = materialize(records)  # tinygrad objects rebuilt from the restricted reader's records (no tinygrad unpickling)
  jit = obj.captured if isinstance(obj, _TinyJit) else obj
  if not isinstance(jit, CapturedJit):
    raise ExportError(f"the pickle holds a {type(obj).__name__}, not a TinyJit")
  calls = flatten_calls(jit.linear)
  devices = sorted({str(u.device) for c in calls for u in get_call_arg_uops(c) if str(u.device).split(":")[0] not in ("NPY", "PYTHON", "DISK")})
  if len(devices) != 1:
    raise ExportError(f"expected exactly one compute device in the pickle, found {devices}")
  device = devices[0]
  if device.startswith("NULL"):
    raise ExportError("the pickle was compiled on a NULL (data-less) device: its buffers hold no weights")
  target, meta_fn = _target_from_kernels(calls, device)
  with open(path, "rb") as f:
    sha = hashlib.sha256(f.read()).hexdigest()
  flags = {"SOURCE": "pickle"}
  if target["kind"] == "hexagon":  # the helper object the kernels link, before any kernel is compiled
    from mrt.dsp import prepare

    flags.update(prepare(out_dir))
  try:
    body, blobs, _ = build_manifest(jit, None, target, meta_fn, device, False, {}, {}, [], state_init=state_init)
  except NeedsMaterialize as e:
    raise ExportError(
      f"the pickled program returns {', '.join(e.names)} as non-contiguous views of its buffers, which a bundle "
      "cannot express; capture it with `.contiguous()` on those outputs, or compile the ONNX model instead"
    ) from None
  _warn_zero_weights(body["buffers"], blobs, log)
  if target["kind"] == "hexagon":  # as for ONNX: one library with every kernel + the schedule runner
    from mrt.dsp import add_model_library

    add_model_library(body, blobs, log)
  p0 = next(c.src[0] for c in calls if c.src[0].op is Ops.PROGRAM)
  manifest = {
    "format": 1,
    "producer": {
      "tinygrad": tg,
      "tinymesa": None,
      "onnx_sha256": sha,
      "dev": device,
      "renderer": p0.arg.target.renderer or "unknown",
      "flags": flags,
    },
    "target": target,
    **body,
    "reference": None,
  }
  if target["kind"] == "adreno":
    manifest["producer"]["tinymesa"] = version("tinymesa")
  _apply_metadata(metadata, manifest, log)
  write_out(out_dir, manifest, blobs)
  log(f"{len(body['kernels'])} kernels, {len(body['ops'])} run ops, {len(body['buffers'])} buffers")
  log_state(body["buffers"], log)
