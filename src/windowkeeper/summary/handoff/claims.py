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
from ...analysis.toolshapes import ToolKind

_ITEM_ID = re.compile(r"(?<![\w-])[A-Za-z]\w*-[\w.-]*\w|#\d+")
# After an id: tags such as ``[● P2] [task]``, a separator, the title up to a run of
# spaces, a bracket, a priority dot, a dependency note or the end of the line.
_TITLE_AFTER_ID = (
    r"(?![\w.-])\s*(?:\[[^\]\n]*\]\s*)*(?:[:·—–]|\s-)\s+([^\[\n]+?)"
    r"(?:\s{2,}|\s[\[●]|\s\((?:blocked|blocks|depends|parent)\b|$)"
)
_CLOSES = re.compile(r"\s*(?:bd|beads|gh\s+issue|glab\s+issue|jira\s+issue)\s+close\s")
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
