"""A plan the agent stated in its own words (a list after "I'll update:", "Next steps:"),
and which of its steps later calls already did.

A step is done when a later successful write or edit touched a file the step names (by
file name, or by a name written in another case: ``TranscriptComputers`` is
``transcript_computers.ex``); the steps left are the plan still pending. Only a plan of
the newest assistant texts counts (an older one is superseded by what came after).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

from ...analysis.checks import is_check_run
from ...analysis.events import ToolEvent
from ...analysis.facts import caseless_search, collapse, prose
from ...analysis.toolshapes import EDIT_KIND, SHELL_KIND, WRITE_KIND

_NOT_ALNUM = re.compile(r"[^a-z0-9]")

MAX_PLAN = 6
NEWEST_TEXTS = 4
"""How many of the newest assistant texts are looked at for a plan."""
_HEAD = re.compile(
    r"(?:next steps?|remaining|to do|todo|plan|I'll (?:update|change|do|implement|add)"
    r"|I will (?:update|change|do|implement|add)|steps?)\b.*:\s*$",
    re.IGNORECASE,
)
_head = caseless_search(_HEAD)  # lowered in ASCII text: the same answer, faster
_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(.+)$")
_NAME = re.compile(r"[A-Za-z_][\w.-]*[\w]")
_IDENTIFIER = re.compile(r".[A-Z]|[_.]\w")


def stated_plan(assistant: Sequence[tuple[int, str]], events: Sequence[ToolEvent]) -> list[str]:
    """The steps of the newest stated plan that no later change did (at most
    :data:`MAX_PLAN`); ``[]`` when the newest texts state none."""
    for position, text in reversed(assistant[-NEWEST_TEXTS:]):
        steps = _steps(text)
        if not steps:
            continue
        touched = _touched_after(events, position) | _ran_after(events, position)
        return [s for s in steps if not _done(s, touched)][:MAX_PLAN]
    return []


@functools.lru_cache(maxsize=256)
def _steps(text: str) -> tuple[str, ...]:
    lines = prose(text[:6_000]).splitlines()
    for index, line in enumerate(lines):
        head = line.strip().strip("*#")
        # _HEAD ends in ":" and whitespace: a line that does not is not searched
        if not head.rstrip().endswith(":") or not _head(head):
            continue
        items = []
        for following in lines[index + 1 : index + 1 + 3 * MAX_PLAN]:
            match = _ITEM.match(following)
            if match:
                items.append(collapse(match.group(1).replace("**", ""), 200))
            elif following.strip() and items:
                break
        if len(items) >= 2:
            return tuple(items)
    return ()


def _touched_after(events: Sequence[ToolEvent], position: int) -> set[str]:
    """The squashed names of the files successful changes touched at or after
    ``position`` (``transcript_computers.ex`` gives ``transcriptcomputers`` and
    ``transcriptcomputersex``)."""
    found: set[str] = set()
    for event in events:
        action = event.action
        changed = action.kind in (WRITE_KIND, EDIT_KIND) and action.path
        if event.position < position or not changed or event.failed or event.result is None:
            continue
        name = (action.path or "").rsplit("/", 1)[-1].lower()
        found.add(_squash(name))
        found.add(_squash(name.rsplit(".", 1)[0]))
    return found


def _ran_after(events: Sequence[ToolEvent], position: int) -> set[str]:
    """The kinds of steps successful commands did at or after ``position`` (``:tests``,
    ``:commit`` …), as :func:`_done` looks them up."""
    found: set[str] = set()
    for event in events:
        command = event.action.command if event.action.kind is SHELL_KIND else None
        if event.position < position or not command or event.failed or event.result is None:
            continue
        kind = is_check_run(event)
        if kind:
            found.add(f":{kind}")
        for word, step in _COMMAND_STEPS:
            if word.search(command):
                found.add(step)
    return found


# Steps a plan names in words, and the commands that do them.
_COMMAND_STEPS = (
    (re.compile(r"\bgit\s+commit\b"), ":commit"), (re.compile(r"\bgit\s+push\b"), ":push"),
    (re.compile(r"\b(?:bd|gh\s+issue|jira\s+issue)\s+close\b"), ":close"),
)  # fmt: skip
_STEP_WORDS = (
    (re.compile(r"(?i)\b(?:run|re-?run)\b.*\btests?\b|\btests? pass"), ":tests"),
    (re.compile(r"(?i)\b(?:credo|lint|ruff|eslint|flake8|mypy)\b"), ":lint"),
    (re.compile(r"(?i)\b(?:compile|build)\b"), ":build"),
    (re.compile(r"(?i)\bcommit\b"), ":commit"), (re.compile(r"(?i)\bpush\b"), ":push"),
    (re.compile(r"(?i)\bclose\b"), ":close"),
)  # fmt: skip


def _done(step: str, touched: set[str]) -> bool:
    """Whether a file the step names by an identifier (``TranscriptComputers``,
    ``app.js``, ``session_live``) was changed, or a command did what it says (run the
    tests, commit, push, close)."""
    names = {_squash(n.lower()) for n in _NAME.findall(step) if _IDENTIFIER.search(n)}
    words = {kind for pattern, kind in _STEP_WORDS if pattern.search(step)}
    return bool((names | words) & touched)


def _squash(name: str) -> str:
    return _NOT_ALNUM.sub("", name)
