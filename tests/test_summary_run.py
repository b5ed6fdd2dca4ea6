"""Any summarizer, the user's own included, is held to the same rules by the core.

A summarizer that raises is a classified summary failure (fallback or abort as the
failure kind says), never an exception out of ``compress``; think/reasoning blocks are
stripped from whatever text it returns; the "compressed N times" warning is said once,
when the session crosses it.
"""

from __future__ import annotations

import logging
from datetime import date

import pytest

from factories import long_session
from windowkeeper.core.config import CompressionConfig
from windowkeeper.core.report import FailureKind
from windowkeeper.engine.compressor import ContextCompressor
from windowkeeper.summary.protocol import SummaryOutcome, SummaryRequest


class Raising:
    """A user's summarizer with a bug in it."""

    name = "mine"

    def __init__(self, error: BaseException) -> None:
        self.error = error
        self.calls = 0

    def summarize(self, request: SummaryRequest) -> SummaryOutcome:
        self.calls += 1
        raise self.error


class Thinking:
    """A user's summarizer whose model thinks out loud."""

    name = "thinker"

    def summarize(self, request: SummaryRequest) -> SummaryOutcome:
        body = "<think>the user wants refunds fixed, maybe</think>\n## Goal\nFix the refund test"
        return SummaryOutcome(body=body, summarizer=self.name)


def _compressor(summarizer: object, **config: object) -> ContextCompressor:
    return ContextCompressor(
        CompressionConfig(**{"prune_only_ratio": 0.01, **config}),  # type: ignore[arg-type]
        context_length=32_000,
        summarizer=summarizer,  # type: ignore[arg-type]
        today=lambda: date(2026, 12, 1),
    )


@pytest.mark.parametrize(
    "error", [ZeroDivisionError("division by zero"), KeyError("turns"), RuntimeError("bug")]
)
def test_a_raising_summarizer_is_a_classified_failure_with_the_fallback(
    error: Exception, caplog: pytest.LogCaptureFixture
) -> None:
    summarizer = Raising(error)
    with caplog.at_level(logging.WARNING):
        result = _compressor(summarizer).compress(long_session(30), force=True)
    assert summarizer.calls == 1
    assert result.report.compressed and result.report.fallback_used
    assert result.report.failure is FailureKind.OTHER
    assert result.report.summarizer != "mine"  # the extractive fallback wrote it
    # the cause is named, not just "summary failed (other)"
    assert any(type(error).__name__ in r.getMessage() or str(error) in r.getMessage()
               for r in caplog.records), [r.getMessage() for r in caplog.records]  # fmt: skip


def test_a_raising_summarizer_aborts_when_told_to() -> None:
    summarizer = Raising(ValueError("no such model field"))
    messages = long_session(30)
    result = _compressor(summarizer, abort_on_summary_failure=True).compress(messages, force=True)
    assert result.report.aborted and result.report.failure is FailureKind.OTHER
    assert result.messages == messages  # nothing was dropped
    assert "ValueError: no such model field" in result.report.detail


def test_think_blocks_of_any_summarizer_never_reach_the_handoff() -> None:
    result = _compressor(Thinking()).compress(long_session(30), force=True)
    assert result.report.compressed and not result.report.fallback_used
    text = "\n".join(str(m.get("content")) for m in result.messages)
    assert "Fix the refund test" in text
    assert "<think>" not in text and "maybe" not in text


def test_the_compressed_n_times_warning_is_said_once() -> None:
    comp = _compressor(None)
    messages = long_session(30)
    said = []
    for _ in range(4):
        result = comp.compress(messages, force=True)
        assert result.report.compressed
        said.append(any("compressed 2 times" in w for w in result.report.warnings))
        messages = [*result.messages, *long_session(12, with_system=False)[1:]]
    assert said == [False, True, False, False]
