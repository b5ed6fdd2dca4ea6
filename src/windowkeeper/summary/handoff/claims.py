"""Work items' titles, from the outputs that showed them (SPEC §6 v3 "work items").

A tracker look-up or listing (``bd show X``, ``gh issue view 12``, ``bd list``) shows an
item's title; a tracker's own confirmation of a change does not. What defines the work
(the spec excerpts) is :mod:`.specs`' business.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

from ...analysis.events import ToolEvent
from ...analysis.facts import collapse

# After an id: tags such as ``[● P2] [task]``, a separator, the title up to a run of
# spaces, a bracket, a priority dot, a dependency note or the end of the line.
_TITLE_AFTER_ID = (
    r"(?![\w.-])\s*(?:\[[^\]\n]*\]\s*)*(?:[:·—–]|\s-)\s+([^\[\n]+?)"
    r"(?:\s{2,}|\s[\[●]|\s\((?:blocked|blocks|depends|parent)\b|$)"
)
_TITLE_TAIL = re.compile(_TITLE_AFTER_ID, re.MULTILINE)
_GH_VIEW = re.compile(r"\s*(?:gh|glab)\s+(?:issue|pr|mr)\s+view\s+#?(\d+)")
_GH_TITLE = re.compile(r"^title:\s+(.+)$", re.M)
# A tracker's look-ups and listings show titles; its changes echo what they were given
# (a close reason is no title).
_LISTING = re.compile(
    r"\s*(?:bd|beads|gh|glab|jira|linear)\s+(?:(?:issue|pr|mr)\s+)?"
    r"(?:show|view|list|ready|search|info|blocked)\b"
)
_CHANGES = re.compile(
    r"\s*(?:bd|beads|gh|glab|jira|linear)\s+(?:(?:issue|pr|mr)\s+)?"
    r"(?:close|update|edit|comment|reopen|create|move|merge)\b"
)
_STATUS_WORDS = frozenset({
    "closed", "open", "opened", "done", "updated", "in progress", "in_progress", "reopened",
    "created", "resolved", "merged", "claimed", "updated issue",
})  # fmt: skip


def title_of(item: str, output: str) -> str | None:
    """The title an output shows for ``item`` (``○ app-7.1 · Add export  [P1]``,
    ``app-7.1: Add export``, ``app-7.1 [P2] [task] - Add export``), or ``None``."""
    if item not in output:
        return None
    for match in _after_id(item, output[:20_000]):
        title = collapse(match.group(1), 120)
        if title.lower().strip(" .!") not in _STATUS_WORDS:
            return title
    return None


def _after_id(item: str, text: str) -> Iterator[re.Match[str]]:
    """The matches ``re.finditer(re.escape(item) + _TITLE_AFTER_ID, text, re.MULTILINE)``
    finds, without compiling a pattern per item (a compile costs more than the search
    in a cold compaction): each occurrence of ``item`` left to right, the tail pattern
    tried right after it, the next search after a match's end as ``finditer`` does."""
    start = text.find(item)
    while start >= 0:
        match = _TITLE_TAIL.match(text, start + len(item))
        if match is None:
            start = text.find(item, start + 1)
            continue
        yield match
        start = text.find(item, max(match.end(), start + 1))


def title_sources(events: Sequence[ToolEvent]) -> list[ToolEvent]:
    """The events :func:`titled` reads, in its order: the look-ups and listings newest
    first, then every output but a tracker's own changes, newest first. The same for
    every item, so built once per compaction (per item, it made the item tracker's walk
    quadratic in a long history's events)."""
    looks = [e for e in events if _LISTING.match(e.action.command or "")]
    others = [e for e in events if not _CHANGES.match(e.action.command or "")]
    return [*reversed(looks), *reversed(others)]


def titled(item: str, sources: Sequence[ToolEvent]) -> str:
    """``item``'s title from the newest look-up or listing that showed one, else from
    any other output (of ``#12``, the title line of ``gh issue view 12``), or ``""``;
    ``sources`` are :func:`title_sources` of the events.
    A tracker's own confirmation (``✓ Closed app-7: Closed``) is no title."""
    for event in sources:
        result = event.result or ""
        if item.startswith("#"):
            view = _GH_VIEW.match(event.action.command or "")
            title = (
                _GH_TITLE.search(result[:4_000]) if view and f"#{view.group(1)}" == item else None
            )
            if title:
                return collapse(title.group(1), 120)
            continue
        found = title_of(item, result)
        if found:
            return found
    return ""
