"""Run the exporter's unit tests in several processes so `cargo xtask ci` can run them at once.

`python -m tests.shard claim DIR` (what CI runs, one per core, all with the same DIR): each process takes test classes
one at a time from the same ordered list — the heaviest class first, then the rest in `unittest discover` order — by
creating `DIR/<module>.<class>` exclusively, so the processes share the work whatever each class costs, and every class
runs exactly once. `python -m tests.shard heavy` runs the classes listed in HEAVY and `python -m tests.shard rest` every
other test (a fixed split, for running by hand). A new test file is picked up without editing this list. Exit status 1
if any test failed or errored, as `python -m unittest` does.
"""

import os
import sys
import unittest

# The one class that takes about half of the exporter tests' time (many small exports): claimed first.
HEAVY = {"CompileCorrectnessTests"}


def _flatten(suite):
  for t in suite:
    if isinstance(t, unittest.TestSuite):
      yield from _flatten(t)
    else:
      yield t


def _everything():
  here = __file__.rsplit("/", 1)[0]
  return list(_flatten(unittest.defaultTestLoader.discover(here, top_level_dir=here.rsplit("/", 1)[0])))


def _classes(tests):
  """[(key, [tests])] per test class, the HEAVY classes first, then discovery order."""
  groups = {}
  for t in tests:
    groups.setdefault(f"{type(t).__module__}.{type(t).__name__}", []).append(t)
  return sorted(groups.items(), key=lambda kv: kv[0].rsplit(".", 1)[1] not in HEAVY)


def _claim(directory, key):
  try:
    os.close(os.open(os.path.join(directory, key), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
  except FileExistsError:
    return False
  return True


def main(argv):
  if len(argv) == 3 and argv[1] == "claim":
    os.makedirs(argv[2], exist_ok=True)
    ran = 0
    ok = True
    for key, tests in _classes(_everything()):
      if _claim(argv[2], key):
        result = unittest.TextTestRunner(verbosity=1).run(unittest.TestSuite(tests))
        ok &= result.wasSuccessful()
        ran += result.testsRun
    print(f"shard: {ran} tests in the classes this process claimed", file=sys.stderr)
    return 0 if ok else 1
  if len(argv) != 2 or argv[1] not in ("heavy", "rest"):
    print("usage: python -m tests.shard claim DIR | heavy | rest", file=sys.stderr)
    return 2
  want_heavy = argv[1] == "heavy"
  picked = unittest.TestSuite(t for t in _everything() if (type(t).__name__ in HEAVY) == want_heavy)
  if picked.countTestCases() == 0:
    print(f"error: shard {argv[1]} has no tests", file=sys.stderr)
    return 1
  result = unittest.TextTestRunner(verbosity=1).run(picked)
  return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
  sys.exit(main(sys.argv))
