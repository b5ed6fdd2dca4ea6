"""Running the summarizer of one compaction (design §6): the summary, the extractive
fallback, or — for failures that abort — the failure, with the guard's new state.

Whatever a summarizer raises (a built-in or a user's) is a classified summary failure,
never an exception out of ``compress``; think/reasoning blocks never reach a handoff,
whichever summarizer wrote them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace

from ..core.config import CompressionConfig
from ..core.report import FailureKind
from ..summary.extractive.summarizer import ExtractiveSummarizer
from ..summary.failures import classify_exception
from ..summary.llm.prompt import strip_think
from ..summary.protocol import Summarizer, SummaryFailure, SummaryOutcome, SummaryRequest
from .guard import GuardState, on_summary_failure, on_summary_success

log = logging.getLogger("windowkeeper.engine.compressor")


@dataclass(frozen=True)
class SummaryRun:
    """What a summary run produced.

    ``complete``: the body is a whole handoff (the extractive summarizer's), not only the
    judgment sections a summary model writes.
    """

    outcome: SummaryOutcome
    failure: SummaryFailure | None
    complete: bool
    guard: GuardState


def run_summary(
    summarizer: Summarizer,
    fallback: Summarizer,
    request: SummaryRequest,
    guard: GuardState,
    config: CompressionConfig,
    now: float,
) -> SummaryRun:
    """The summary, or the fallback's, or (for aborting failures) the failure."""
    outcome = _call(summarizer, request)
    if outcome.body is not None and outcome.body.strip():
        complete = isinstance(summarizer, ExtractiveSummarizer)
        return SummaryRun(outcome, None, complete, on_summary_success(guard))
    failure = outcome.failure or SummaryFailure(
        FailureKind.EMPTY, "the summarizer returned an empty summary"
    )
    guard = on_summary_failure(guard, failure.kind, now)
    if failure.kind.aborts or config.abort_on_summary_failure:
        log.warning("summary failed (%s): %s", failure.kind.value, failure.detail)
        aborted = SummaryOutcome(failure=failure, summarizer=outcome.summarizer)
        return SummaryRun(aborted, failure, False, guard)
    log.warning(
        "summary failed (%s: %s); using the extractive fallback",
        failure.kind.value, failure.detail,
    )  # fmt: skip
    return SummaryRun(fallback.summarize(request), failure, True, guard)


def _call(summarizer: Summarizer, request: SummaryRequest) -> SummaryOutcome:
    try:
        outcome = summarizer.summarize(request)
    except Exception as exc:  # any summarizer, ours or a user's: classified, not hidden
        failure = classify_exception(exc, endpoint=f"the {summarizer.name} summarizer")
        return SummaryOutcome(failure=failure, summarizer=summarizer.name)
    if outcome.body is not None:
        return replace(outcome, body=strip_think(outcome.body))
    return outcome
