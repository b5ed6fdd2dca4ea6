"""The handoff state of the summarized turns, merged with the previous handoff's.

The previous state is read back from the previous handoff's text; the turns add what
they hold. Nothing the previous handoff carried is dropped here: lists are merged and
capped by recency (the pinned constraints by age, never evicting the oldest), and the
budget is :mod:`.fit`'s business.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from ...analysis.events import Analysis, ToolEvent
from ...analysis.specs import NamedLater
from ..trim import trim_text
from .model import HandoffState, Quote, Spec
from .parse import parse_state
from .specs import specs_of
from .trail import (
    anchored,
    commands_of,
    environment_of,
    error_lines_of,
    merged_commands,
    merged_counts,
    merged_error_lines,
    merged_files,
    merged_values,
    repository_root,
    session_touches,
    values_of,
    working_directories,
)
from .users import UserTurn, constraints_of, merged_constraints, quoted, task_quote, user_turns
from .work import decisions, focus_words, next_step, open_errors, still_open, work_state

NOTES_TOKENS = 750


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
    restated_text: str = ""
    """The text restated after the handoff (the newest request, and the written request
    an image-only send continues)."""


def previous_state(body: str | None) -> HandoffState:
    """The state of a previous handoff body; another format is kept as notes."""
    if not body:
        return HandoffState()
    state = parse_state(body)
    if state is not None:
        return state
    # Another summarizer's notes: whole lines kept, the oldest left out first.
    return HandoffState(notes=trim_text(body.strip(), NOTES_TOKENS))


def extract_state(
    analysis: Analysis,
    previous: HandoffState,
    placement: Placement = Placement(),
    focus: str | None = None,
    tail: Analysis | None = None,
    head: Analysis | None = None,
) -> HandoffState:
    """The handoff state after these turns (see the module docstring).

    ``tail``: the turns kept verbatim after the handoff, whose files join the file map;
    ``head``: the protected head, whose tool output pruning has just replaced by stubs:
    its tool events count as the oldest of the summarized ones (its user words stay
    verbatim there and are not quoted).
    """
    said = _user_side(analysis, previous, placement)
    events = [e for e in analysis.events() if not e.orphan]
    # The head's pruned tool events are the oldest of the trail; positions are relative
    # to the summarized turns, so the work state reads those turns' events only.
    head_events = _events(head)
    trail = [*head_events, *events]
    assistant = _assistant_texts(analysis)
    work, tracker = work_state(events, assistant, previous.work)
    cwds = working_directories(trail, dict(previous.environment).get("Working directory"))
    files, base = _file_map(previous, trail, tail, cwds)
    listed, counts = commands_of(trail)
    return HandoffState(
        task=said.task,
        task_in_head=said.task_in_head,
        request=said.request,
        request_restated=placement.restated,
        users=said.users,
        specs=_specs(said, previous, trail, head, tail),
        constraints=merged_constraints(previous.constraints, said.constraints),
        work=work,
        errors=open_errors(tracker, still_open(previous.errors, events)),
        decisions=decisions(assistant, previous.decisions, focus_words(focus)),
        root=repository_root(files, cwds[-1] or base) or previous.root,
        files=files,
        values=merged_values(
            previous.values, values_of(trail, said.texts, [t for _, t in assistant])
        ),
        next_step=next_step(assistant, events, previous.next_step),
        commands=merged_commands(previous.commands, listed),
        read_only=merged_counts(previous.read_only, counts),
        error_lines=merged_error_lines(previous.error_lines, error_lines_of(trail, said.texts)),
        earlier_commands=previous.earlier_commands,
        environment=environment_of(trail, cwds[-1], previous.environment),
        notes=previous.notes,
    )


def _events(analysis: Analysis | None) -> list[ToolEvent]:
    return [e for e in analysis.events() if not e.orphan] if analysis is not None else []


def _specs(
    said: _Said,
    previous: HandoffState,
    trail: list[ToolEvent],
    head: Analysis | None,
    tail: Analysis | None,
) -> tuple[Spec, ...]:
    """The specs after these turns: the user's words (quoted, summarized, in the head)
    say which is the task's; the tail's commands, which item was named last."""
    quotes = [*([said.task] if said.task else []), *said.users, *previous.users]
    head_turns = user_turns(head.facts) if head is not None else []
    texts = [*(q.text for q in quotes), *said.texts, *(t.text for t in head_turns)]
    named = NamedLater(lambda: texts)  # scanned only if a document read asks
    return specs_of(trail, texts, named, previous.specs, _events(tail))


def _file_map(
    previous: HandoffState, trail: list[ToolEvent], tail: Analysis | None, cwds: list[str | None]
) -> tuple[tuple[tuple[str, str], ...], str | None]:
    """The merged file map, anchored at the newest working directory (and that base); it
    covers the turns kept verbatim after the handoff too."""
    kept_events = _events(tail)
    every = [*trail, *kept_events]
    touches = session_touches(every, [*cwds[:-1], *working_directories(kept_events, cwds[-1])])
    return anchored(merged_files(previous.files, touches), cwds[-1])


@dataclass(frozen=True)
class _Said:
    """What the summarized turns' user messages contribute."""

    task: Quote | None
    task_in_head: bool
    request: Quote | None
    users: tuple[Quote, ...]
    constraints: tuple[str, ...]
    texts: list[str]
    """The texts facts are lifted from: a newly found task, then the turns' own."""


def _user_side(analysis: Analysis, previous: HandoffState, placement: Placement) -> _Said:
    turns = user_turns(analysis.facts)
    task, in_head, turns = _task(previous, placement, turns)
    request, kept = _request(placement, turns)
    turns = kept if placement.restated else turns
    texts = [t.text for t in turns]
    carried_users = [*previous.users, *([previous.request] if previous.request else [])]
    users = _deduped([*carried_users, *(quoted(t) for t in kept)])
    new_task = task is not None and task is not previous.task
    lifted = ([task.text] if new_task and task else []) + texts
    return _Said(task, in_head, request, users, tuple(constraints_of(lifted)), lifted)


def _task(
    previous: HandoffState, placement: Placement, turns: list[UserTurn]
) -> tuple[Quote | None, bool, list[UserTurn]]:
    """The original task, carried unchanged once known; the remaining user turns."""
    if previous.task is not None:
        return previous.task, False, turns
    if placement.task_in_head:
        return None, True, turns
    if placement.restated and turns and _is_restated(turns[0], placement):
        return None, False, turns  # the task itself is restated after the handoff
    if turns and (previous.task_in_head or not previous.users):
        return task_quote(turns[0]), False, turns[1:]
    return None, False, turns


def _request(placement: Placement, turns: list[UserTurn]) -> tuple[Quote | None, list[UserTurn]]:
    """The newest user request when no user message is kept after the handoff; a
    request restated after the handoff is left out (it is there verbatim)."""
    if placement.restated:
        return None, [t for t in turns if not _is_restated(t, placement)]
    if placement.user_in_tail or not turns:
        return None, turns
    return quoted(turns[-1]), turns[:-1]


def _is_restated(turn: UserTurn, placement: Placement) -> bool:
    text = turn.text.replace("[image]", "").strip()
    return bool(text) and text in placement.restated_text


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
