"""The kernel-metadata records of manifest.json checked against manifest_schema.json, which `cargo xtask manifest-schema`
generates from the Rust types that read them (xtask/src/manifest/meta_schema.rs; hal's bundle records). `write_out` checks every
kernel before it writes a manifest, so a record that drifted from the Rust side (a field added, renamed, missing, or a
value out of its Rust type's range) fails the export that wrote it instead of the bundle build that reads it.
"""

import json
import os

SCHEMA_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "manifest_schema.json")

_INT_RANGES = {
  "u8": (0, 2**8 - 1),
  "u16": (0, 2**16 - 1),
  "u32": (0, 2**32 - 1),
  "u64": (0, 2**64 - 1),
  "i8": (-(2**7), 2**7 - 1),
  "i16": (-(2**15), 2**15 - 1),
  "i32": (-(2**31), 2**31 - 1),
  "i64": (-(2**63), 2**63 - 1),
}


class SchemaDrift(Exception):
  """A record the exporter wrote does not match the Rust declaration of it."""


def load_schema(path: str = SCHEMA_PATH) -> dict:
  with open(path) as f:
    return json.load(f)["kernel_meta"]


def _check_value(where: str, ty, v):
  if isinstance(ty, dict):
    if not isinstance(v, list):
      raise SchemaDrift(f"{where}: expected a list of {ty['list']}, got {type(v).__name__}")
    if (n := ty.get("max_len")) is not None and len(v) > n:
      raise SchemaDrift(f"{where}: {len(v)} entries, the Rust type holds at most {n}")
    for i, x in enumerate(v):
      _check_value(f"{where}[{i}]", ty["list"], x)
    return
  if ty in _INT_RANGES:
    lo, hi = _INT_RANGES[ty]
    if isinstance(v, bool) or not isinstance(v, int):
      raise SchemaDrift(f"{where}: expected an integer ({ty}), got {v!r}")
    if not lo <= v <= hi:
      raise SchemaDrift(f"{where}: {v} does not fit {ty}")
  elif ty == "bool":
    if not isinstance(v, bool):
      raise SchemaDrift(f"{where}: expected a bool, got {v!r}")
  elif ty == "str":
    if not isinstance(v, str):
      raise SchemaDrift(f"{where}: expected a string, got {v!r}")
  else:
    raise SchemaDrift(f"{where}: unknown schema type {ty!r}")


def check_meta(where: str, meta: dict, schema: dict):
  """Raise SchemaDrift unless `meta` is one record ({"kind": {fields}}) whose fields are exactly the schema's, in range."""
  if not isinstance(meta, dict) or len(meta) != 1:
    raise SchemaDrift(f"{where}: meta must be one {{kind: fields}} record, got {meta!r}")
  ((kind, fields),) = meta.items()
  if kind not in schema:
    raise SchemaDrift(f"{where}: meta kind {kind!r} is not one of {sorted(schema)}")
  want = schema[kind]
  if not isinstance(fields, dict):
    raise SchemaDrift(f"{where}: {kind} meta must be an object")
  extra, missing = sorted(set(fields) - set(want)), sorted(set(want) - set(fields))
  if extra or missing:
    raise SchemaDrift(f"{where}: {kind} meta fields differ from the Rust declaration: extra {extra}, missing {missing}")
  for name, ty in want.items():
    _check_value(f"{where}: {kind}.{name}", ty, fields[name])


def check_kernels(kernels: list, schema: dict | None = None):
  """Check the meta record of every kernel of a manifest."""
  schema = load_schema() if schema is None else schema
  for i, k in enumerate(kernels):
    check_meta(f"kernel {i} ({k.get('name')})", k.get("meta"), schema)
