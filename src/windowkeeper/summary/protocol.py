"""The summarizer contract: what a summarizer is given and what it returns (design §5).

The compressor decides *what* is summarized; a summarizer only turns those turns (and
the previous handoff) into the body of the handoff's sections. The deterministic state
ledger is appended by the compressor, never written by a summarizer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Protocol, runtime_checkable

from ..analysis.events import Analysis
from ..core.messages import Message
from ..core.report import FailureKind
from .handoff.model import HandoffState
from .handoff.text import TITLES


@dataclass(frozen=True)
class SummaryFailure:
    kind: FailureKind
    detail: str


@dataclass(frozen=True)
class SummaryRequest:
    """Everything a summarizer may use.

    Attributes:
        turns: the messages being summarized, original (unpruned) content, in order,
            with earlier handoff messages removed.
        previous_summary: section body of the previous handoff (without prefix, end marker
            or ledger), when this is an iterative update.
        focus_topic: optional topic to preserve in more detail.
        budget_tokens: target size of the section body.
        today: the current date, for dated past-tense facts.
        task_snapshot: the newest unfulfilled user input, verbatim, or ``None`` when the
            summarized turns contain no user input.
        has_user_turn: whether the session has any real (non-synthetic) user turn.
        analysis: the analysed turns (tool events, user texts), for extraction only: the
            content of files read or written is not masked in it (send ``turns``); a
            summarizer that needs it builds one from ``turns`` when it is ``None``.
        state: the handoff state the compressor extracted mechanically (merged with the
            previous handoff); a summarizer writes the judgment sections
            (:data:`WRITTEN_TITLES`), the compressor fills in the rest from it.
        kept_after: the turns kept verbatim after the handoff (masked like ``turns``): a
            summarizer writes as of their end, so its notes never call finished work open.
        notes_on_top: tokens a summarizer's own sections may add to ``budget_tokens``
            (the extracted state keeps the whole budget); 0 when the window leaves no room,
            and then they share it.
        spec_on_top: tokens the spec of the work in progress may add to ``budget_tokens``
            (more of its whole output than its excerpt); 0: none.
    """

    turns: Sequence[Message]
    previous_summary: str | None
    focus_topic: str | None
    budget_tokens: int
    today: date
    task_snapshot: str | None
    has_user_turn: bool
    analysis: Analysis | None = field(default=None, compare=False, repr=False)
    state: HandoffState | None = field(default=None, compare=False, repr=False)
    notes_on_top: int = 0
    spec_on_top: int = 0
    kept_after: Sequence[Message] = field(default=(), compare=False, repr=False)

    def analysed(self) -> Analysis:
        """The analysis of ``turns``: the given one, else made now."""
        return self.analysis if self.analysis is not None else Analysis(self.turns)


@dataclass(frozen=True)
class SummaryOutcome:
    """Either a section body or a failure, never both."""

    body: str | None = None
    failure: SummaryFailure | None = None
    summarizer: str = ""

    def __post_init__(self) -> None:
        if (self.body is None) == (self.failure is None):
            raise ValueError("SummaryOutcome needs exactly one of body or failure")


@runtime_checkable
class Summarizer(Protocol):
    """Turns a :class:`SummaryRequest` into handoff section text."""

    @property
    def name(self) -> str: ...

    def summarize(self, request: SummaryRequest) -> SummaryOutcome: ...


SECTION_TITLES: tuple[str, ...] = TITLES
"""The handoff's section headings (``## <title>``), in order (design §5)."""

WRITTEN_TITLES: tuple[str, ...] = ("Work State", "Key Decisions", "Next Step")
WRITTEN_SHARE = 0.40
"""Fraction of the handoff budget a summarizer's own sections may take."""


def written_budget(budget_tokens: int) -> int:
    """Tokens a summarizer's own sections may take of a handoff budget (asked for in the
    prompt; the notes are trimmed to it by whole lines)."""
    return max(200, int(budget_tokens * WRITTEN_SHARE))


"""The sections a summarizer writes in its own words; every other section is filled
mechanically (task, user messages, constraints, errors, files, values, the ledger)."""
