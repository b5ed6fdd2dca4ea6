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
from ...analysis.facts import dedupe
from ...analysis.specexcerpt import SPEC_CHARS
from ...analysis.specs import NamedLater
from ..trim import trim_text
from .closing import closing_steps
from .decide import changes_of, decisions, focus_words
from .errors import open_errors, still_open
from .fixes import merged_fixed
from .items import is_closed
from .model import HandoffState, OpenError, Quote, Spec, WorkItem
from .parse import parse_state
from .progress import last_action, next_step
from .specs import ahead_in_specs, specs_of
from .trail import (
    SOURCE_DIRS,
    anchored,
    commands_of,
    commits_of,
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
from .users import (
    UserTurn,
    constraints_of,
    merged_constraints,
    quoted,
    strongest_first,
    task_quote,
    task_scope,
    user_turns,
)
from .valuetext import grouped_values, merged_commits
from .work import work_state
from .workpaths import relative, relative_text

NOTES_TOKENS = 750
OPENING_CHARS = 500
"""A task kept in the head is excerpted by its head, up to this length (not its tail:
harnesses append their own instructions there, which are not the user's)."""


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
    *,
    spec_chars: int = SPEC_CHARS,
) -> HandoffState:
    """The handoff state after these turns (see the module docstring).

    ``tail``: the turns kept verbatim after the handoff. Where the work stands is
    stated as of compaction time: the work state, the open errors, the last action and
    the next step cover the tail too, and the handoff records the newest call they
    counted (``covered``), so the next compaction counts only the calls after it. The
    trail (files, values, commands, error lines, decisions) is that of the summarized
    turns, as the tail keeps its own verbatim (files cover the tail: a merge is
    idempotent). The user's words in the tail stay there and are not quoted. ``head``:
    the protected head, whose tool output pruning has just replaced by stubs: its tool
    events count as the oldest of the trail (its user words stay verbatim there).
    ``spec_chars``: the excerpt size of each spec shown (it grows with the budget).
    """
    said = _user_side(analysis, previous, placement)
    turns = _turns(analysis, tail, head, previous.covered)
    trail = _trail_state(previous, turns, said.texts, focus)
    head_task = _head_task(head) if said.task_in_head else ""
    # A task kept verbatim in the head is quoted here by its opening only: its rules are
    # listed, so the handoff read alone still carries them.
    # Its scope ("your task is to change X") first, then its bans, then its obligations.
    rules = [*task_scope(head_task), *strongest_first(constraints_of([head_task]))]
    rules = rules if head_task else []
    state = replace(
        trail, task=said.task, task_in_head=said.task_in_head,
        task_opening=_opening(head_task), request=said.request,
        request_restated=placement.restated, users=said.users,
        constraints=merged_constraints(previous.constraints, said.constraints),
        task_rules=tuple(dedupe([*previous.task_rules, *rules])),
    )  # fmt: skip
    state = _status(state, previous, turns)
    specs = _specs(said, previous, turns, head, state.work.items, spec_chars)
    step = state.next_step
    if step != previous.next_step:  # newly derived: what the specs say is ahead goes with it
        ahead = ahead_in_specs(specs, {i.id for i in state.work.items})
        # And what the task says to do once the work is done (submit the patch).
        closing = closing_steps(head_task or (said.task.text if said.task else ""))
        step = "\n".join(x for x in (step, *ahead, closing) if x)
    return replace(state, specs=specs, next_step=step)


@dataclass(frozen=True)
class _Turns:
    """The tool events and assistant texts one compaction reads."""

    every: list[ToolEvent]
    """The summarized turns' events, then the tail's."""
    events: list[ToolEvent]
    """Of ``every``, those after the call the previous handoff counted last."""
    trail: list[ToolEvent]
    """The head's events, then the summarized turns'."""
    kept: list[ToolEvent]
    """The tail's events."""
    summarized_texts: list[tuple[int, str]]
    assistant: list[tuple[int, str]]
    """The summarized turns' assistant texts, then the tail's."""


def _turns(
    analysis: Analysis, tail: Analysis | None, head: Analysis | None, covered: str
) -> _Turns:
    summarized = _events(analysis)
    kept = _events(tail, len(analysis.facts))
    head_events = _events(head) if head is not None else []
    texts = _assistant_texts(analysis)
    return _Turns(
        [*summarized, *kept], _after([*summarized, *kept], covered),
        [*head_events, *summarized], kept, texts,
        [*texts, *_assistant_texts(tail, len(analysis.facts))],
    )  # fmt: skip


def _trail_state(
    previous: HandoffState, turns: _Turns, user_texts: list[str], focus: str | None
) -> HandoffState:
    """The trail of the summarized turns merged with the previous one: files (the tail's
    too), root, values, commands, error lines, environment, decisions."""
    trail = turns.trail
    cwds = working_directories(trail, dict(previous.environment).get("Working directory"))
    files, base = _file_map(previous, trail, turns.kept, cwds)
    listed, counts = commands_of(trail)
    texts = [t for _, t in turns.summarized_texts]
    start = len(trail) - (len(turns.every) - len(turns.kept))  # the summarized turns' events
    changes = changes_of(trail[start:], cwds[start : len(trail)])
    return HandoffState(
        decisions=decisions(
            turns.summarized_texts, previous.decisions, focus_words(focus), changes
        ),
        root=_root(repository_root(files, cwds[-1] or base), previous.root),
        files=files,
        unlisted=previous.unlisted,
        values=merged_values(previous.values, values_of(trail, user_texts, texts)),
        commands=merged_commands(previous.commands, listed),
        read_only=merged_counts(previous.read_only, counts),
        error_lines=merged_error_lines(previous.error_lines, error_lines_of(trail, user_texts)),
        earlier_commands=previous.earlier_commands,
        environment=environment_of(trail, cwds[-1], previous.environment),
        notes=previous.notes,
    )


def _status(state: HandoffState, previous: HandoffState, turns: _Turns) -> HandoffState:
    """``state`` with where the work stands at compaction time (the tail included)."""
    events, assistant, root = turns.events, turns.assistant, state.root
    work, tracker = work_state(events, assistant, previous.work)
    carried, fixed = still_open(previous.errors, events, assistant)
    errors = open_errors(tracker, carried)
    work = replace(work, fixed=merged_fixed(work.fixed, fixed))
    commits = merged_commits(previous.commits, commits_of(events))
    last = relative_text(last_action(events, assistant), root) or previous.last_action
    step = next_step(assistant, events, work.items, previous.next_step, errors, work.pending)
    return replace(
        state, work=relative(work, root), errors=errors, commits=commits, next_step=step,
        last_action=last, values=grouped_values(state.values, commits, (i.id for i in work.items)),
        error_lines=_unshown(state.error_lines, errors),
        covered=next((e.call_id for e in reversed(turns.every) if e.result is not None), "")
        or previous.covered,
    )  # fmt: skip


def _specs(
    said: _Said,
    previous: HandoffState,
    turns: _Turns,
    head: Analysis | None,
    items: Sequence[WorkItem],
    chars: int,
) -> tuple[Spec, ...]:
    """The specs after these turns: the user's words (quoted, summarized, in the head)
    say which is the task's; the work items' status and the tail's commands, which
    item's spec is shown (the one in progress, else the one named last not closed)."""
    quotes = [*([said.task] if said.task else []), *said.users, *previous.users]
    head_turns = user_turns(head.facts) if head is not None else []
    texts = [*(q.text for q in quotes), *said.texts, *(t.text for t in head_turns)]
    named = NamedLater(lambda: texts)  # scanned only if a document read asks
    closed = {i.id for i in items if is_closed(i)}
    working = {i.id for i in items} - closed
    return specs_of(turns.trail, texts, named, previous.specs, turns.kept, working, closed, chars)


def _file_map(
    previous: HandoffState,
    trail: list[ToolEvent],
    kept: list[ToolEvent],
    cwds: list[str | None],
) -> tuple[tuple[tuple[str, str], ...], str | None]:
    """The merged file map (the turns kept verbatim after the handoff included), with
    relative paths anchored, and the directory they were anchored at."""
    touches = session_touches([*trail, *kept], [*cwds[:-1], *working_directories(kept, cwds[-1])])
    return anchored(merged_files(previous.files, touches))


def _events(analysis: Analysis | None, offset: int = 0) -> list[ToolEvent]:
    """The tool events of ``analysis`` (orphans left out), positions shifted by
    ``offset`` (the tail's come after the summarized turns)."""
    if analysis is None:
        return []
    found = [e for e in analysis.events() if not e.orphan]
    return [replace(e, position=e.position + offset) for e in found] if offset else found


def _after(events: list[ToolEvent], covered: str) -> list[ToolEvent]:
    """The events after the one the previous handoff counted last (all of them when it
    is not found: an older handoff, or a history that lost it)."""
    if covered:
        for index, event in enumerate(events):
            if event.call_id == covered:
                return events[index + 1 :]
    return events


def _root(found: str, previous: str) -> str:
    """The repository root: the one found, unless it lies inside a source directory of
    the previous one (``lib/``, ``src/``: the root does not narrow to where the newest
    files are; the work state names files relative to it)."""
    if not found:
        return previous
    if previous and found.startswith(previous):
        inner = found[len(previous) :].split("/", 1)[0]
        return previous if inner in SOURCE_DIRS else found
    return found


def _unshown(lines: tuple[str, ...], errors: tuple[OpenError, ...]) -> tuple[str, ...]:
    """The error lines the open errors do not already quote (the fixed ones' lines stay:
    a short render may leave those entries out)."""
    shown = {line for error in errors for line in error.lines}
    return tuple(line for line in lines if line not in shown)


def _head_task(head: Analysis | None) -> str:
    """The task the head keeps verbatim: its first message a user wrote."""
    turns = user_turns(head.facts) if head is not None else []
    return turns[0].text.strip() if turns else ""


def _opening(text: str) -> str:
    """An excerpt of the task the head keeps verbatim (for the handoff read alone)."""
    return text if len(text) <= OPENING_CHARS else text[: OPENING_CHARS - 1].rstrip() + " […]"


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


def _assistant_texts(analysis: Analysis | None, offset: int = 0) -> list[tuple[int, str]]:
    if analysis is None:
        return []
    return [
        (position + offset, record.text)
        for position, record in enumerate(analysis.facts)
        if record.role == "assistant" and not record.handoff and record.text.strip()
    ]


def with_written(state: HandoffState, notes: str) -> HandoffState:
    """``state`` with free text a summarizer wrote kept as notes."""
    return replace(state, notes=notes.strip()) if notes.strip() else state
