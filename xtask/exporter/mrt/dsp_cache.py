"""Content-hash cache of the Hexagon build steps (mrt/dsp.py): kernel objects, per-kernel libraries, the helper and
runner objects, the model library and tinygrad's mock executables.

An entry's key is the SHA-256 of everything its bytes depend on (the compiler's identity `clang-19 --version`, the
flags, the source or input objects, the linker script), so a hit is the same bytes a fresh build would give and nothing
needs invalidating: a changed source, flag or compiler is a different key. Entries live under
`target/dsp-cache/<kind>/<key>` (or `$MODELRT_DSP_CACHE`), written to a temporary name and renamed, so parallel
exports never read a half-written entry. A cache that cannot be written only costs the rebuild.
"""

import hashlib
import os
import subprocess
import threading
from collections.abc import Callable

CACHE_ENV = "MODELRT_DSP_CACHE"
_REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..")


class Stats:
  """Hits and builds of this process (for the exporter's log line)."""

  lock = threading.Lock()
  hits = 0
  builds = 0


def cache_dir() -> str:
  return os.environ.get(CACHE_ENV) or os.path.normpath(os.path.join(_REPO, "target", "dsp-cache"))


_clang_ids: dict[str, bytes] = {}


def compiler_id(clang: str) -> bytes:
  """`clang --version` (part of every key: another compiler build is another entry)."""
  if clang not in _clang_ids:
    try:
      _clang_ids[clang] = subprocess.run([clang, "--version"], capture_output=True).stdout
    except FileNotFoundError:
      _clang_ids[clang] = b"missing"
  return _clang_ids[clang]


def key(kind: str, parts: list[bytes]) -> str:
  h = hashlib.sha256(kind.encode())
  for p in parts:
    h.update(len(p).to_bytes(8, "little"))
    h.update(p)
  return h.hexdigest()


def cached(kind: str, parts: list[bytes], build: Callable[[], bytes]) -> bytes:
  """The bytes `build()` gives for inputs `parts`: from the cache when an entry exists, else built and stored."""
  path = os.path.join(cache_dir(), kind, key(kind, parts))
  try:
    with open(path, "rb") as f:
      data = f.read()
    with Stats.lock:
      Stats.hits += 1
    return data
  except OSError:
    pass
  data = build()
  with Stats.lock:
    Stats.builds += 1
  tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
  try:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(tmp, "wb") as f:
      f.write(data)
    os.replace(tmp, path)
  except OSError:
    pass
  return data
