"""Compiled libraries windowkeeper uses where they are installed (design §11).

``orjson`` is a core dependency with wheels for Linux, macOS and Windows (x86_64 and
arm64, CPython 3.11-3.14); it is imported through here so a platform or interpreter
without a wheel (a new CPython before its release, PyPy) takes the standard library's
path with the same results. ``WINDOWKEEPER_PURE_PYTHON_JSON=1`` forces that path (CI
runs the tests that compare both with it).
"""

from __future__ import annotations

import os
from types import ModuleType

FORCE_STDLIB_JSON = "WINDOWKEEPER_PURE_PYTHON_JSON"

orjson: ModuleType | None
if os.environ.get(FORCE_STDLIB_JSON, "") not in ("", "0"):
    orjson = None
else:
    try:
        import orjson
    except ImportError:  # no wheel here: the standard library's path
        orjson = None

__all__ = ["FORCE_STDLIB_JSON", "orjson"]
