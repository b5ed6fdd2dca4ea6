"""The compressor driven by the LLM summarizer against a real loopback server.

For each failure: its classification, abort vs fallback, the cooldown (injected clock),
and that the result is either the unchanged input or carries the extractive handoff.
"""

from __future__ import annotations

from datetime import date

import pytest

from factories import long_session
from windowkeeper import CompressionConfig, ContextCompressor, LLMSummarizer, LLMSummarizerConfig
from windowkeeper.analysis.kinds import is_handoff
from windowkeeper.core.messages import content_text
from windowkeeper.core.report import FailureKind, Outcome, Reason
from windowkeeper.engine.guard import remaining_cooldown
from windowkeeper.testing import OpenAITestServer, Step, unused_port

GOOD = "## Work State\nIn progress:\n- Ship the refund fix.\n"


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def _compressor(base_url: str, clock: Clock, **config: object) -> ContextCompressor:
    summarizer = LLMSummarizer(
        LLMSummarizerConfig(model="summ", base_url=base_url, timeout=1.5, total_timeout=6)
    )
    return ContextCompressor(
        CompressionConfig(**{"prune_only_ratio": 0.01, **config}),  # type: ignore[arg-type]
        context_length=32_000,
        summarizer=summarizer,
        clock=clock,
        today=lambda: date(2026, 11, 30),
    )


CASES = [
    (Step.error(401), FailureKind.AUTH, True, 600.0),
    (Step.error(403), FailureKind.AUTH, True, 600.0),
    (Step.error(429), FailureKind.RATE_LIMIT, False, 45.0),
    (Step.error(500), FailureKind.SERVER_ERROR, False, 45.0),
    (Step.error(503), FailureKind.OVERLOADED, False, 45.0),
    (Step.html(502), FailureKind.SERVER_ERROR, False, 45.0),
    (Step.delay(4.0, then=Step.completion(GOOD)), FailureKind.TIMEOUT, True, 60.0),
    (Step.completion(""), FailureKind.EMPTY, False, 45.0),
    (
        Step.completion("I'm sorry, but I can't help with summarizing this."),
        FailureKind.REFUSAL,
        False,
        45.0,
    ),
    (Step.completion(GOOD, finish_reason="length"), FailureKind.TRUNCATED, False, 45.0),
    # Issue 25 point 8: a reply without the requested headings is reported, not dropped.
    (
        Step.completion("## Goal\nFix refunds.\n\n## Critical Context\nrounding"),
        FailureKind.FORMAT,
        False,
        45.0,
    ),
]


@pytest.mark.parametrize(
    ("step", "kind", "aborts", "cooldown"), CASES, ids=[c[1].value for c in CASES]
)
def test_failure_handling(step: Step, kind: FailureKind, aborts: bool, cooldown: float) -> None:
    clock = Clock()
    messages = long_session(30)
    with OpenAITestServer() as server:
        server.script(step)
        comp = _compressor(server.base_url, clock)
        result = comp.compress(messages)
    report = result.report
    assert report.failure is kind
    if aborts:
        assert result.messages is messages and report.outcome is Outcome.ABORTED
        assert "nothing was dropped" in report.detail
    else:
        assert report.compressed and report.fallback_used
        handoff = next(m for m in result.messages if is_handoff(m))
        assert "## Work State" in content_text(handoff["content"])
    assert remaining_cooldown(comp.guard, clock.now) == cooldown
    assert comp.decide(10**9).reason is Reason.COOLDOWN
    clock.now += cooldown
    assert comp.decide(10**9).reason is None


def test_connection_refused_aborts_and_climbs_the_ladder() -> None:
    clock = Clock()
    messages = long_session(30)
    comp = _compressor(f"http://127.0.0.1:{unused_port()}/v1", clock)
    waits = []
    for _ in range(3):
        result = comp.compress(messages, force=True)  # a manual compaction ignores the cooldown
        assert result.messages is messages and result.report.failure is FailureKind.NETWORK
        waits.append(remaining_cooldown(comp.guard, clock.now))
    assert waits == [60.0, 300.0, 900.0]
    skipped = comp.compress(messages)
    assert skipped.report.outcome is Outcome.SKIPPED and skipped.report.reason is Reason.COOLDOWN


def test_success_clears_the_cooldown_and_uses_the_llm_text() -> None:
    clock = Clock()
    with OpenAITestServer() as server:
        server.script(Step.error(500), Step.completion(GOOD))
        comp = _compressor(server.base_url, clock)
        comp.compress(long_session(30))
        result = comp.compress(long_session(30), force=True)
    assert result.report.summarizer == "llm" and not result.report.fallback_used
    assert "Ship the refund fix." in (result.summary or "")
    assert remaining_cooldown(comp.guard, clock.now) == 0.0


def test_abort_on_summary_failure_aborts_on_anything() -> None:
    messages = long_session(30)
    with OpenAITestServer() as server:
        server.script(Step.error(500))
        comp = _compressor(server.base_url, Clock(), abort_on_summary_failure=True)
        result = comp.compress(messages)
    assert result.messages is messages and result.report.aborted
