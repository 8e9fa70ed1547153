"""Run the exporter's unit tests in two shards so `cargo xtask ci` can run them as two processes at once.

`python -m tests.shard heavy` runs the classes listed in HEAVY; `python -m tests.shard rest` runs every other test
that `unittest discover` finds (so a new test file lands in `rest` without editing this list). Exit status 1 if any
test failed or errored, as `python -m unittest` does.
"""

import sys
import unittest

# The one class that takes about half of the exporter tests' time (many small exports).
HEAVY = {"CompileCorrectnessTests"}


def _flatten(suite):
  for t in suite:
    if isinstance(t, unittest.TestSuite):
      yield from _flatten(t)
    else:
      yield t


def main(argv):
  if len(argv) != 2 or argv[1] not in ("heavy", "rest"):
    print("usage: python -m tests.shard heavy|rest", file=sys.stderr)
    return 2
  here = __file__.rsplit("/", 1)[0]
  everything = unittest.defaultTestLoader.discover(here, top_level_dir=here.rsplit("/", 1)[0])
  want_heavy = argv[1] == "heavy"
  picked = unittest.TestSuite(t for t in _flatten(everything) if (type(t).__name__ in HEAVY) == want_heavy)
  if picked.countTestCases() == 0:
    print(f"error: shard {argv[1]} has no tests", file=sys.stderr)
    return 1
  result = unittest.TextTestRunner(verbosity=1).run(picked)
  return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
  sys.exit(main(sys.argv))
