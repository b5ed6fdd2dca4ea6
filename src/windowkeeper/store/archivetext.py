"""The text of the archive: what recall returns, what search indexes and matches, and
the one-line snippets of its hits (shared by every backend).

What must hold: the memory backend and the SQL indexes split text into the same terms, and
no snippet shows an unmasked secret unless the caller asked to reveal it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..core.messages import call_arguments, call_id, call_name, message_text, tool_calls
from ..summary.redact import redact

__all__ = ("query_terms", "render_archived", "snippet", "term_score")


# Letters and digits only: FTS5's unicode61 tokenizer and the PostgreSQL index (which
# replaces everything else by spaces) split text the same way.
_TERM = re.compile(r"[^\W_]+", re.UNICODE)


def query_terms(query: str) -> list[str]:
    """Lower-cased word terms of a search query; every backend matches all of them."""
    return [t.lower() for t in _TERM.findall(query)][:16]


def term_score(text: str, terms: Sequence[str]) -> float:
    """Memory-backend relevance: 0 unless every term occurs as a word; else occurrences."""
    words: dict[str, int] = {}
    for word in _TERM.findall(text.lower()):
        words[word] = words.get(word, 0) + 1
    if not terms or any(t not in words for t in terms):
        return 0.0
    return sum(words[t] for t in terms) / (1 + len(text) / 2000)


def snippet(text: str, terms: Sequence[str], width: int = 160, *, reveal: bool = False) -> str:
    """A one-line excerpt around the first occurrence of a query term; secrets masked
    (in the whole text first, so no cut can leave half a key) unless ``reveal``."""
    flat = " ".join((text if reveal else redact(text)).split())
    lowered = flat.lower()
    found = [i for i in (lowered.find(t) for t in terms) if i >= 0]
    start = max(0, min(found) - width // 3) if found else 0
    piece = flat[start : start + width]
    return ("…" if start else "") + piece + ("…" if start + width < len(flat) else "")


def _call_line(call: Mapping[str, Any]) -> str:
    return f"{call_name(call)}({call_arguments(call)})"


def render_archived(kind: str, message: Mapping[str, Any], call: Mapping[str, Any] | None) -> str:
    """The text recall returns (and search indexes) for an archived original.

    A tool output starts with the ``name(arguments)`` line of the call that produced it;
    a message (or shortened arguments) is its role, text and tool calls.
    """
    body = message_text(message)
    if kind == "tool_output":
        head = f"tool output of {_call_line(call)}" if call else "tool output"
        return f"{head}\n{body}"
    lines = [f"{message.get('role', '?')}: {body}".rstrip()]
    lines += [f"  tool call {call_id(c)}: {_call_line(c)}" for c in tool_calls(message)]
    return "\n".join(lines)
