"""Which tinygrad TinyJit layout a pickle read by mrt/safe_pickle.py has, told from its records alone.

Four layouts are known (docs/openpilot-pickles.md gives the dates and the pickles each was seen in):

  exec-items    `CapturedJit(ret, jit_cache, input_replace, extra_view_inputs, expected_names, expected_input_info)`,
                each cache entry an `ExecItem` (CompiledRunner(ProgramSpec) / BufferCopy): tinygrad 0.10 to the
                2026-04-16 refactor (v0.12.0-~1500), e.g. openpilot 0.10.4 and 0.11.1's pickles.
  linear-index  `CapturedJit(ret, linear, expected_names, expected_input_info)`: `linear` a LINEAR UOp of CALLs,
                inputs as PARAM UOps numbered by a plain int, PtrDType present: 2026-04-16 to 2026-05-28 (the
                v0.12.0-1606 of openpilot 0.11.2, v0.13.0).
  linear-param  as linear-index, PARAMs carry a `ParamArg`, PtrDType still present: 2026-05-28 to 2026-07-07
                (v0.13.0-288).
  linear-014    ParamArg and no PtrDType: from 2026-07-07, tinygrad 0.14.0.

A pickle matching none gets one line naming the closest known layout and how it differs.
"""

from dataclasses import dataclass

from mrt.safe_pickle import Record


@dataclass(frozen=True)
class Layout:
  key: str
  tinygrad: str  # the tinygrad range that wrote it
  captured_fields: int
  exec_items: bool
  param_arg: bool
  ptr_dtype: bool

  def describe(self) -> str:
    return f"{self.key} layout ({self.tinygrad})"


KNOWN = (
  Layout("exec-items", "tinygrad 0.10 to v0.12.0 before the 2026-04-16 CapturedJit refactor", 6, True, False, True),
  Layout("linear-index", "tinygrad v0.12.0 from 2026-04-16 to 2026-05-28, including v0.13.0", 4, False, False, True),
  Layout("linear-param", "tinygrad 0.13.x from 2026-05-28 (ParamArg) to 2026-07-07 (PtrDType removed)", 4, False, True, True),
  Layout("linear-014", "tinygrad from 2026-07-07, including 0.14.0", 4, False, True, False),
)


class LayoutError(Exception):
  """One line: the pickle is not a TinyJit of a known layout."""


def _is(r, name: str) -> bool:
  return isinstance(r, Record) and r.name == name


def captured(obj):
  """The CapturedJit record of a TinyJit pickle, or None."""
  if _is(obj, "TinyJit") or _is(obj, "_TinyJit"):
    cands = [a for a in obj.args if _is(a, "CapturedJit")] + [obj.field("captured")]
    return next((c for c in cands if _is(c, "CapturedJit")), None)
  return obj if _is(obj, "CapturedJit") else None


def detect(obj, names: set) -> tuple[Layout, Record]:
  """(layout, CapturedJit record) or LayoutError."""
  if not any(m.startswith("tinygrad") for m, _ in names):
    hint = " (it holds a plain dict, as openpilot's *_metadata.pkl I/O descriptions do; those are not converted)" if isinstance(obj, dict) else ""
    raise LayoutError(f"the pickle does not contain a tinygrad TinyJit{hint}")
  cj = captured(obj)
  if cj is None:
    raise LayoutError("the pickle holds no captured TinyJit (CapturedJit); capture it (3 calls) before pickling")
  n = len(cj.args)
  exec_items = ("tinygrad.engine.realize", "ExecItem") in names
  param_arg = ("tinygrad.uop.ops", "ParamArg") in names
  ptr = ("tinygrad.dtype", "PtrDType") in names
  feats = {"captured_fields": n, "exec_items": exec_items, "param_arg": param_arg, "ptr_dtype": ptr}
  by_key = {lay.key: lay for lay in KNOWN}
  if n == 6 and isinstance(cj.args[1], list):  # the jit_cache list; its entries are checked by the converter
    return by_key["exec-items"], cj
  if n == 4 and _is(cj.args[1], "UOp") and not exec_items:
    key = {(False, True): "linear-index", (True, True): "linear-param", (True, False): "linear-014"}.get((param_arg, ptr))
    if key is not None:
      return by_key[key], cj

  # closest known layout: fewest differing features
  def diff(lay):
    return [k for k, v in feats.items() if getattr(lay, k) != v]

  best = min(KNOWN, key=lambda lay: len(diff(lay)))
  what = {
    "captured_fields": f"CapturedJit has {n} fields, not {best.captured_fields}",
    "exec_items": "ExecItem entries " + ("present" if exec_items else "absent"),
    "param_arg": "ParamArg " + ("present" if param_arg else "absent"),
    "ptr_dtype": "PtrDType " + ("present" if ptr else "absent"),
  }
  why = "; ".join(what[k] for k in diff(best)) or "its program is not a LINEAR UOp / jit_cache list"
  raise LayoutError(f"unknown TinyJit layout; the closest known is the {best.describe()}, which differs: {why}")
