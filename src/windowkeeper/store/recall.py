"""The ``recall`` tool: lets the model fetch what a compaction archived (design §7).

Instead of re-running a command whose output was pruned, the agent calls
``recall(handle=…)`` with the ``(ref wk…)`` handle from a stub, or ``recall(query=…)`` to
search everything this session (and its rotation ancestors) archived. Answers are bounded
in size and end with a note saying how to get the rest. Secrets (API keys, passwords,
tokens) are masked in answers unless the call passes ``reveal: true``; the archive keeps
the originals.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..core.errors import StoreError
from ..core.messages import ToolSchema
from ..summary.redact import redact
from .base import ArchiveEntry, SearchHit, SessionStore
from .session import lineage, resolve_handle

__all__ = ("DEFAULT_MAX_CHARS", "RECALL_TOOL", "RecallTool", "render_entry", "render_hits")

RECALL_TOOL = "recall"
DEFAULT_MAX_CHARS = 8_000

_DESCRIPTION = (
    "Fetch context that was compacted away. Pass `handle` (the wk… reference shown in a "
    "pruned stub such as '(ref wk1a2b3c4d5e)') to get the original text, or `query` to "
    "search all archived tool outputs and summarized messages of this session. Use it "
    "instead of re-running a command whose output was pruned."
)


class RecallTool:
    """An :class:`~windowkeeper.engine.base.ToolProvider` over one stored session's archive.

    ``session_id`` may be reassigned after a rotation; ancestors are searched too.
    """

    def __init__(
        self,
        store: SessionStore,
        session_id: str,
        *,
        max_chars: int = DEFAULT_MAX_CHARS,
        default_limit: int = 5,
    ) -> None:
        self.store = store
        self.session_id = session_id
        self.max_chars = max(500, max_chars)
        self.default_limit = default_limit

    def schemas(self) -> list[ToolSchema]:
        return [
            {
                "type": "function",
                "function": {
                    "name": RECALL_TOOL,
                    "description": _DESCRIPTION,
                    "parameters": {
                        "type": "object",
                        "properties": {
                            "handle": {
                                "type": "string",
                                "description": "An archive handle such as wk1a2b3c4d5e.",
                            },
                            "offset": {
                                "type": "integer",
                                "description": "With handle: character offset to read from.",
                            },
                            "query": {
                                "type": "string",
                                "description": "Words to search for in the archive.",
                            },
                            "limit": {
                                "type": "integer",
                                "description": "With query: maximum number of hits (1-20).",
                            },
                            "reveal": {
                                "type": "boolean",
                                "description": "Show secrets (keys, passwords) unmasked; "
                                "only when the user asked for them.",
                            },
                        },
                        "additionalProperties": False,
                    },
                },
            }
        ]

    def call(self, name: str, arguments: Mapping[str, Any]) -> str | None:
        if name != RECALL_TOOL:
            return None
        handle = arguments.get("handle")
        query = arguments.get("query")
        reveal = arguments.get("reveal") is True
        try:
            if isinstance(handle, str) and handle.strip():
                offset = _int(arguments.get("offset"), 0)
                return self.by_handle(handle.strip(), offset, reveal=reveal)
            if isinstance(query, str) and query.strip():
                limit = min(20, max(1, _int(arguments.get("limit"), self.default_limit)))
                return self.search(query, limit, reveal=reveal)
        except StoreError as exc:
            return f"error: recall failed: {exc}"
        return "error: recall needs a `handle` (e.g. wk1a2b3c4d5e) or a `query`"

    def by_handle(self, handle: str, offset: int = 0, *, reveal: bool = False) -> str:
        """The archived original, one bounded window of it starting at ``offset`` (secrets
        masked unless ``reveal``)."""
        entry = resolve_handle(self.store, self.session_id, handle)
        if entry is None:
            return f"error: no archived item with handle {handle!r} in this session"
        return render_entry(entry, offset, self.max_chars, reveal=reveal)

    def search(self, query: str, limit: int, *, reveal: bool = False) -> str:
        """The best hits with handles and snippets (secrets masked unless ``reveal``),
        within the size bound."""
        hits: list[SearchHit] = []
        for record in lineage(self.store, self.session_id):
            hits += self.store.search_archive(
                query, session_id=record.id, limit=limit, reveal=reveal
            )
        hits.sort(key=lambda h: -h.score)
        return render_hits(hits[:limit], query, self.max_chars)


def render_entry(entry: ArchiveEntry, offset: int, max_chars: int, *, reveal: bool = False) -> str:
    """One bounded window of an archived original from ``offset``, with a header and, when
    more follows, a note saying how to read the next part.

    Secrets are masked unless ``reveal``: the whole text first (so no window boundary can
    leave half a key), and offsets then count characters of the masked text.
    """
    text = entry.text if reveal else redact(entry.text)
    offset = min(max(0, offset), len(text))
    # Leave room for the header and the continuation note inside the bound.
    end = min(len(text), offset + max(500, max_chars) - 300)
    header = f"[archived {entry.handle} · {entry.kind} · chars {offset}-{end} of {len(text)}]"
    body = text[offset:end]
    if end >= len(text):
        return f"{header}\n{body}"
    place: dict[str, object] = {"handle": entry.handle, "offset": end}
    more = json.dumps(place | {"reveal": True} if reveal else place)
    note = f"[truncated: {len(text) - end} more chars; call recall with {more} for the next part]"
    return f"{header}\n{body}\n{note}"


def render_hits(hits: list[SearchHit], query: str, max_chars: int) -> str:
    """Search hits with handles and snippets, within ``max_chars``."""
    if not hits:
        return f"no archived item matches {query!r}"
    lines = [f"{len(hits)} archived item(s) match {query!r}:"]
    footer = 'Call recall with {"handle": "<handle>"} for the full text.'
    used = len(lines[0]) + len(footer) + 120
    for shown, hit in enumerate(hits):
        line = f"- {hit.handle} ({hit.kind}): {hit.snippet}"
        if used + len(line) + 1 > max_chars:
            lines.append(f"[{len(hits) - shown} more hit(s) not shown; narrow the query]")
            break
        lines.append(line)
        used += len(line) + 1
    lines.append(footer)
    return "\n".join(lines)


def _int(value: object, default: int) -> int:
    if isinstance(value, bool):
        return default
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return default
