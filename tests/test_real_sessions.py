"""Every real session compressed at a small window: invariants and reduction."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from realdata import real_session_paths
from windowkeeper.adapters.formats import load_conversation
from windowkeeper.analysis.kinds import is_real_user, live_text, user_text
from windowkeeper.compaction.handoff import render_handoff
from windowkeeper.compaction.placement import with_system_note
from windowkeeper.core.invariants import violations
from windowkeeper.core.messages import content_text
from windowkeeper.core.report import Tier
from windowkeeper.core.tokens import estimate_messages_tokens, estimate_tokens, tool_schema_tokens
from windowkeeper.engine.compressor import ContextCompressor

PATHS = real_session_paths()
pytestmark = [
    pytest.mark.real_sessions,
    pytest.mark.skipif(not PATHS, reason="../shared/data/sessions is not available"),
]


@pytest.mark.parametrize("window", [8_000, 16_000, 32_000])
@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_real_session_compaction(path: Path, window: int) -> None:
    conversation = load_conversation(path)
    messages = conversation.messages
    before_text = json.dumps(messages)
    comp = ContextCompressor(context_length=window)
    plan = comp.plan(messages)
    result = comp.compress(messages, force=True)
    out = result.messages
    assert json.dumps(messages) == before_text  # input untouched
    assert violations(out) == []
    # The newest request the user wrote survives verbatim (a harness message after it, a
    # notification or a pasted summary, is context: summarized, never restated).
    newest = next((m for m in reversed(messages) if is_real_user(m) and user_text(m)), None)
    if newest is not None:
        assert any(live_text(newest) in content_text(m.get("content")) for m in out)
    if not result.report.compressed:
        assert out is messages
        return
    report = result.report
    assert report.after_tokens < report.before_tokens
    # A forced compaction fits the window whenever the incompressible floor leaves room:
    # system prompt, tool schemas, the newest user request and a minimum handoff.
    floor = estimate_messages_tokens([m for m in messages if m["role"] == "system"])
    floor += tool_schema_tokens(conversation.tools) + comp.config.summary_min_tokens
    floor += estimate_tokens(live_text(newest)) if newest is not None else 0
    if floor < window * 0.6:
        assert report.after_tokens < window
    if report.tier is Tier.PRUNE:
        # Tier 1 stops only when pruning alone brought the request well inside the window.
        assert report.after_tokens <= window * comp.config.prune_only_ratio
        return
    # What the design must keep: head (with the note), the verbatim tail, the handoff and a
    # restated request. The rest must go; >= 80% reduction wherever that floor allows it.
    kept = estimate_messages_tokens(with_system_note(messages[: plan.head_end]))
    kept += estimate_messages_tokens(messages[plan.tail_start :])
    kept += plan.summary_budget_tokens + estimate_tokens(render_handoff("")) + 50
    if plan.restated_user is not None:
        kept += estimate_messages_tokens([messages[plan.restated_user]]) + 60
    assert report.after_tokens <= max(kept, int(report.before_tokens * 0.20))
    if kept <= report.before_tokens * 0.20:
        assert report.savings_ratio >= 0.80
