"""What a conversion made from each original, for the way back (:mod:`.anthropic_write`,
:mod:`.responses`): a message that is still the very object the conversion made is that
original's conversion, so the original is sent without converting it again to compare.

What must hold: ``made`` is the conversion's own output, none of it edited since
(messages are replaced, never edited); the record under ``key`` (a dict or list the
conversion put there) is shared by a changed copy of a message, never by another
original's messages.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


class Made:
    """The messages a conversion made, found by the private record under ``key`` that
    each carries for its original; indexed on first use. ``made`` holds its messages and
    their records, so their ids stay theirs while it is alive."""

    def __init__(self, made: Sequence[Mapping[str, Any]], key: str) -> None:
        self.made = made
        self.key = key
        self._at: dict[int, int] | None = None

    def derived(self, record: object, span: int = 1) -> Sequence[Mapping[str, Any]]:
        """The ``span`` messages the conversion made from ``record``'s original (empty:
        not made there, or fewer than ``span`` of them)."""
        at = self.at(record, span)
        return self.made[at : at + span] if at >= 0 else ()

    def at(self, record: object, span: int = 1) -> int:
        """Where in ``made`` the ``span`` messages made from ``record``'s original start
        (-1: not made there, or fewer than ``span`` of them)."""
        at = self.index().get(id(record), -1)
        return at if at + span <= len(self.made) else -1

    def index(self) -> dict[int, int]:
        """Where in ``made`` the messages made from each original start, by the id of the
        record they carry (built on first use)."""
        if self._at is None:  # ids of live objects (``made`` holds them) are theirs alone
            key = self.key
            self._at = {id(m[key]): at for at, m in enumerate(self.made) if key in m}
        return self._at
