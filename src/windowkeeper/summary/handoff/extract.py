"""The handoff state of the summarized turns, merged with the previous handoff's.

The previous state is read back from the previous handoff's text; the turns add what
they hold. Nothing the previous handoff carried is dropped here: lists are merged and
capped by recency (the pinned constraints by age, never evicting the oldest), and the
budget is :mod:`.fit`'s business.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from ...analysis.events import Analysis
from .model import HandoffState, Quote
from .parse import parse_state
from .trail import (
    commands_of,
    environment_of,
    error_lines_of,
    event_files,
    merged_commands,
    merged_counts,
    merged_error_lines,
    merged_files,
    merged_values,
    repository_root,
    values_of,
    working_directories,
)
from .users import TASK_CHARS, UserTurn, constraints_of, merged_constraints, quoted, user_turns
from .work import decisions, focus_words, next_step, open_errors, still_open, work_state

NOTES_CHARS = 3_000


@dataclass(frozen=True)
class Placement:
    """What the compressor knows about where the user's words are kept verbatim.

    Attributes:
        task_in_head: the session's first user-written message is in the protected head.
        user_in_tail: a user-written message is in the verbatim tail (so the newest
            request need not be quoted).
        restated: the newest request is restated verbatim right after the handoff.
    """

    task_in_head: bool = False
    user_in_tail: bool = True
    restated: bool = False


def previous_state(body: str | None) -> HandoffState:
    """The state of a previous handoff body; another format is kept as notes."""
    if not body:
        return HandoffState()
    state = parse_state(body)
    if state is not None:
        return state
    text = body.strip()
    if len(text) > NOTES_CHARS:
        text = text[:NOTES_CHARS].rstrip() + "\n[…]"
    return HandoffState(notes=text)


def extract_state(
    analysis: Analysis,
    previous: HandoffState,
    placement: Placement = Placement(),
    focus: str | None = None,
) -> HandoffState:
    """The handoff state after these turns (see the module docstring)."""
    turns = user_turns(analysis.facts)
    task, in_head, turns = _task(previous, placement, turns)
    request, kept = _request(placement, turns)
    turns = kept if placement.restated else turns
    texts = [t.text for t in turns]
    turns = kept
    carried_users = [*previous.users, *([previous.request] if previous.request else [])]
    users = _deduped([*carried_users, *(quoted(t) for t in turns)])
    new_task = task is not None and task is not previous.task
    stated = constraints_of(([task.text] if new_task and task else []) + texts)
    facts_texts = ([task.text] if new_task and task else []) + texts
    events = [e for e in analysis.events() if not e.orphan]
    assistant = _assistant_texts(analysis)
    work, tracker = work_state(events, assistant, previous.work)
    cwds = working_directories(events, dict(previous.environment).get("Working directory"))
    touches = [t for event, cwd in zip(events, cwds, strict=False) for t in event_files(event, cwd)]
    facts_texts = ([task.text] if new_task and task else []) + texts
    files = merged_files(previous.files, touches)
    listed, counts = commands_of(events)
    return HandoffState(
        task=task,
        task_in_head=in_head,
        request=request,
        request_restated=placement.restated,
        users=users,
        constraints=merged_constraints(previous.constraints, stated),
        work=work,
        errors=open_errors(tracker, still_open(previous.errors, events)),
        decisions=decisions(assistant, previous.decisions, focus_words(focus)),
        root=repository_root(files, cwds[-1]) or previous.root,
        files=files,
        values=merged_values(
            previous.values, values_of(events, facts_texts, [t for _, t in assistant])
        ),
        next_step=next_step(assistant, events, previous.next_step),
        commands=merged_commands(previous.commands, listed),
        read_only=merged_counts(previous.read_only, counts),
        error_lines=merged_error_lines(previous.error_lines, error_lines_of(events, facts_texts)),
        earlier_commands=previous.earlier_commands,
        environment=environment_of(events, cwds[-1], previous.environment),
        notes=previous.notes,
    )


def _task(
    previous: HandoffState, placement: Placement, turns: list[UserTurn]
) -> tuple[Quote | None, bool, list[UserTurn]]:
    """The original task, carried unchanged once known; the remaining user turns."""
    if previous.task is not None:
        return previous.task, False, turns
    if placement.task_in_head:
        return None, True, turns
    if placement.restated and len(turns) == 1:
        return None, False, turns  # the task itself is restated after the handoff
    if turns and (previous.task_in_head or not previous.users):
        return quoted(turns[0], TASK_CHARS), False, turns[1:]
    return None, False, turns


def _request(placement: Placement, turns: list[UserTurn]) -> tuple[Quote | None, list[UserTurn]]:
    """The newest user request when no user message is kept after the handoff; a
    request restated after the handoff is left out (it is there verbatim)."""
    if placement.restated and turns:
        restated = turns[-1]
        kept = turns[:-1]
        if kept and set(restated.text.split()) <= {"[image]"}:
            kept = kept[:-1]  # an image-only send is restated with the request before it
        return None, kept
    if placement.user_in_tail or not turns:
        return None, turns
    return quoted(turns[-1]), turns[:-1]


def _deduped(users: Sequence[Quote]) -> tuple[Quote, ...]:
    seen: set[str] = set()
    kept = []
    for user in users:
        key = " ".join(user.text.split())
        if key not in seen:
            seen.add(key)
            kept.append(user)
    return tuple(kept)


def _assistant_texts(analysis: Analysis) -> list[tuple[int, str]]:
    return [
        (position, record.text)
        for position, record in enumerate(analysis.facts)
        if record.role == "assistant" and not record.handoff and record.text.strip()
    ]


def with_written(state: HandoffState, notes: str) -> HandoffState:
    """``state`` with free text a summarizer wrote kept as notes."""
    return replace(state, notes=notes.strip()) if notes.strip() else state
