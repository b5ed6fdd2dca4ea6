"""Reading a previous handoff back: its sections, their list items, and choosing which
items fit.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from .protocol import SECTION_TITLES

NONE = "None recorded"
"""Placeholder of an empty handoff section."""


_HEADINGS = {t: re.compile(rf"^## {re.escape(t)}[ \t]*\r?$", re.M) for t in SECTION_TITLES}


_BULLET_MARK = re.compile(r"^\s*[-*]\s+")


_OMISSION = re.compile(r"\(\d+ .* omitted for space\)")


def parse_sections(text: str) -> dict[str, str]:
    """Sections of a handoff body by their ``## <title>`` headings.

    Headings are searched from the end: only the verbatim task snapshot (the first
    section) can contain a line that looks like a heading, and it is never misread.
    """
    sections: dict[str, str] = {}
    end = len(text)
    for title in reversed(SECTION_TITLES):
        found = list(_HEADINGS[title].finditer(text, 0, end))
        if found:
            sections[title] = text[found[-1].end() : end].strip("\r\n")
            end = found[-1].start()
    return sections


def section_items(body: str) -> list[str]:
    """List items of a section body (bullets stripped, placeholders skipped)."""
    items = (_BULLET_MARK.sub("", line).strip() for line in body.splitlines())
    return [i for i in items if i and not i.startswith(NONE) and not _OMISSION.fullmatch(i)]


def best_indices(
    items: Sequence[str], count: int, *preferences: Callable[[str], bool] | None
) -> list[int]:
    """Indices of ``count`` items, ascending: preferred items first, then the newest."""
    if count >= len(items):
        return list(range(len(items)))

    def rank(index: int) -> tuple[bool | int, ...]:
        item = items[index]
        return (*(not (p and p(item)) for p in preferences), len(items) - index)

    return sorted(sorted(range(len(items)), key=rank)[: max(0, count)])
