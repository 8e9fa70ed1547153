"""``python -m modelrt``: the ``modelrt`` command."""

from ._cli import main

raise SystemExit(main())
