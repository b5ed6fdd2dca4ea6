"""Secret redaction (SPEC §6): the implementation is :mod:`windowkeeper.core.secrets`, in
the core so every layer that writes text (pruned stubs, handoffs, the store's search and
recall) can mask with the same table; this module keeps the summary layer's name for it."""

from __future__ import annotations

from collections.abc import Sequence

from ..analysis.events import Analysis
from ..analysis.record import Analyzer, MessageFacts
from ..core.messages import Message
from ..core.secrets import REDACTED, redact, redact_message, redact_messages

__all__ = ("REDACTED", "masked_analysis", "redact", "redact_messages")


def masked_analysis(turns: Sequence[Message], analysis: Analysis) -> Analysis:
    """``analysis`` (of ``turns``) as it reads with every secret masked.

    What a summarizer reads and the ledger extracts from: a bare value lifted out of its
    context ("quoted: 'hunter2'") can no longer be told from an ordinary one, so secrets
    are masked before anything is extracted. Each message is masked once (the result
    lives in its record, so later compactions of the session reuse it); a message without
    secrets keeps its record, and ``analysis`` itself is returned when none has one.
    """
    records = [_masked(record) for record in analysis.facts]
    if all(new is old for new, old in zip(records, analysis.facts, strict=True)):
        return analysis
    return Analysis([record.message for record in records], records)


def _masked(record: MessageFacts) -> MessageFacts:
    def compute() -> MessageFacts:
        masked = redact_message(record.message)
        return record if masked is record.message else Analyzer().facts(masked)

    result: MessageFacts = record.remember("masked", compute)
    return result
