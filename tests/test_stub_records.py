"""A prune tier's stubs keep the tokens the tier worked out for them (issue 27): the
result's new messages have records made with those tokens, so the estimate after the
compaction counts none of them again, and every figure equals a fresh count."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from factories import long_session
from windowkeeper import ContextCompressor, Tier
from windowkeeper.core.tokens import message_tokens
from windowkeeper.loop import estimates
from windowkeeper.loop.manager import ContextManager
from windowkeeper.testing.histories import random_history


def _new_messages(before: list, after: list) -> list:
    kept = set(map(id, before))
    return [m for m in after if id(m) not in kept]


def test_the_stubs_of_a_prune_tier_have_records_with_their_tokens() -> None:
    messages = long_session(rounds=30, output_chars=3_000)
    comp = ContextCompressor(context_length=64_000)
    result = comp.compress(messages, force=True)
    assert result.report.tier is Tier.PRUNE
    stubs = _new_messages(messages, result.messages)
    assert len(stubs) >= 10
    analyzer = comp.analyzer
    for stub in stubs:
        counted = analyzer.counted(stub, analyzer.image_tokens, analyzer.count)
        assert counted == message_tokens(stub)


def test_the_estimate_after_a_prune_tier_counts_no_stub_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    history = long_session(rounds=30, output_chars=3_000)
    manager = ContextManager(ContextCompressor(context_length=28_000))
    before = manager.estimate(history)
    compacted = manager.preflight(history)
    assert compacted is not history and manager.compactions == 1
    assert manager.last_receipt is not None and manager.last_receipt.tier is Tier.PRUNE
    assert len(_new_messages(history, compacted)) >= 10
    counted: list[object] = []

    def counting(message: object, **kwargs: object) -> int:
        counted.append(message)
        return message_tokens(message, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(estimates, "message_tokens", counting)
    after = manager.estimate(compacted)
    assert counted == []  # every new message's tokens came from its record
    monkeypatch.undo()
    fresh = ContextManager(ContextCompressor(context_length=28_000))
    assert after == fresh.estimate(compacted) < before


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([2_000, 6_000, 20_000]), st.booleans())
def test_every_record_of_a_result_holds_its_messages_own_count(
    seed: int, window: int, force: bool
) -> None:
    messages = random_history(random.Random(seed))
    comp = ContextCompressor(context_length=window)
    result = comp.compress(messages, force=force)
    analyzer = comp.analyzer
    for message in result.messages:
        counted = analyzer.counted(message, analyzer.image_tokens, analyzer.count)
        assert counted is None or counted == message_tokens(message)
