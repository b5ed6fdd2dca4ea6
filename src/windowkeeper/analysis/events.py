"""Tool events (a call paired with its result) and user texts of a run of turns.

:class:`Analysis` is the analysed form of one message sequence (typically the turns a
compaction summarizes): built from the :class:`~.record.MessageFacts` of its messages,
it pairs calls with results and lists the real user texts once, and both the summarizer
and the ledger read them from it. Facts derived from an event (error lines, files
touched, identifiers) are remembered with the result's record, so a later compaction of
the same session reuses them too.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.frozen import slot_setters
from ..core.messages import Message, image_count
from .kinds import live_text
from .record import Analyzer, CallFacts, MessageFacts
from .toolshapes import OTHER_KIND, SHELL_KIND, ToolAction, exit_code


@dataclass(frozen=True, slots=True)
class ToolEvent:
    """One tool call paired with its result (``result`` is ``None`` when none was kept).

    An orphan is a tool result whose call is not in the turns; it has no real action.
    """

    position: int
    action: ToolAction
    args: Mapping[str, Any]
    result: str | None
    exit_code: int | None
    failed: bool
    orphan: bool = False
    call_id: str = ""
    """The call's id (what a later compaction finds the events a handoff covered by)."""
    memo: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """Facts derived from the event, computed once (see :func:`remembered`); shared with
    every event of the same call and result."""


def remembered(event: ToolEvent, name: str, compute: Callable[[ToolEvent], Any]) -> Any:
    """``compute(event)``, computed once per event (the result must not be mutated)."""
    memo = event.memo
    if name not in memo:
        memo[name] = compute(event)
    return memo[name]


# A result that opens like this failed even when it reports no exit code.
_TOOL_FAILURE = re.compile(
    r"\s*(?:\[tool error\]|<tool_use_error>|(?:error|fatal):|Traceback \(most recent call last\))",
    re.IGNORECASE,
)
_ORPHAN = ToolAction("tool", OTHER_KIND, "?")


def result_exit_code(result: MessageFacts) -> int | None:
    """The exit code a (shell) tool result reports, computed once per result."""
    code: int | None = result.remember("exit_code", lambda: exit_code(result.text))
    return code


def failed(code: int | None, result: str | None) -> bool:
    """Whether a tool result reports a failure (an exit code, or an error opening)."""
    if result is None:
        return False
    if code is not None:
        return code != 0
    return _TOOL_FAILURE.match(result[:200]) is not None


class Analysis:
    """The analysed form of ``messages`` (see the module docstring).

    Args:
        messages: the turns, in order.
        facts: their records, aligned with ``messages``; made by a fresh
            :class:`~.record.Analyzer` when not given.
    """

    def __init__(
        self, messages: Sequence[Message], facts: Sequence[MessageFacts] | None = None
    ) -> None:
        self.messages = messages
        self.facts = facts if facts is not None else Analyzer().analyze(messages)
        self._events: tuple[ToolEvent, ...] | None = None
        self._users: tuple[tuple[int, str], ...] | None = None

    def events(self) -> tuple[ToolEvent, ...]:
        """Every tool call in order, paired with its result by ``tool_call_id``."""
        if self._events is None:
            self._events = tuple(_pair(self.facts))
        return self._events

    def users(self) -> tuple[tuple[int, str], ...]:
        """(position, text) of each real user message; images appear as ``[image]``."""
        if self._users is None:
            self._users = tuple(_users(self.facts))
        return self._users


def tool_events(turns: Sequence[Message], analysis: Analysis | None = None) -> list[ToolEvent]:
    """The tool events of ``turns`` (from ``analysis`` when given)."""
    return list((analysis or Analysis(turns)).events())


def user_texts(turns: Sequence[Message], analysis: Analysis | None = None) -> list[tuple[int, str]]:
    """The real user texts of ``turns`` (from ``analysis`` when given)."""
    return list((analysis or Analysis(turns)).users())


def _pair(facts: Sequence[MessageFacts]) -> list[ToolEvent]:
    results: dict[str, MessageFacts] = {}
    for record in facts:
        if record.role == "tool":
            tid = record.message.get("tool_call_id")
            if isinstance(tid, str) and tid not in results:
                results[tid] = record
    events: list[ToolEvent] = []
    called: set[str] = set()
    for position, record in enumerate(facts):
        for call in record.calls:
            called.add(call.id)
            events.append(tool_event(call, results.get(call.id) if call.id else None, position))
        if record.role == "tool":
            tid = record.message.get("tool_call_id")
            if isinstance(tid, str) and tid not in called:
                text = record.text
                events.append(
                    ToolEvent(position, _ORPHAN, {}, text, None, failed(None, text), True)
                )
    return events


def tool_event(call: CallFacts, result: MessageFacts | None, position: int = 0) -> ToolEvent:
    """The event of ``call`` and its ``result``; facts derived from it are shared with
    every other event of the same call and result."""
    if result is None:
        return ToolEvent(position, call.action, call.args, None, None, False, call_id=call.id)
    text = result.text
    code = result_exit_code(result) if call.action.kind is SHELL_KIND else None
    # The result's own memo holds the event's facts (a result answers one call; the
    # event keys never collide with the record's own).
    event: ToolEvent = _new(ToolEvent)
    set_position, set_action, set_args, set_result, set_code = _SLOTS[:5]
    set_failed, set_orphan, set_call_id, set_memo = _SLOTS[5:]
    set_position(event, position)
    set_action(event, call.action)
    set_args(event, call.args)
    set_result(event, text)
    set_code(event, code)
    set_failed(event, failed(code, text))
    set_orphan(event, False)
    set_call_id(event, call.id)
    set_memo(event, result.memo)
    return event


# The event of a call and its result is made without the frozen ``__init__``, which sets
# each of its nine slots through ``object.__setattr__`` (a compaction pairs every call of
# its turns, and pruning describes every stubbed result through one): the slots' own
# descriptors set them (``slot_setters`` checks what that relies on); the equality with
# ``ToolEvent(...)`` is tested.
_SLOTS = slot_setters(ToolEvent)
_new = object.__new__


def _users(facts: Sequence[MessageFacts]) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for position, record in enumerate(facts):
        if record.real_user:
            message = record.message
            text = live_text(message)
            images = " ".join(["[image]"] * image_count(message))
            found.append((position, f"{text} {images}".strip()))
    return found
