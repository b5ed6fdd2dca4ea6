"""Open errors (design §5 section 5): only the failures no later result resolved, the
carried ones included (a later success resolves them on the next merge too).
"""

from __future__ import annotations

from collections.abc import Sequence

from ...analysis.commands import short_command
from ...analysis.events import ToolEvent
from ...analysis.gist import is_stub, stub_error
from ...analysis.outputs import event_errors, last_line
from ...analysis.resolution import OpenFailures
from ...analysis.toolshapes import (
    EDIT_KIND,
    OTHER_KIND,
    READ_KIND,
    SHELL_KIND,
    WRITE_KIND,
    ToolAction,
    ToolKind,
)
from .fixes import FixLog, first_error, what_failed
from .model import OpenError
from .text import shown_command

MAX_ERRORS = 5
_SAME = "(the same error in"


def open_errors(tracker: OpenFailures, carried: Sequence[OpenError]) -> tuple[OpenError, ...]:
    """The newest failures still open: the carried ones a later success did not resolve,
    then the turns' own."""
    fresh = [_open_error(e, tracker.replaced(e)) for e in tracker.events()]
    return tuple([*carried, *fresh][-MAX_ERRORS:])


def _open_error(event: ToolEvent, before: Sequence[ToolEvent] = ()) -> OpenError:
    action = event.action
    lines = event_errors(event)[-6:] or [_last_line(event.result or "")]
    # Whether the attempts before it changed the error (a reader asks "is it the same?").
    error = first_error(event)
    runs = 1 + sum(first_error(e) == error for e in before)
    if runs > 1:
        lines = [*lines, f"{_SAME} {runs} runs of this step)"]
    if action.kind is SHELL_KIND and action.command:
        command = short_command(action.command, 200)
        return OpenError(shown_command(command), tuple(lines), event.exit_code, command)
    return OpenError(what_failed(event), tuple(lines), event.exit_code, None)


def _last_line(result: str) -> str:
    """The last line of a result; of a pruned one, the error its stub kept (the stub
    itself describes the call, which the handoff already names)."""
    return stub_error(result) if is_stub(result) else last_line(result)


def still_open(
    carried: Sequence[OpenError],
    events: Sequence[ToolEvent],
    assistant: Sequence[tuple[int, str]] = (),
) -> tuple[list[OpenError], list[str]]:
    """The previous handoff's open errors that no event of these turns resolved (each
    carried error stands in for its failure, of the kind of call that failed), and the
    "fixed along the way" entries of those that one did."""
    if not carried:
        return [], []
    tracker = OpenFailures()
    fixes = FixLog(tracker, assistant)
    pseudo = [_pseudo(error) for error in carried]
    for event in pseudo:
        tracker.add(event)
    for index, event in enumerate(events):
        fixes.seen(index, event)
        resolved = tracker.add(event)
        if resolved:
            fixes.resolved(event, resolved)
    alive = {id(e) for e in tracker.events()}
    kept = [error for error, event in zip(carried, pseudo, strict=True) if id(event) in alive]
    return kept, fixes.fixed


def _pseudo(error: OpenError) -> ToolEvent:
    if error.command:
        action = ToolAction("carried", SHELL_KIND, error.command, command=error.command)
    else:
        word, _, target = error.what.partition(" ")
        kind = ToolKind(word) if word in set(ToolKind) else OTHER_KIND
        name = word if kind is OTHER_KIND else "carried"
        path = target if kind in (READ_KIND, WRITE_KIND, EDIT_KIND) else None
        action = ToolAction(name, kind, target or error.what, path=path)
    lines = [line for line in error.lines if not line.startswith(_SAME)]
    return ToolEvent(-1, action, {}, "\n".join(lines), error.exit_code, True)
