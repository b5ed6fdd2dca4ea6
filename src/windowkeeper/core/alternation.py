"""Regular-expression alternations of literal words, nested by shared prefixes.

Why: an alternation of plain words makes the engine try every word at every position
where one may start; nested (``a(?:utopep8|wk)``), a position is rejected after one
comparison. Gates that run over every text of a compaction (the secret hints, the shell
programs that may write or read) use it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable


def word_alternation(words: Iterable[str]) -> str:
    """A pattern (no capturing group) matching exactly one of ``words``, nested by shared
    prefixes (``a(?:utopep8|wk)``): the engine rejects a position after one comparison
    instead of one per word, which matters for a gate run over every command line."""
    return _nested(sorted(set(words)))


def _nested(words: list[str]) -> str:
    by_first: dict[str, list[str]] = {}
    for word in words:
        if word:
            by_first.setdefault(word[0], []).append(word[1:])
    parts = []
    for first, rests in by_first.items():
        tail = "" if rests == [""] else _nested(rests)
        if tail and "" in rests:
            tail = f"(?:{tail})?"
        parts.append(re.escape(first) + tail)
    return parts[0] if len(parts) == 1 else "(?:" + "|".join(parts) + ")"
