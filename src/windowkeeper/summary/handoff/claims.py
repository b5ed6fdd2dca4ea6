"""The work item in progress, from the agent's tracker (SPEC §6 v3 "work items").

A tracker status update is bookkeeping, not a Done item; the newest claim that no later
command closed is what the agent was working on at the cut.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ...analysis.commands import is_bookkeeping, short_command
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
_CLOSES = re.compile(r"\s*(?:bd|beads|gh\s+issue|glab\s+issue|jira\s+issue)\s+close\s")
SPEC_CHARS = 700
_LOOK_UP = re.compile(
    r"\s*(?:bd|beads)\s+show\s|\s*(?:gh|glab)\s+(?:issue|pr|mr)\s+view\s|\s*jira\s+issue\s+view\s"
)
# Lines that say what must hold; headings (markdown, a line in capitals or ending with a
# colon), and the ones whose lines below are the goal or acceptance.
_SPEC_LINE = re.compile(
    r"\b(?:goal|must|should|never|always|acceptance|"
    r"criteria|constraint|required?|do not|don't|only|expected)\b",
    re.IGNORECASE,
)
_HEADING = re.compile(r"#{1,6}\s|[A-Z][A-Za-z &/-]{2,40}:$|[A-Z][A-Z &/-]{3,}$")
_SPEC_HEADING = re.compile(r"goal|done|acceptance|criteria|constraint|requirement", re.I)
_UNDER = 3
_EXIT_LINE = re.compile(r"<returncode>-?\d+</returncode>|\[?exit code:? -?\d+\]?", re.I)
_HANDLE = re.compile(r"\bwk[0-9a-f]{6,}\b")
_CLAIM_WORDS = re.compile(r"\b(?:in[_-]progress|claim(?:ed)?|start(?:ed)?)\b", re.IGNORECASE)


def open_claim(events: Sequence[ToolEvent]) -> str | None:
    """The newest work item the agent claimed through its tracker (``bd update X
    --status in_progress``) that no later command closed: the sub-task in progress."""
    for index in range(len(events) - 1, -1, -1):
        event = events[index]
        command = event.action.command if event.action.kind is ToolKind.SHELL else None
        if not command or event.failed or event.result is None or len(command) > 500:
            continue
        if is_bookkeeping(command) and _CLAIM_WORDS.search(command):
            ids = list(dict.fromkeys(_ITEM_ID.findall(command)))
            later = [e.action.command or "" for e in events[index + 1 :]]
            if any("close" in c and any(i in c for i in ids) for c in later):
                return None
            named = [_titled(i, events[: index + 1]) for i in ids[:3]]
            return f"Claimed {', '.join(named) or 'a work item'}: `{short_command(command, 120)}`"
    return None


def spec_excerpts(events: Sequence[ToolEvent], claimed: str | None) -> list[str]:
    """The outputs that define the work (SPEC §6 v3 "task spec"): the first tracker
    look-up (``bd show X``, ``gh issue view N``) and the newest one of the claimed item,
    each as one line: verbatim when short, else its headings and goal / constraint /
    acceptance lines; a pruned output by its archive handle."""
    looks = [e for e in events if _is_look_up(e)]
    if not looks:
        return []
    chosen = [looks[0]]
    ids = _ITEM_ID.findall(claimed or "")
    mine = [e for e in looks if ids and ids[0] in (e.action.command or "")]
    if mine and mine[-1] is not looks[0]:
        chosen.append(mine[-1])
    return [_excerpt(e) for e in chosen]


def _is_look_up(event: ToolEvent) -> bool:
    command = event.action.command if event.action.kind is ToolKind.SHELL else None
    if not command or event.failed or not event.result or len(command) > 300:
        return False
    return _LOOK_UP.match(command) is not None


def _excerpt(event: ToolEvent) -> str:
    command = short_command(event.action.command or "", 80)
    text = event.result or ""
    if is_stub(text):
        handle = _HANDLE.search(text)
        return f"Spec from `{command}`: pruned" + (f" (recall {handle.group(0)})" if handle else "")
    lines = [" ".join(line.split()) for line in text.splitlines()]
    lines = [line for line in lines if line and not _EXIT_LINE.fullmatch(line)]
    whole = " | ".join(lines)
    if len(whole) > SPEC_CHARS:
        whole = collapse(" | ".join(_spec_lines(lines)), SPEC_CHARS)
    return f"Spec from `{command}`: {whole}"


def _spec_lines(lines: list[str]) -> list[str]:
    """The first line, the headings, the lines that say what must hold, and the first
    lines under a goal / done / acceptance / constraint heading."""
    kept: list[str] = []
    under = 0
    for index, line in enumerate(lines):
        heading = _HEADING.match(line) is not None
        if index == 0 or heading or under > 0 or _SPEC_LINE.search(line):
            kept.append(line)
        under = _UNDER if heading and _SPEC_HEADING.search(line) else under - 1
    return kept


def closed_items(event: ToolEvent, earlier: Sequence[ToolEvent]) -> str | None:
    """``Closed <id> (<title>)`` for a successful tracker command that closed work
    items (``bd close X``, ``gh issue close 12``), titled from the outputs before it."""
    command = event.action.command if event.action.kind is ToolKind.SHELL else None
    if not command or event.failed or event.result is None or not _CLOSES.match(command):
        return None
    ids = list(dict.fromkeys(_ITEM_ID.findall(command.split("--", 1)[0])))
    if not ids:
        return None
    return "Closed " + ", ".join(_titled(i, earlier) for i in ids[:4])


def title_of(item: str, output: str) -> str | None:
    """The title an output shows for ``item`` (``○ app-7.1 · Add export  [P1]``,
    ``app-7.1: Add export``, ``app-7.1 [P2] [task] - Add export``), or ``None``."""
    if item not in output:
        return None
    pattern = re.escape(item) + _TITLE_AFTER_ID
    match = re.search(pattern, output[:20_000], re.MULTILINE)
    return collapse(match.group(1), 120) if match else None


def _titled(item: str, events: Sequence[ToolEvent]) -> str:
    """``item`` with its title from the newest output that showed one."""
    for event in reversed(events):
        title = title_of(item, event.result or "")
        if title:
            return f"{item} ({title})"
    return item
