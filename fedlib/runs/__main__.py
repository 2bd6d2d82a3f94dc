"""``python -m fedlib.runs export|status|prune|compact|confirm``: the published store's
command line, :mod:`fedlib.runs.cli` (this module only starts it, so that nothing the
command line handles is defined in a module that runs as ``__main__``)."""

from __future__ import annotations

import sys

from fedlib.runs.cli import main
from fedlib.runs.errors import DEBUG_FLAG, one_line_warnings

__all__ = ["main"]

if __name__ == "__main__":
    if DEBUG_FLAG not in sys.argv[1:]:
        one_line_warnings()
    raise SystemExit(main())
