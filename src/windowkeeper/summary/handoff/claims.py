"""What defines the work items: their titles and their specs (SPEC §6 v3 "task spec").

A tracker look-up (``bd show X``, ``gh issue view 12``) shows an item's title and spec.
The first look-up of the session defines the task and stays in every handoff; the newest
look-up of each item still open stays while the item is open. An output that shows
several items (``bd show a; bd show b``) gives each item its own part.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence

from ...analysis.commands import short_command
from ...analysis.events import ToolEvent
from ...analysis.facts import collapse
from ...analysis.gist import is_stub
from ...analysis.toolshapes import ToolKind

_ITEM_ID = re.compile(r"(?<![\w-])[A-Za-z]\w*-[\w.-]*\w|#\d+")
# After an id: tags such as ``[● P2] [task]``, a separator, the title up to a run of
# spaces, a bracket, a priority dot, a dependency note or the end of the line.
_TITLE_AFTER_ID = (
    r"(?![\w.-])\s*(?:\[[^\]\n]*\]\s*)*(?:[:·—–]|\s-)\s+([^\[\n]+?)"
    r"(?:\s{2,}|\s[\[●]|\s\((?:blocked|blocks|depends|parent)\b|$)"
)
SPEC_CHARS = 700
ITEM_SPEC_CHARS = 300
"""The spec of an item nobody works on yet is cut shorter."""
MAX_SPECS = 3
_LOOK_UP = re.compile(
    r"\s*(?:bd|beads)\s+show\s|\s*(?:gh|glab)\s+(?:issue|pr|mr)\s+view\s|\s*jira\s+issue\s+view\s"
)
_GH_VIEW = re.compile(r"\s*(?:gh|glab)\s+(?:issue|pr|mr)\s+view\s+#?(\d+)")
_GH_TITLE = re.compile(r"^title:\s+(.+)$", re.M)
# Lines that say what must hold; headings (markdown, a line in capitals or ending with a
# colon), and the ones whose lines below are the goal or acceptance.
_SPEC_LINE = re.compile(
    r"\b(?:goal|must|should|never|always|acceptance|"
    r"criteria|constraint|required?|do not|don't|only|expected)\b",
    re.IGNORECASE,
)
_HEADING = re.compile(r"#{1,6}\s|[A-Z][A-Za-z &/-]{2,40}:$|[A-Z][A-Z &/-]{3,}$")
_SPEC_HEADING = re.compile(r"goal|done|acceptance|criteria|constraint|requirement|spec", re.I)
_UNDER = 3
# Sections that explain rather than require: their lines are left out of a short excerpt.
_ASIDE = re.compile(r"why|problem|background|context|motivation|history|rabbit", re.I)
_EXIT_LINE = re.compile(r"<returncode>-?\d+</returncode>|\[?exit code:? -?\d+\]?", re.I)
_HANDLE = re.compile(r"\bwk[0-9a-f]{6,}\b")
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
_SPEC_OF = re.compile(r"Spec (?:of (\S+) )?from `")


def specs_of(
    events: Sequence[ToolEvent],
    previous: Sequence[str],
    working: Collection[str],
    closed: Collection[str],
) -> tuple[str, ...]:
    """The spec excerpts to carry: the task's (the first look-up ever), then the newest
    look-up of the items being ``working`` on, then of others not ``closed`` (at most
    :data:`MAX_SPECS` in all). Each is one line: verbatim when short, else its headings
    and goal / constraint / acceptance lines; a pruned output by its archive handle."""
    task = previous[0] if previous else None
    others = {_key(f): f for f in previous[1:]}
    for event in events:
        if not _is_look_up(event):
            continue
        ids = list(dict.fromkeys(_ITEM_ID.findall(event.action.command or ""))) or [""]
        for item in ids:
            entry = _excerpt(event, item if len(ids) > 1 else "")
            if task is None or _key(task) == _key(entry):
                task = entry if task is None or not _pruned(entry) else task
                continue
            others.pop(_key(entry), None)
            others[_key(entry)] = entry
    if task is None:
        return ()
    rest = [f for f in others.values() if spec_item(f) not in closed]
    mine = [f for f in rest if spec_item(f) in working][-(MAX_SPECS - 1) :]
    room = MAX_SPECS - 1 - len(mine)
    later = [f for f in rest if f not in mine]
    shorter = [collapse(f, ITEM_SPEC_CHARS) for f in later[len(later) - min(room, len(later)) :]]
    return (task, *mine, *shorter)


def _key(entry: str) -> str:
    return spec_item(entry) or entry.split(": ", 1)[0]


def _pruned(entry: str) -> bool:
    return entry.split(": ", 1)[-1].startswith("pruned")


def spec_item(entry: str) -> str:
    """The item a spec excerpt is of (``""`` when its command names none)."""
    match = _SPEC_OF.match(entry)
    if match and match.group(1):
        return match.group(1)
    command = entry.split("`", 2)[1] if entry.count("`") >= 2 else ""
    ids = _ITEM_ID.findall(command)
    return ids[0] if ids else ""


def _is_look_up(event: ToolEvent) -> bool:
    command = event.action.command if event.action.kind is ToolKind.SHELL else None
    if not command or event.failed or not event.result or len(command) > 300:
        return False
    return _LOOK_UP.match(command) is not None


def _excerpt(event: ToolEvent, item: str) -> str:
    """One look-up's excerpt; of an output showing several items, ``item``'s part."""
    command = short_command(event.action.command or "", 80)
    label = f"Spec of {item} from `{command}`" if item else f"Spec from `{command}`"
    text = event.result or ""
    if is_stub(text):
        handle = _HANDLE.search(text)
        return f"{label}: pruned" + (f" (recall {handle.group(0)})" if handle else "")
    if item:
        text = _part_of(text, item, _ITEM_ID.findall(event.action.command or ""))
    lines = [" ".join(line.split()) for line in text.splitlines()]
    lines = [line for line in lines if line and not _EXIT_LINE.fullmatch(line)]
    whole = " | ".join(lines)
    if len(whole) > SPEC_CHARS:
        whole = collapse(" | ".join(_spec_lines(lines)), SPEC_CHARS)
    return f"{label}: {whole}"


def _part_of(text: str, item: str, ids: Sequence[str]) -> str:
    """The part of ``text`` about ``item``: from the line that opens with it (after a
    status glyph) to the line that opens with another of ``ids``."""
    heads = {
        i: m.start()
        for i in ids
        if (m := re.search(rf"^\W{{0,3}}{re.escape(i)}(?![\w.-])", text, re.M))
    }
    if item not in heads:
        return text
    start = heads[item]
    later = [at for at in heads.values() if at > start]
    return text[start : min(later, default=len(text))]


def _spec_lines(lines: list[str]) -> list[str]:
    """The first line, the headings, the lines that say what must hold, and the first
    lines under a goal / done / acceptance / constraint heading."""
    kept: list[tuple[str, bool]] = []
    under, aside = 0, False
    for index, line in enumerate(lines):
        heading = _HEADING.match(line) is not None
        aside = _ASIDE.search(line) is not None if heading else aside
        if index == 0 or heading or under > 0 or (_SPEC_LINE.search(line) and not aside):
            kept.append((line, heading and index > 0))
        if heading:  # a heading ends the lines kept under the one before
            under = _UNDER if _SPEC_HEADING.search(line) else 0
        else:
            under -= 1
    # A heading with nothing kept under it says nothing.
    return [
        line
        for at, (line, heading) in enumerate(kept)
        if not heading or (at + 1 < len(kept) and not kept[at + 1][1])
    ]


def title_of(item: str, output: str) -> str | None:
    """The title an output shows for ``item`` (``○ app-7.1 · Add export  [P1]``,
    ``app-7.1: Add export``, ``app-7.1 [P2] [task] - Add export``), or ``None``."""
    if item not in output:
        return None
    pattern = re.escape(item) + _TITLE_AFTER_ID
    for match in re.finditer(pattern, output[:20_000], re.MULTILINE):
        title = collapse(match.group(1), 120)
        if title.lower().strip(" .!") not in _STATUS_WORDS:
            return title
    return None


def titled(item: str, events: Sequence[ToolEvent]) -> str:
    """``item``'s title from the newest look-up or listing that showed one, else from
    any other output (of ``#12``, the title line of ``gh issue view 12``), or ``""``.
    A tracker's own confirmation (``✓ Closed app-7: Closed``) is no title."""
    looks = [e for e in events if _LISTING.match(e.action.command or "")]
    others = [e for e in events if not _CHANGES.match(e.action.command or "")]
    for event in [*reversed(looks), *reversed(others)]:
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
