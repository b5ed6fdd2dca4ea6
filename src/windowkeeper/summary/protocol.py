"""The summarizer contract: what a summarizer is given and what it returns (SPEC §6).

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
        analysis: the analysed turns (tool events, user texts), shared with the ledger;
            a summarizer that needs them builds one from ``turns`` when it is ``None``.
    """

    turns: Sequence[Message]
    previous_summary: str | None
    focus_topic: str | None
    budget_tokens: int
    today: date
    task_snapshot: str | None
    has_user_turn: bool
    analysis: Analysis | None = field(default=None, compare=False, repr=False)

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


SECTION_TITLES: tuple[str, ...] = (
    "Historical Task Snapshot",
    "Goal",
    "Constraints & Preferences",
    "Completed Actions",
    "Active State",
    "Blocked",
    "Key Decisions",
    "Resolved Questions",
    "Relevant Files",
    "Critical Context",
)
"""The handoff's section headings (``## <title>``), in order (SPEC §6)."""

NO_USER_SNAPSHOT = "None: no user-authored turn exists in this session."
USER_AFTER_SNAPSHOT = (
    "None before this handoff: the user's request is in the messages that follow it."
)
SNAPSHOT_HEAD, SNAPSHOT_TAIL = 1_000, 400
"""A longer task snapshot keeps this many leading and trailing characters."""
RESTATED_SNAPSHOT = "The request still in progress is restated verbatim right after this handoff."
