"""Transcript files: one JSON object a line, read with line numbers for errors.

Agents append to their transcripts while they run, so an unfinished last line (no
newline after it, not yet valid JSON) is skipped with a warning instead of failing the
whole file; a broken line anywhere else is an error naming it.
"""

from __future__ import annotations

import logging
from typing import Any

from ..core.errors import InvalidMessagesError
from ..core.jsonsafe import loads

__all__ = ("json_objects",)

log = logging.getLogger("windowkeeper.adapters.jsonl")


def json_objects(text: str, what: str) -> list[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for every non-empty line; ``what`` names the expected
    object in errors (e.g. ``"a Claude Code event"``)."""
    lines = text.splitlines()
    objects: list[tuple[int, dict[str, Any]]] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            value = loads(line, f"line {number}")  # also: over-deep nesting, huge numbers
        except InvalidMessagesError:
            if number == len(lines) and not text.endswith("\n"):
                log.warning("line %d: unfinished last line skipped (still being written?)", number)
                continue
            raise
        if not isinstance(value, dict):
            raise InvalidMessagesError(f"line {number}", f"expected {what} object")
        objects.append((number, value))
    return objects
