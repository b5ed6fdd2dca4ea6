"""Secret redaction (design §5): the implementation is :mod:`windowkeeper.core.secrets`, in
the core so every layer that writes text (pruned stubs, handoffs, the store's search and
recall) can mask with the same table; this module keeps the summary layer's name for it,
and masks whole messages (what the summarizer and the handoff's extraction read)."""

from __future__ import annotations

from collections.abc import Container, Sequence
from operator import is_not
from typing import Any, overload

from ..analysis.events import Analysis, failed
from ..analysis.record import Analyzer, CallFacts, MessageFacts, memo_key
from ..analysis.todos import todo_items
from ..analysis.toolshapes import EDIT_KIND, READ_KIND, WRITE_KIND
from ..compaction.plan import archive_handle
from ..core.messages import Message
from ..core.secrets import REDACTED, redact

__all__ = ("REDACTED", "MaskedTurns", "masked_analysis", "redact")


Masks = dict[str, str]
"""Each text masked so far in one compaction, and what masking made of it."""


def masked_analysis(analysis: Analysis, masks: Masks | None = None) -> Analysis:
    """``analysis`` as the handoff's extraction reads it: secrets masked.

    A bare value lifted out of its context ("quoted: 'hunter2'", an id that was a key)
    can no longer be told from an ordinary one, so secrets are masked before anything is
    extracted. The content of a file read successfully is left as it is, and so is the
    content a write or edit call with a path wrote: nothing lifts a bare value out of
    them (identifiers skip file contents, error lines are whole lines, of a write only
    its path and a diff's paths are taken), and every line that does reach the handoff
    is masked with the handoff's text. So ``analysis`` is for extraction only: what a
    summarizer sends anywhere comes from :class:`MaskedTurns`. Each message is masked
    once (the result lives in its record, so later compactions of the session reuse
    it); a message without secrets keeps its record, and ``analysis`` itself is
    returned when none has one.

    ``masks``: the texts masked so far in this compaction (filled here; one dict for the
    turns and the tail). Agents re-run the same commands and get the same outputs, and a
    text that holds a secret costs a hint scan and the rules each time it is masked; a
    text seen before is looked up instead (masking is a pure function of the text).
    """
    contents = _file_contents(analysis.facts)
    facts = analysis.facts
    seen: Masks = {} if masks is None else masks
    records = [
        record if i in contents else _extracted(record, seen) for i, record in enumerate(facts)
    ]
    if all(new is old for new, old in zip(records, facts, strict=True)):
        return analysis
    return Analysis([record.message for record in records], records)


class MaskedTurns(Sequence[Message]):
    """The turns a summarizer reads, each masked when it is first read (once per message).

    What a summarizer is sent carries no secret, file contents included; a summarizer
    that never reads the turns (the extractive one) costs nothing.
    """

    def __init__(self, facts: Sequence[MessageFacts]) -> None:
        self._facts = facts

    def __len__(self) -> int:
        return len(self._facts)

    def handles(self) -> tuple[str, ...]:
        """The archive handle of each turn (of its original: what a recall returns)."""
        return tuple(archive_handle(record) for record in self._facts)

    @overload
    def __getitem__(self, index: int) -> Message: ...
    @overload
    def __getitem__(self, index: slice) -> list[Message]: ...
    def __getitem__(self, index: int | slice) -> Message | list[Message]:
        if isinstance(index, slice):
            return [_masked(record).message for record in self._facts[index]]
        return _masked(self._facts[index]).message


def _file_contents(facts: Sequence[MessageFacts]) -> set[int]:
    """Positions of tool results that are the content of a file read without failure."""
    reads = {call.id for record in facts for call in record.calls
             if call.id and call.action.kind is READ_KIND}  # fmt: skip
    if not reads:
        return set()
    return {
        i
        for i, record in enumerate(facts)
        if record.role == "tool"
        and record.message.get("tool_call_id") in reads
        and not failed(None, record.text)
    }


def _extracted(record: MessageFacts, seen: Masks) -> MessageFacts:
    """``record`` masked for extraction: the calls that write a file's content to a path
    are left as they are (extraction takes their path and the paths of a diff in them)."""
    if record.role != "assistant":
        return _masked(record, (), seen)
    # Each call asked once (no writing call: the key of most records).
    keep = tuple(i for i, call in enumerate(record.calls) if _writes_content(call))
    return _masked(record, keep, seen)


def _writes_content(call: CallFacts) -> bool:
    return (
        call.action.kind in (WRITE_KIND, EDIT_KIND)
        and bool(call.action.path)
        and todo_items(call.name, call.args) is None
    )


def _masked(
    record: MessageFacts, keep_calls: tuple[int, ...] = (), seen: Masks | None = None
) -> MessageFacts:
    """``record`` with its secrets masked (the calls at ``keep_calls`` left as they are),
    computed once per message and choice of calls (``seen``: as :func:`redact_message`)."""

    def compute() -> MessageFacts | None:
        masked = redact_message(record.message, keep_calls, seen)
        return None if masked is record.message else Analyzer().facts(masked)

    # A message without secrets (most) is remembered as ``None``, not as the record
    # itself: a memo holding its own record is a reference cycle, which keeps a record
    # the analyzer forgot alive until the cyclic collector runs.
    key = memo_key(_MASKED, *keep_calls) if keep_calls else _MASKED
    found: MessageFacts | None = record.remember(key, compute)
    return record if found is None else found


_MASKED = memo_key("masked")  # the key of most records (no call kept), made once


def redact_message(
    message: Message, keep_calls: Container[int] = (), seen: Masks | None = None
) -> Message:
    """A copy of ``message`` with its secrets masked; ``message`` itself when it has none.

    ``keep_calls``: positions of tool calls left as they are (what a caller knows it
    takes nothing from but a path). ``seen``: texts masked before and their results,
    looked up first and filled in (see :func:`masked_analysis`)."""
    changes: dict[str, Any] = {}
    content = message.get("content")
    if isinstance(content, str):
        masked = redact(content, seen)
        if masked != content:
            changes["content"] = masked
    elif isinstance(content, list):
        parts = [_redact_part(part, seen) for part in content]
        if any(map(is_not, parts, content)):
            changes["content"] = parts
    calls = message.get("tool_calls")
    if isinstance(calls, list):
        masked_calls = [
            c if i in keep_calls else _redact_call(c, seen) for i, c in enumerate(calls)
        ]
        if any(map(is_not, masked_calls, calls)):
            changes["tool_calls"] = masked_calls
    return {**message, **changes} if changes else message


def _redact_part(part: object, seen: Masks | None) -> object:
    if isinstance(part, dict) and isinstance(part.get("text"), str):
        masked = redact(part["text"], seen)
        if masked != part["text"]:
            return {**part, "text": masked}
    return part


def _redact_call(call: object, seen: Masks | None) -> object:
    function = call.get("function") if isinstance(call, dict) else None
    arguments = function.get("arguments") if isinstance(function, dict) else None
    if not isinstance(arguments, str):
        return call
    masked = redact(arguments, seen)
    if masked == arguments:
        return call
    assert isinstance(call, dict) and isinstance(function, dict)
    return {**call, "function": {**function, "arguments": masked}}
