"""Notes a summarizer wrote, kept within their budget by whole lines (SPEC §6 v3 "LLM
notes"): the budget is asked for in the prompt, and what is still over it loses whole
items (a bullet with its continuation lines, or a paragraph), the oldest first, never a
cut in the middle of a line. Each section that lost items says so in one line, where the
first of them stood, with the archive handles they named (a handle recalls the record a
line was written from).

Trimming order: the oldest items of the work state (its done work first), then the key
decisions, then the work in progress, pending or blocked; the next step is never
trimmed. Labels and sub-headings ("Done (with evidence):", "### Notes") stay.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..core.tokens import estimate_tokens

_BULLET = re.compile(r" {0,3}(?:[-*+•]|\d{1,3}[.)])\s+")
_LABEL = re.compile(r" {0,3}(?:#{1,6}\s.*|\S[^\n]{0,80}:\s*)$")
_CURRENT = re.compile(r"in.progress|pending|blocked|open|current|remaining|todo|next", re.I)
_HANDLE = re.compile(r"\bwk[0-9a-f]{6,}\b")
_RANKS = {"Work State": 0, "Key Decisions": 1}
KEPT = 10_000
"""Rank of what is never trimmed (the next step, labels)."""
SHOWN_HANDLES = 12
"""Handles a trim line names (of the newest items it stands for)."""


@dataclass(frozen=True)
class _Item:
    lines: tuple[str, ...]
    rank: int
    tokens: int


def trim_sections(sections: Sequence[tuple[str, str]], budget: int) -> tuple[tuple[str, str], ...]:
    """``sections`` (title, text) within ``budget`` tokens in all, by whole items."""
    items = [_items(title, text) for title, text in sections]
    total = sum(item.tokens for group in items for item in group) + 4 * len(sections)
    if total <= budget:
        return tuple(sections)
    order = sorted(
        ((item.rank, s, i) for s, group in enumerate(items) for i, item in enumerate(group)),
    )
    dropped: set[tuple[int, int]] = set()
    marked: set[int] = set()
    for rank, s, i in order:
        if total <= budget or rank >= KEPT:
            break
        dropped.add((s, i))
        total -= items[s][i].tokens
        if s not in marked:
            marked.add(s)
            total += 24  # the line that says what left
    return tuple(
        (title, _joined(items[s], {i for t, i in dropped if t == s}))
        for s, (title, _) in enumerate(sections)
    )


def trim_text(text: str, budget: int) -> str:
    """One text within ``budget`` tokens by whole items, the oldest first."""
    ((_, trimmed),) = trim_sections([("", text)], budget)
    return trimmed


def _items(title: str, text: str) -> list[_Item]:
    """The items of a section: labels (kept) and bullets or paragraphs (trimmable),
    each bullet with the lines that continue it."""
    base = _RANKS.get(title, KEPT if title == "Next Step" else 0)
    items: list[list[str]] = []
    ranks: list[int] = []
    rank = base
    for line in text.split("\n"):
        if _LABEL.fullmatch(line) and not _BULLET.match(line):
            rank = 2 if base < KEPT and _CURRENT.search(line) else base
            items.append([line])
            ranks.append(KEPT)
        elif _BULLET.match(line) or not line.strip() or not items or ranks[-1] == KEPT:
            items.append([line])
            ranks.append(rank if line.strip() else KEPT)
        else:
            items[-1].append(line)  # continues the bullet or paragraph before it
    return [
        _Item(tuple(lines), rank, sum(estimate_tokens(line) + 1 for line in lines))
        for lines, rank in zip(items, ranks, strict=True)
    ]


def _joined(items: Sequence[_Item], dropped: set[int]) -> str:
    if not dropped:
        return "\n".join(line for item in items for line in item.lines)
    lines: list[str] = []
    for index, item in enumerate(items):
        if index == min(dropped):
            lines.append(_marker([items[i] for i in sorted(dropped)]))
        if index not in dropped:
            lines.extend(item.lines)
    return "\n".join(lines)


def _marker(left: Sequence[_Item]) -> str:
    handles = list(dict.fromkeys(h for item in left for line in item.lines
                                 for h in _HANDLE.findall(line)))  # fmt: skip
    what = f"{len(left)} older item{'s' if len(left) != 1 else ''} left out for space"
    if not handles:
        return f"- ({what})"
    if len(handles) <= SHOWN_HANDLES:
        return f"- ({what}; recall {', '.join(handles)})"
    newest = ", ".join(handles[-SHOWN_HANDLES:])
    return f"- ({what}; recall {newest}, the newest {SHOWN_HANDLES} of {len(handles)} handles)"
