"""Completed Actions of the extractive summary: numbered, merged, carried forward.

One action per tool call; consecutive calls of the same kind and target collapse (``×3``),
and a run of successful reads, edits or searches by one tool becomes a single action
listing every target. File paths are written relative to the summary's root.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import groupby

from ...analysis.events import ToolEvent
from ...analysis.facts import collapse
from ...analysis.outputs import event_errors, is_test_command, last_line, test_summary
from ...analysis.toolshapes import ToolKind
from ..sections import section_items

MAX_MERGED = 8
"""Targets one merged action lists at most."""


@dataclass(frozen=True)
class Action:
    number: int
    verb: str
    text: str


Condensed = tuple[int, int, dict[str, int]]

_PHRASES = {
    ToolKind.SHELL: ("ran", "Ran `{t}`"), ToolKind.READ: ("read", "Read {t}"),
    ToolKind.WRITE: ("wrote", "Wrote {t}"), ToolKind.EDIT: ("edited", "Edited {t}"),
    ToolKind.SEARCH: ("searched", "Searched '{t}'"), ToolKind.FETCH: ("fetched", "Fetched {t}"),
    ToolKind.WEB_SEARCH: ("searched", "Web-searched '{t}'"),
    ToolKind.OTHER: ("called", "Called {n} {t}"),
}  # fmt: skip
# What a condensed count of each verb counts, in the order condensed lines list them.
NOUNS = {
    "ran": "command", "read": "file", "edited": "file", "wrote": "file", "searched": "time",
    "fetched": "page", "called": "other tool",
}  # fmt: skip
_MERGEABLE = (ToolKind.READ, ToolKind.EDIT, ToolKind.WRITE, ToolKind.SEARCH)
_FILE_KINDS = (ToolKind.READ, ToolKind.EDIT, ToolKind.WRITE)
_NUMBERED = re.compile(r"(\d+)[.)]\s+(.*)")
_CONDENSED = re.compile(r"(\d+)\s*[–-]\s*(\d+)(?: \([^)]*\))?:\s*condensed\b(.*)")
_COUNT = re.compile(r"\b(ran|read|edited|wrote|searched|fetched|called) (\d+)\b")


def prior_actions(body: str) -> tuple[Condensed | None, list[Action]]:
    """The condensed range and numbered actions of a previous summary's section."""
    condensed = None
    actions: list[Action] = []
    for item in section_items(body):
        squeezed, numbered = _CONDENSED.fullmatch(item), _NUMBERED.fullmatch(item)
        if squeezed:
            counts = {verb: int(n) for verb, n in _COUNT.findall(squeezed.group(3))}
            condensed = (int(squeezed.group(1)), int(squeezed.group(2)), counts)
        elif numbered:
            actions.append(
                Action(int(numbered.group(1)), _verb(numbered.group(2)), numbered.group(2))
            )
        else:
            last = max([a.number for a in actions] + [condensed[1] if condensed else 0])
            actions.append(Action(last + 1, _verb(item), item))
    return condensed, actions


def _verb(text: str) -> str:
    word = text.split(" ", 1)[0].lower()
    word = "searched" if word == "web-searched" else word
    return word if word in NOUNS else "called"


def what(event: ToolEvent, short: Callable[[str], str] = str) -> str:
    """``Ran `make` `` / ``Read src/a.py``: the action and its target."""
    action = event.action
    target = short(action.target) if action.kind in _FILE_KINDS else action.target
    phrase = _PHRASES[action.kind][1]
    return phrase.format(t=collapse(target, 120), n=action.name).strip()


def new_actions(
    events: Sequence[ToolEvent], start: int, short: Callable[[str], str]
) -> list[Action]:
    """Actions of ``events`` numbered from ``start``."""
    runs = [list(run) for _, run in groupby(events, key=_run_key)]
    actions: list[Action] = []
    index = 0
    while index < len(runs):
        merged = _mergeable_runs(runs, index)
        verb = _PHRASES[runs[index][-1].action.kind][0]
        text = _merged_text(merged, short) if len(merged) > 1 else _run_text(runs[index], short)
        actions.append(Action(start + len(actions), verb, text))
        index += max(1, len(merged))
    return actions


def _run_key(event: ToolEvent) -> tuple[ToolKind, str, str]:
    return event.action.kind, event.action.name, event.action.target


def _ok(run: list[ToolEvent]) -> bool:
    last = run[-1]
    return last.action.kind in _MERGEABLE and last.result is not None and not last.failed


def _mergeable_runs(runs: list[list[ToolEvent]], index: int) -> list[list[ToolEvent]]:
    """The successful same-tool runs starting at ``index`` that merge into one action."""
    first = runs[index][-1].action
    merged: list[list[ToolEvent]] = []
    for run in runs[index : index + MAX_MERGED]:
        action = run[-1].action
        if not _ok(run) or (action.kind, action.name) != (first.kind, first.name):
            break
        merged.append(run)
    return merged


def _merged_text(runs: list[list[ToolEvent]], short: Callable[[str], str]) -> str:
    action = runs[0][-1].action
    targets = []
    for run in runs:
        target = run[-1].action.target
        target = short(target) if action.kind in _FILE_KINDS else f"'{target}'"
        targets.append(collapse(target, 120) + (f" ×{len(run)}" if len(run) > 1 else ""))
    head = _PHRASES[action.kind][1].split(" ", 1)[0]
    return f"{head} {', '.join(targets)} [{action.name}]"


def _run_text(run: list[ToolEvent], short: Callable[[str], str]) -> str:
    event = run[-1]
    times = f" ×{len(run)}" if len(run) > 1 else ""
    outcome = outcome_of(event)
    shown = f" — {outcome}" if outcome != "ok" else ""
    return f"{what(event, short)}{times}{shown} [{event.action.name}]"


def outcome_of(event: ToolEvent) -> str:
    """``ok``, ``exit 1 (2 failed, ...)``, ``failed: <error line>`` or ``no result kept``."""
    if event.result is None:
        return "no result kept"
    if event.action.kind is ToolKind.SHELL:
        code = event.exit_code
        status = f"exit {code}" if code is not None else ("failed" if event.failed else "ok")
        summary = test_summary(event.result) if is_test_command(event.action.target) else None
        return f"{status} ({summary})" if summary else status
    if event.failed:
        errors = event_errors(event)
        return f"failed: {errors[-1] if errors else last_line(event.result, 120)}"
    return "ok"
