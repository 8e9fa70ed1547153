"""Device roles of a `--tinygrad` program: one part of a bundle spanning several devices (docs/pipeline.md, "Device roles").

`build(devices=...)` receives a mapping from role name to the tinygrad device string to place that role's tensors on,
and may return `placement` (input or state name -> role; unplaced names go on the first role). A script moves values
between roles with `.to(devices[ROLE])`. A single-target compile passes a mapping that gives every role the one device
(`EveryRole`), so the same script compiles both ways.

A multi-device compile (`--target ROLE=TARGET ...`) runs the exporter once per role R. The role view of the script:
- places R's tensors on the export device (Device.DEFAULT) and every other role's on a host CPU instance (`CPU:N`), where
  they are built once, lazily, and never realized inside the capture;
- numbers every `.to()` that moves a value from one role to another, in the order the script makes them (the same in
  every role's export): a move onto R is replaced by the part input `x:K`, a move off R returns the value as the part
  output `x:K`;
- draws the part's steps from the script's seeded steps, the values of its inputs `x:K` taken from tinygrad's unjitted
  run of the whole program on the host CPU (one CPU instance per role).
The rest of the export (capture, checks, manifest) is the single-target one, on the role view's build dict.
"""

import inspect
from dataclasses import dataclass

import numpy as np

from mrt.targets import ExportError

CROSS = "x:"  # part tensors that cross devices: x:0, x:1, ... (not a Python identifier, so no script name clashes)


@dataclass(frozen=True)
class RoleContext:
  role: str  # the role this export compiles
  roles: tuple  # every role, in --target order (the first takes what is not placed)


_CTX: RoleContext | None = None


def set_context(role: str | None, roles: str | None):
  """`export.py --role R --roles A,B`: compile role R of a multi-device bundle."""
  global _CTX
  if role is None and roles is None:
    _CTX = None
    return
  names = tuple(r for r in (roles or "").split(",") if r)
  if role is None or role not in names or len(set(names)) != len(names):
    raise ExportError(f"--role must be one of --roles (distinct names), got --role {role} --roles {roles}")
  _CTX = RoleContext(role, names)


class EveryRole(dict):
  """Single-target compile: every role's tensors go on the one device."""

  def __init__(self, device: str):
    super().__init__()
    self.device = device

  def __missing__(self, key):
    return self.device

  def get(self, key, default=None):
    return self.device


class _Roles(dict):
  """The devices of a multi-device compile's roles; a role no --target names is a clear error."""

  def __missing__(self, key):
    raise ExportError(f"build() places tensors on role '{key}', which no --target names (roles: {', '.join(self)})")


def call_build(build, spec: str) -> dict:
  """build(devices=...) when it takes the argument (else build()), or the role view in a multi-device compile."""
  from tinygrad import Device

  takes = "devices" in inspect.signature(build).parameters
  if _CTX is None:
    return build(devices=EveryRole(Device.DEFAULT)) if takes else build()
  if not takes:
    raise ExportError(
      f"{spec}() takes no 'devices' argument: a multi-device compile (--target ROLE=TARGET) needs build(devices=...) to place each role's tensors"
    )
  return _RoleView(build, spec, _CTX).build_dict()


def _np_dtype(dt):
  from mrt.capture import NUMPY_DTYPES

  if (n := NUMPY_DTYPES.get(dt)) is None:
    raise ExportError(f"a value crossing devices has dtype {dt}, which a bundle tensor cannot hold")
  return n


class _Crossings:
  """While active, number the moves between roles (Tensor.to) and substitute or record them."""

  def __init__(self, role_of_dev: dict, role: str | None, incoming: dict | None, record: bool = False):
    self.role_of_dev, self.role, self.incoming, self.record = role_of_dev, role, incoming, record
    self.seen: list = []  # (k, from role, to role, tensor)
    self.values: dict = {}  # k -> numpy value (record=True)

  def __enter__(self):
    from tinygrad import Device, Tensor

    self.orig = Tensor.to
    orig, me = self.orig, self

    def to(t, device=None):
      if not isinstance(device, str):
        return orig(t, device)
      src, dst = me.role_of_dev.get(str(t.device)), me.role_of_dev.get(Device.canonicalize(device))
      if src is None or dst is None or src == dst:
        return orig(t, device)
      k = len(me.seen)
      me.seen.append((k, src, dst, t))
      if me.record:
        me.values[k] = t.numpy().copy()
      if dst == me.role and me.incoming is not None:
        p = me.incoming.get(f"{CROSS}{k}")
        if p is None or tuple(p.shape) != tuple(t.shape) or p.dtype != t.dtype:
          raise ExportError(
            f"the script's move {CROSS}{k} ({src} -> {dst}) differs between the roles' exports: the program must move the same values every call"
          )
        return p
      return orig(t, device)

    Tensor.to = to
    return self

  def __exit__(self, *exc):
    from tinygrad import Tensor

    Tensor.to = self.orig


class _RoleView:
  def __init__(self, build, spec: str, ctx: RoleContext):
    from tinygrad import Device

    self.build, self.spec, self.ctx = build, spec, ctx
    self.devices = _Roles({r: (Device.DEFAULT if r == ctx.role else f"CPU:{i + 1}") for i, r in enumerate(ctx.roles)})
    self.full = build(devices=self.devices)
    if not isinstance(self.full, dict) or not isinstance(self.full.get("inputs"), dict):
      raise ExportError(f"{spec}() must return a dict with 'fn' and 'inputs'")
    self.placement = dict(self.full.get("placement") or {})
    names = set(self.full["inputs"]) | set(self.full.get("state", {}))
    for k, r in self.placement.items():
      if k not in names:
        raise ExportError(f"{spec}(): placement names '{k}', which is neither an input nor a state")
      if r not in ctx.roles:
        raise ExportError(f"{spec}(): placement puts '{k}' on role '{r}', which no --target names (roles: {', '.join(ctx.roles)})")
    self.role_of_dev = {Device.canonicalize(d): r for r, d in self.devices.items()}

  def role_of(self, name: str) -> str:
    return self.placement.get(name, self.ctx.roles[0])

  def mine(self, name: str) -> bool:
    return self.role_of(name) == self.ctx.role

  def _others(self) -> dict:
    """The other roles' inputs and state, built once on their CPU instances (never part of this role's program)."""
    from tinygrad import Tensor

    host = set(self.full.get("host_inputs", ()))
    out = {}
    for k, v in {**self.full.get("state", {}), **self.full["inputs"]}.items():
      if self.mine(k):
        continue
      out[k] = Tensor(v, device="NPY") if k in host else Tensor(v, device=self.devices[self.role_of(k)]).contiguous().realize()
    return out

  def _outputs_of(self, ret) -> list:
    from mrt.script import as_list

    outs = as_list(ret)
    names = list(self.full.get("outputs") or [f"output{i}" for i in range(len(outs))])
    if len(names) != len(outs):
      raise ExportError(f"build() names {len(names)} outputs but fn returns {len(outs)}")
    return list(zip(names, outs))

  def build_dict(self) -> dict:
    from tinygrad import Tensor

    ctx, full, others = self.ctx, self.full, self._others()
    own_inputs = {k: v for k, v in full["inputs"].items() if self.mine(k)}
    own_state = {k: v for k, v in full.get("state", {}).items() if self.mine(k)}
    order = {r: i for i, r in enumerate(ctx.roles)}
    # A dry run (lazy: nothing is realized) finds this role's outputs and the moves onto and off it.
    host = set(full.get("host_inputs", ()))
    probe = {k: (Tensor(v, device="NPY") if k in host else Tensor(v).contiguous().realize()) for k, v in {**own_state, **own_inputs}.items()}
    with _Crossings(self.role_of_dev, None, None) as c:
      ret = full["fn"](**others, **probe)
    outs = [n for n, t in self._outputs_of(ret) if self.role_of_dev.get(str(t.device)) == ctx.role]
    incoming, leaving = {}, []
    for k, src, dst, t in c.seen:
      if dst == ctx.role:
        if order[src] > order[dst]:
          raise ExportError(f"role {dst} reads {CROSS}{k} from role {src}, which comes after it in --target order: give --target {src}=... first")
        incoming[f"{CROSS}{k}"] = np.zeros(tuple(int(s) for s in t.shape), _np_dtype(t.dtype))
      elif src == ctx.role:
        leaving.append(f"{CROSS}{k}")
    if clash := [n for n in outs if n.startswith(CROSS)]:
      raise ExportError(f"output names starting with '{CROSS}' are reserved for values crossing devices: {clash}")
    role_of_dev, role = self.role_of_dev, ctx.role
    view = self

    def fn(**kw):
      mine = {k: v for k, v in kw.items() if not k.startswith(CROSS)}
      with _Crossings(role_of_dev, role, {k: v for k, v in kw.items() if k.startswith(CROSS)}) as cr:
        ret = full["fn"](**others, **mine)
      own = [t for n, t in view._outputs_of(ret) if role_of_dev.get(str(t.device)) == role]
      return tuple(own + [t.contiguous() for _, src, _, t in cr.seen if src == role])

    return {
      "fn": fn,
      "inputs": {**own_inputs, **incoming},
      "state": own_state,
      "host_inputs": [k for k in full.get("host_inputs", ()) if self.mine(k)],
      "outputs": outs + leaving,
      "_steps": lambda seed, n: self.steps(seed, n, list(own_inputs), list(incoming)),
    }

  def steps(self, seed: int, n: int, own: list, incoming: list) -> list:
    """The script's seeded steps for this role: its own inputs, and the values moved onto it from tinygrad's unjitted
    run of the whole program on the host CPU."""
    from mrt.script import draw_steps

    full_steps = draw_steps(self.full, seed, n)
    values = crossing_values(self.build, self.ctx.roles, full_steps) if incoming else [{} for _ in full_steps]
    return [{**{k: s[k] for k in own}, **{k: v[k] for k in incoming}} for s, v in zip(full_steps, values)]


def crossing_values(build, roles: tuple, steps: list) -> list:
  """Per step, x:K -> the value the whole program moves between roles, from an unjitted run on the host CPU (role i on
  CPU:i+1), from the initial state."""
  from tinygrad import Device, Tensor

  devices = _Roles({r: f"CPU:{i + 1}" for i, r in enumerate(roles)})
  full = build(devices=devices)
  placement = dict(full.get("placement") or {})
  host = set(full.get("host_inputs", ()))

  def dev(k):
    return devices[placement.get(k, roles[0])]

  state = {k: Tensor(v, device=dev(k)).contiguous().realize() for k, v in full.get("state", {}).items()}
  role_of_dev = {Device.canonicalize(d): r for r, d in devices.items()}
  out = []
  for step in steps:
    feed = {k: (Tensor(v, device="NPY") if k in host else Tensor(v, device=dev(k)).realize()) for k, v in step.items()}
    with _Crossings(role_of_dev, None, None, record=True) as c:
      ret = full["fn"](**state, **feed)
      from mrt.script import as_list

      Tensor.realize(*as_list(ret), *state.values())
    out.append({f"{CROSS}{k}": v for k, v in c.values.items()})
  return out
