"""The work item in progress, from the agent's tracker (SPEC §6 v3 "work items").

A tracker status update is bookkeeping, not a Done item; the newest claim that no later
command closed is what the agent was working on at the cut.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ...analysis.commands import is_bookkeeping, short_command
from ...analysis.events import ToolEvent
from ...analysis.toolshapes import ToolKind

_ITEM_ID = re.compile(r"(?<![\w-])[A-Za-z]\w*-[\w.-]*\w|#\d+")
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
            return f"Claimed {', '.join(ids) or 'a work item'}: `{short_command(command, 120)}`"
    return None
