"""Searched CPU kernels, reproducibly: `--beam N` runs tinygrad's kernel search during capture and records the optimisations
it chose per kernel in a search cache; `--beam-cache FILE` applies such a cache without searching (docs/bench.md
"Searched kernels").

How it hooks into tinygrad 0.14: the exporter sets JITBEAM=N, so every kernel of the captured program (not call 0's eager
run, not the init phase) reaches `tinygrad.codegen.apply_opts` with `KernelInfo.beam = N`. That function is wrapped here:
- search: tinygrad's own beam search picks the optimisations (timing candidates on this CPU); when it picked no THREAD
  split, one is added the way tinygrad's hand-coded heuristic would (the search times kernels on tinygrad's runtime, which
  runs the `core_id` slices one after another, so it cannot see the gain of threading); the final list is recorded;
- apply: the recorded list is handed to tinygrad as `opts_to_apply`, so no timing happens and the same cache always
  yields the same kernels.
A kernel is keyed by the sha256 tinygrad computes for the AST it schedules (`UOp.key`), with the beam value and the
PARAM devices blanked, so the key is the same whether the cache is being written or applied and on any device.
A kernel missing from an applied cache is an error naming it, as is a cache entry the model never asked for.
"""

import hashlib
import json
import os
import platform
import sys
import time
from dataclasses import dataclass, field, replace

from mrt.conv_rule import RULE_VERSION
from mrt.targets import TINYGRAD_VERSION, ExportError

CACHE_FORMAT = "modelrt-beam-cache/1"
HOST_ARCH = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}


@dataclass
class BeamState:
  beam: int  # search width (search) or the width the cache was made with (apply)
  target: str
  dev: str
  threads: str
  cache_in: str | None = None  # applied cache path
  cache_out: str | None = None  # where a search writes its cache
  applied: dict = field(default_factory=dict)  # key -> cache entry (apply mode)
  used: set = field(default_factory=set)  # keys the model asked for
  found: dict = field(default_factory=dict)  # key -> entry recorded by the search
  seconds: float = 0.0  # time spent searching
  cache_sha: str | None = None


_STATE: BeamState | None = None


def add_args(ap):
  ap.add_argument("--beam", type=int, default=None, metavar="N", help="cpu-* only: tinygrad kernel search of width N on this CPU")
  ap.add_argument("--beam-cache", default=None, metavar="FILE", help="cpu-* only: apply a search cache instead of searching")
  ap.add_argument("--beam-cache-out", default=None, metavar="FILE", help="with --beam: where to write the search cache")


def _host_arch() -> str:
  return HOST_ARCH.get(platform.machine().lower(), platform.machine())


def configure(ap, cfg) -> dict:
  """Validate the beam flags for this target and pin JITBEAM before tinygrad is imported; returns flags to record.
  No-op (empty dict) without --beam/--beam-cache."""
  global _STATE
  if ap.beam is None and ap.beam_cache is None:
    if ap.beam_cache_out is not None:
      raise ExportError("--beam-cache-out needs --beam N")
    return {}
  if getattr(ap, "tinygrad", None) is not None:
    raise ExportError("--beam and --beam-cache apply to ONNX models, not --tinygrad")
  if cfg.target.get("kind") != "cpu":
    raise ExportError(f"--beam and --beam-cache are for cpu-x86_64 and cpu-aarch64, not {cfg.name}")
  if ap.beam is not None and not 1 <= ap.beam <= 100:
    raise ExportError(f"--beam must be in 1..100, got {ap.beam}")
  state = BeamState(ap.beam or 0, cfg.name, cfg.dev, cfg.flags.get("NUM_CPU_THREADS", ""))
  if ap.beam_cache is not None:
    if ap.beam_cache_out is not None:
      raise ExportError("--beam-cache applies a cache; --beam-cache-out is for a search")
    state.cache_in = ap.beam_cache
    _load_cache(state, ap.beam)
  else:
    if (arch := cfg.target.get("arch")) != _host_arch():
      raise ExportError(
        f"--beam for {cfg.name} needs that CPU to time kernels on (this host is {_host_arch()}); "
        f"supply --beam-cache FILE made on an {arch} CPU instead"
      )
    if cfg.null:
      raise ExportError(
        f"--beam: {cfg.name} is compiled offline (tinygrad's NULL device), where kernels cannot be timed; supply --beam-cache FILE instead"
      )
    state.cache_out = ap.beam_cache_out
    os.environ["PARALLEL"] = "0"  # candidates compile in this process: no worker respawns (it does not change the kernels)
  os.environ["JITBEAM"] = str(state.beam)
  _STATE = state
  _install()
  return {"JITBEAM": str(state.beam)}


def _load_cache(state: BeamState, want_beam: int | None):
  path = state.cache_in
  try:
    with open(path, "rb") as f:
      raw = f.read()
  except OSError as e:
    raise ExportError(f"cannot read beam cache {path}: {e.strerror}") from None
  try:
    doc = json.loads(raw)
    if not isinstance(doc, dict) or doc.get("format") != CACHE_FORMAT:
      raise ValueError(f"format is not {CACHE_FORMAT}")
    kernels = doc["kernels"]
    if not isinstance(kernels, list):
      raise ValueError("'kernels' is not a list")
    entries = {}
    for k in kernels:
      if not isinstance(k, dict) or not isinstance(k.get("key"), str):
        raise ValueError("a kernel entry has no key")
      entries[k["key"]] = (k, [_opt_from_json(o) for o in k["opts"]])
    beam = int(doc["beam"])
  except (ValueError, KeyError, TypeError) as e:
    raise ExportError(f"beam cache {path} is not a valid search cache ({' '.join(str(e).split())[:160]})") from None
  # the device (CPU when searched, NULL when compiled offline) does not matter, the renderer and its CPU do
  for what, have, want in (
    ("tinygrad", doc.get("tinygrad"), TINYGRAD_VERSION),
    ("target", _offline_name(str(doc.get("target"))), _offline_name(state.target)),
    ("renderer", _renderer(str(doc.get("dev"))), _renderer(state.dev)),
    ("threads", str(doc.get("threads")), state.threads),
  ):
    if have != want:
      raise ExportError(f"beam cache {path} was made for {what} {have}, this compile is {what} {want}")
  if "layout_rule" in doc and doc["layout_rule"] != RULE_VERSION:
    raise ExportError(
      f"beam cache {path} was seeded by layout rule {doc['layout_rule']}, this exporter's is {RULE_VERSION} (mrt/conv_rule.py): search again"
    )
  if want_beam is not None and want_beam != beam:
    raise ExportError(f"beam cache {path} holds a BEAM={beam} search, not --beam {want_beam}")
  state.beam = beam
  state.applied = entries
  state.cache_sha = hashlib.sha256(raw).hexdigest()


def _offline_name(target: str) -> str:
  return target.removesuffix("-null")


def _renderer(dev: str) -> str:
  return dev.split(":", 1)[1] if ":" in dev else dev  # CPU:CLANG:x86_64,... -> CLANG:x86_64,...


def _opt_to_json(o) -> dict:
  return {"op": o.op.name, "axis": o.axis, "arg": list(o.arg) if isinstance(o.arg, tuple) else o.arg}


def _opt_from_json(d):
  from tinygrad.codegen.opt import Opt, OptOps

  if not isinstance(d, dict) or d.get("op") not in OptOps.__members__:
    raise ValueError(f"bad optimisation {d!r}"[:100])
  arg = d.get("arg")
  if not (arg is None or isinstance(arg, (int, list))) or not (d.get("axis") is None or isinstance(d.get("axis"), int)):
    raise ValueError(f"bad optimisation {d!r}"[:100])
  return Opt(OptOps[d["op"]], d.get("axis"), tuple(arg) if isinstance(arg, list) else arg)


def kernel_key(ast) -> str:
  """sha256 of the scheduled AST with the beam width and PARAM devices blanked (stable across processes and devices)."""
  from tinygrad.uop.ops import Ops

  params = {p: p.replace(arg=replace(p.arg, device=None)) for p in ast.toposort() if p.op is Ops.PARAM and getattr(p.arg, "device", None)}
  if params:
    ast = ast.substitute(params)
  return ast.replace(arg=replace(ast.arg, beam=0, opts_to_apply=None)).key.hex()


def _plain_name(ast, ren) -> str:
  """The kernel's name before any optimisation (e.g. r_64_512_1024), for messages and the cache."""
  from tinygrad.codegen.opt.postrange import Scheduler
  from tinygrad.helpers import to_function_name

  k = Scheduler(ast, ren)
  k.convert_loop_to_global()
  return to_function_name(k.get_optimized_ast().arg.name)


def _with_thread(ast, ren, opts: tuple) -> tuple[tuple, bool]:
  """`opts` plus a THREAD split when it has none: the largest thread count up to the renderer's limit that divides an
  unsplit output axis, if the kernel does at least ~128K operations per thread (tinygrad's heuristic threshold)."""
  from tinygrad.codegen.opt import KernelOptError, Opt, OptOps
  from tinygrad.codegen.opt.postrange import Scheduler
  from tinygrad.helpers import prod
  from tinygrad.uop.ops import AxisType

  if not getattr(ren, "has_threads", False) or ren.global_max is None or any(o.op is OptOps.THREAD for o in opts):
    return opts, False
  base = Scheduler(ast, ren)
  base.convert_loop_to_global()
  for o in opts:
    base.apply_opt(o)
  work = prod(int(s) for s in base.full_shape)
  for threads in range(int(ren.global_max[0]), 1, -1):
    if work // (128 << 10) < threads:
      continue
    for axis in base.axes_of(AxisType.WEAK):
      if base.full_shape[axis] % threads:
        continue
      k = base.copy()
      try:
        k.apply_opt(Opt(OptOps.THREAD, axis, threads))
      except KernelOptError:
        continue
      return tuple(k.applied_opts), True
  return opts, False


def _search(orig, ast, ren, beam: int) -> tuple:
  """tinygrad's beam search; for a channel-last convolution or a matrix-vector Gemm it starts from the rule's options
  (mrt/conv_rule.py, mrt/gemm_rule.py) instead of the unoptimised kernel, so it can only keep or beat the rule's tile
  as timed here."""
  from mrt import gemm_rule
  from mrt.conv_rule import _CFG, rule_opts

  seed = rule_opts(ast, ren)
  if seed is None:
    seed = gemm_rule.rule_opts(ast, ren, *_CFG.get("vec", (8, 12)))
  if seed is None:
    return tuple(orig(ast, ren, beam).arg.applied_opts)
  from tinygrad.codegen.opt.postrange import Scheduler, args_from_ast
  from tinygrad.codegen.opt.search import beam_search
  from tinygrad.helpers import Context, getenv

  k = Scheduler(ast, ren)
  k.convert_loop_to_global()
  for o in seed:
    k.apply_opt(o)
  rawbufs, var_vals = args_from_ast(ast, ren.target.device)
  with Context(ALLOW_DEVICE_USAGE=1):
    k = beam_search(k, rawbufs, var_vals, beam, bool(getenv("BEAM_ESTIMATE", 1)))
  return tuple(k.applied_opts)


def _small_gemm(ast, ren) -> bool:
  """A matrix-vector kernel the Gemm rule keeps on one thread (mrt/gemm_rule.py): no THREAD split is added to it."""
  from mrt import gemm_rule
  from mrt.conv_rule import _CFG

  return gemm_rule.rule_opts(ast, ren, *_CFG.get("vec", (8, 12))) is not None and not gemm_rule.threaded(ast, ren)


def _install():
  import tinygrad.codegen as codegen

  orig = codegen.apply_opts
  if getattr(orig, "_modelrt_beam", False):
    return

  def apply_opts(ast, ren, beam=0):
    st = _STATE
    if st is None or beam < 1 or ast.tag is not None:
      return orig(ast, ren, beam)
    key = kernel_key(ast)
    st.used.add(key)
    if st.cache_in is not None:
      if key not in st.applied:
        raise ExportError(
          f"beam cache {st.cache_in} has no entry for kernel {_plain_name(ast, ren)} (key {key[:16]}); "
          "it was made for another model or compile settings: search again with --beam"
        )
      opts = tuple(st.applied[key][1])
    else:
      t = time.monotonic()
      searched = _search(orig, ast, ren, beam)
      st.seconds += (spent := time.monotonic() - t)
      opts, threaded = searched, False
      if not _small_gemm(ast, ren):
        opts, threaded = _with_thread(ast, ren, searched)
      st.found[key] = {
        "key": key,
        "kernel": _plain_name(ast, ren),
        "opts": [_opt_to_json(o) for o in opts],
        "thread_added": threaded,
        "search_s": round(spent, 2),
      }
      print(f"exporter: beam: {st.found[key]['kernel']} searched in {spent:.1f}s", file=sys.stderr, flush=True)
    from tinygrad.codegen.opt import KernelOptError

    try:
      return orig(ast.replace(arg=replace(ast.arg, opts_to_apply=opts)), ren, 0)
    except KernelOptError as e:
      raise ExportError(f"beam cache entry for kernel {_plain_name(ast, ren)} (key {key[:16]}) does not apply: {e}") from None

  apply_opts._modelrt_beam = True
  codegen.apply_opts = apply_opts


def _cache_doc(st: BeamState, log) -> bytes:
  cpu = platform.processor() or platform.machine()
  try:
    with open("/proc/cpuinfo") as f:
      cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), cpu)
  except OSError:
    pass
  head = {
    "format": CACHE_FORMAT,
    "tinygrad": TINYGRAD_VERSION,
    "target": st.target,
    "dev": st.dev,
    "threads": st.threads,
    "beam": st.beam,
    "layout_rule": RULE_VERSION,
    "searched_on": cpu,
    "search_s": round(st.seconds, 1),
  }
  log(f"beam search: {len(st.found)} kernels searched in {st.seconds:.1f}s (BEAM={st.beam})")
  lines = [f" {json.dumps(k)}: {json.dumps(v)}," for k, v in head.items()]  # one line per header field and per kernel
  kernels = ",\n".join(f"  {json.dumps(st.found[k])}" for k in sorted(st.found))
  return ("{\n" + "\n".join(lines) + '\n "kernels": [\n' + kernels + "\n ]\n}\n").encode()


def producer_flags(log) -> dict:
  """After capture: write the search cache (search) or check every cache entry was used (apply); the flags that record
  which search produced the bundle (BEAM_CACHE = sha256 of the cache file)."""
  st = _STATE
  if st is None:
    return {}
  if st.cache_in is not None:
    unused = sorted(set(st.applied) - st.used)
    if unused:
      e = st.applied[unused[0]][0]
      raise ExportError(
        f"beam cache {st.cache_in} names {len(unused)} kernel(s) this model does not have, e.g. "
        f"{e.get('kernel', '?')} (key {unused[0][:16]}): it was made for another model or settings"
      )
    log(f"beam cache {st.cache_in}: {len(st.used)} kernels, no search")
  else:
    raw = _cache_doc(st, log)
    st.cache_sha = hashlib.sha256(raw).hexdigest()
    if st.cache_out is not None:
      tmp = st.cache_out + ".tmp"
      with open(tmp, "wb") as f:
        f.write(raw)
      os.replace(tmp, st.cache_out)
      log(f"search cache -> {st.cache_out}")
  return {"JITBEAM": str(st.beam), "BEAM_CACHE": st.cache_sha}
