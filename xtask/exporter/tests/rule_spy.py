"""A test helper: record the options a kernel rule returns while a compile runs."""

import contextlib


@contextlib.contextmanager
def recording(module, name: str):
  """Replace `module.name` (a rule's `rule_opts`) with a wrapper that appends every non-None result to the yielded
  list; restored on exit."""
  saved, taken = getattr(module, name), []

  def spy(*args):
    opts = saved(*args)
    if opts is not None:
      taken.append(opts)
    return opts

  setattr(module, name, spy)
  try:
    yield taken
  finally:
    setattr(module, name, saved)
