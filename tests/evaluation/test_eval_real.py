"""Every real session evaluates at 32K, 16K and 8K; the figures agree with the plain replay."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from realdata import real_session_paths
from windowkeeper import load_conversation, replay
from windowkeeper.evaluation import EvalTotals, evaluate
from windowkeeper.evaluation.report import EvalReport

PATHS = real_session_paths()
pytestmark = [
    pytest.mark.real_sessions,
    pytest.mark.skipif(not PATHS, reason="../shared/data/sessions is not available"),
]


def check_consistent(report: EvalReport) -> None:
    kinds = report.retention_by_kind
    facts = sum(k.facts for k in kinds)
    assert all(k.kept_always <= k.kept_at_end <= k.facts for k in kinds)
    ages = report.retention_by_age
    if report.compactions and facts:
        assert ages[0].facts == facts  # every fact is checked right after it left
        assert [a.facts for a in ages] == sorted((a.facts for a in ages), reverse=True)
    elif not report.compactions:
        assert facts == 0 and not ages and not report.cache_breaks
    else:  # compactions that took no fact out of the verbatim context (pruning only)
        assert not ages
    assert sum(report.by_tier.values()) == len(report.compactions)
    # Every compaction followed by a request is in one cache break (a break can also come
    # from the last rungs alone, which cut tool results without a compaction).
    counted = sum(b.compactions for b in report.cache_breaks)
    last = report.requests - 1
    followed = sum(1 for c in report.compactions if c.request < last)
    assert followed <= counted <= len(report.compactions)
    assert all(b.kept_prefix_tokens <= b.previous_tokens for b in report.cache_breaks)
    assert sum(c.new_facts for c in report.compactions) <= facts
    json.dumps(report.to_dict())


@pytest.mark.parametrize("window", [32_000, 16_000, 8_000])
@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_real_session_evaluates(path: Path, window: int) -> None:
    conversation = load_conversation(path)
    report = evaluate(
        conversation.messages, context_length=window, tools=conversation.tools, name=path.stem
    )
    check_consistent(report)
    assert report.requests == sum(
        1 for i, m in enumerate(conversation.messages) if m["role"] == "assistant" and i
    )


def test_eval_tokens_are_the_replay_tokens() -> None:
    """evaluate() replays exactly as replay() does: same requests, same compactions."""
    reports = []
    for path in PATHS:
        conversation = load_conversation(path)
        args = {"context_length": 16_000, "tools": conversation.tools}
        plain = replay(conversation.messages, check_invariants=False, **args)
        report = evaluate(conversation.messages, **args)
        assert report.tokens_per_request == tuple(r.tokens for r in plain.requests)
        assert report.baseline_per_request == tuple(r.baseline_tokens for r in plain.requests)
        assert [c.before_tokens for c in report.compactions] == [
            c.before_tokens for c in plain.compactions
        ]
        reports.append(report)
    totals = EvalTotals.of(reports)
    assert totals.compactions > 0 and totals.cumulative_tokens < totals.cumulative_baseline_tokens
