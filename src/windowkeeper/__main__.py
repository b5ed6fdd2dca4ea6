"""``python -m windowkeeper``: the same command line as the ``windowkeeper`` script."""

from __future__ import annotations

from .cli.app import main

if __name__ == "__main__":
    raise SystemExit(main())
