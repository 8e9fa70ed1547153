"""The ``modelrt`` console command: the Rust binary's command line (run, info, verify, bench, disasm, ...) plus
``compile`` and ``convert``, all parsed and run by the extension (``modelrt._native._main``). ``compile`` and
``convert`` need the ``compile`` extra; without it they say which extra to install."""

import signal
import sys

from ._compile import missing_compile_extra, native_call

COMPILER_COMMANDS = ("compile", "convert")


def _subcommand(argv: list[str]) -> str | None:
  """The first argument that is not an option (the subcommand), if any."""
  return next((a for a in argv if not a.startswith("-")), None)


def main(argv: list[str] | None = None) -> int:
  """Run ``modelrt ARGS...`` (``argv`` defaults to ``sys.argv[1:]``); returns the exit status."""
  args = sys.argv[1:] if argv is None else list(argv)
  if _subcommand(args) in COMPILER_COMMANDS:
    missing = missing_compile_extra()
    if missing:
      sys.stderr.write(
        f"error: modelrt {_subcommand(args)} needs the compiler, which is not installed ({', '.join(missing)} missing): "
        "install it with `pip install 'modelrt[compile]'`\n"
      )
      return 1
  # As the binary: Ctrl-C ends the command (the extension runs with the GIL released, where Python's own handler
  # would only set a flag).
  if argv is None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
  sys.stdout.flush()
  return native_call("_main", ["modelrt", *args])
