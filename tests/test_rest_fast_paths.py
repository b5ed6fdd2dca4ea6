"""The rest stage's fast paths (issue 27, session 24): each gives the answer of the walk it
skips, checked against that walk (kept here as the oracle) on generated input."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper import ContextCompressor
from windowkeeper.analysis.record import Analyzer, MessageFacts
from windowkeeper.compaction.boundaries import newest_real_user, newest_request
from windowkeeper.compaction.handoff import render_handoff
from windowkeeper.compaction.plan import make_plan
from windowkeeper.compaction.usertexts import UserBudget, over_budget, within_budgets
from windowkeeper.core.cache import CachePrices, cache_break, receipt
from windowkeeper.core.config import DEFAULT_CONFIG
from windowkeeper.core.frozen import evolve
from windowkeeper.core.messages import Message
from windowkeeper.core.report import CompressionReport, Outcome, Receipt, Tier
from windowkeeper.engine.guard import NEW_GUARD, GuardState, on_force
from windowkeeper.engine.pipeline import (
    _long_users,
    floor_breakdown,
    make_job,
)


def _old_long_users(
    messages: list[Message],
    facts: Sequence[MessageFacts],
    users: UserBudget,
    extra: int,
    room: int,
    force: bool,
) -> tuple[int, ...]:
    """``_long_users`` before its fast path (b4fd527)."""
    newest = newest_real_user(messages, 0, facts)
    request = newest_request(messages, 0, newest, facts) if newest is not None else None
    spared = {newest, request} - {None}
    if force and newest is not None:
        system, _, size, handoff = floor_breakdown(messages, facts, extra)
        if system + size + handoff > room:
            spared = set()
    indices = [i for i, f in enumerate(facts) if f.role == "user" and i not in spared]
    return tuple(over_budget(facts, users, indices, None))


def _old_retain(records: dict[int, MessageFacts], messages: Sequence[Message]) -> dict[int, Any]:
    kept = records.keys() & set(map(id, messages))
    return dict(zip(kept, map(records.__getitem__, kept), strict=True))


# Texts from a few characters to a few thousand tokens, some with a harness block (a user
# message that is not what the user wrote) or an interrupt marker.
_TEXT = st.one_of(
    st.text(alphabet="ab yz\n", max_size=40),
    st.builds(lambda n, c: c * n, st.integers(0, 9_000), st.sampled_from(["x", "é ", "字"])),
    st.sampled_from(
        ["<system-reminder>note</system-reminder>", "[Request interrupted by user]", ""]
    ),
)
_ROLES = st.sampled_from(["system", "user", "user", "assistant", "tool"])


def _message(role: str, text: str) -> Message:
    if role == "tool":
        return {"role": "tool", "tool_call_id": "c1", "content": text}
    return {"role": role, "content": text}


_MESSAGES = st.lists(st.builds(_message, _ROLES, _TEXT), min_size=0, max_size=10)
_BUDGETS = st.builds(UserBudget, st.integers(0, 3_000), st.integers(0, 6_000))


@settings(max_examples=400, deadline=None)
@given(_MESSAGES, _BUDGETS, st.integers(0, 200), st.integers(0, 8_000), st.booleans())
def test_long_users_as_before(
    messages: list[Message], users: UserBudget, extra: int, room: int, force: bool
) -> None:
    facts = Analyzer().analyze(messages)
    assert _long_users(messages, facts, users, extra, room, force) == _old_long_users(
        messages, facts, users, extra, room, force
    )


@settings(max_examples=400, deadline=None)
@given(_MESSAGES, _BUDGETS)
def test_within_budgets_means_none_is_chosen(messages: list[Message], users: UserBudget) -> None:
    facts = Analyzer().analyze(messages)
    every = [i for i, f in enumerate(facts) if f.role == "user"]
    if within_budgets(facts, users):
        assert over_budget(facts, users, every, None) == []
    # The converse where the test is exact: a user message over the per-message budget,
    # or the total over its own, with no text to shorten (blank) left aside.
    sizes = [f.tokens for f in facts if f.role == "user"]
    if sizes and (max(sizes) > users.message_tokens or sum(sizes) > users.total_tokens):
        assert not within_budgets(facts, users)


def test_a_real_looking_session_skips_nothing_it_must_shorten() -> None:
    pasted = "line of a pasted log\n" * 3_000  # ~15,000 tokens: over 6,400
    messages: list[Message] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": f"fix the build, here is the log:\n{pasted}"},
        {"role": "assistant", "content": "Looking."},
        {"role": "user", "content": "and keep the tests green"},
    ]
    facts = Analyzer().analyze(messages)
    users = UserBudget(6_400, 12_800)
    assert not within_budgets(facts, users)
    assert _long_users(messages, facts, users, 0, 20_000, False) == (1,)
    assert within_budgets(facts[:1] + facts[2:], users)


@settings(max_examples=300, deadline=None)
@given(_MESSAGES, st.data())
def test_retain_keeps_the_records_of_the_messages(
    messages: list[Message], data: st.DataObject
) -> None:
    analyzer = Analyzer()
    analyzer.analyze(messages)
    others: list[Message] = [{"role": "user", "content": "elsewhere"} for _ in range(3)]
    analyzer.analyze(others)
    # The kept list: some of the messages (repeated, in another order) and messages
    # without a record.
    kept = data.draw(st.lists(st.sampled_from(messages + others + [{"role": "user"}])))
    before = dict(analyzer._records)
    analyzer.retain(kept)
    assert analyzer._records == _old_retain(before, kept)


@given(
    st.sampled_from([0.0, -0.0, 0, 5.0]),
    st.sampled_from([0.0, -0.0, 0, 7.5]),
    st.integers(0, 3),
)
def test_on_force_clears_as_before(cooldown: float, structural: float, count: int) -> None:
    state = GuardState(cooldown_until=cooldown, structural_until=structural,
                       compression_count=count)  # fmt: skip
    cleared = evolve(state, cooldown_until=0.0, structural_until=0.0)
    assert on_force(state) == cleared
    assert on_force(state).to_json() == cleared.to_json()  # 0.0, never 0 or -0.0
    assert on_force(NEW_GUARD) is NEW_GUARD


def test_a_prune_result_as_before() -> None:
    """The prune tier's result: no summary, the transcript's handoff kept as the previous
    one, the receipt's wait the report's time, the warnings kept."""
    tool_output = "output line\n" * 400
    messages: list[Message] = [
        {"role": "system", "content": "You are an agent."},
        {"role": "user", "content": render_handoff("## Goal\nfix the build")},
    ]
    for turn in range(6):
        call = {"id": f"c{turn}", "type": "function",
                "function": {"name": "bash", "arguments": '{"command": "make"}'}}  # fmt: skip
        messages += [
            {"role": "user", "content": f"step {turn}"},
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{turn}", "content": tool_output},
        ]
    compressor = ContextCompressor(context_length=32_000)
    result = compressor.compress(messages, force=True)
    report = result.report
    assert report.tier is Tier.PRUNE and result.summary is None
    assert compressor.previous_summary == "## Goal\nfix the build"
    assert report.receipt is not None
    assert report.receipt.waited_ms == report.elapsed_ms > 0
    assert report.receipt.tokens_before == report.before_tokens
    assert report.receipt.tokens_after == report.after_tokens
    assert compressor.guard.compression_count == 1


def _old_break_even(
    previous: int, prefix: int, current: int, appended: int, prices: CachePrices
) -> int | None:
    """``cache_break``'s break-even before it had a function of its own (b4fd527)."""
    first_extra = prices.request(prefix, current - prefix) - prices.request(previous, appended)
    saving = prices.read * (previous + appended - current)
    ratio = first_extra / saving if saving > 0 else math.inf
    if first_extra <= 0:
        return 1
    if not math.isfinite(ratio):
        return None
    return 1 + math.ceil(ratio - 1e-9)


_PRICES = st.builds(
    CachePrices,
    st.sampled_from([0.0, 1e-12, 0.1, 0.5, 1.0]),
    st.sampled_from([0.0, 1.0, 1.25, 2.0]),
)


@settings(max_examples=500, deadline=None)
@given(st.integers(0, 50_000), st.integers(0, 50_000), st.integers(0, 50_000), _PRICES,
       st.sampled_from(list(Tier)), st.floats(0, 1e4))  # fmt: skip
def test_receipt_as_before(
    before: int, kept: int, after: int, prices: CachePrices, tier: Tier, waited: float
) -> None:
    made = receipt(tier, before, after, kept, waited, ("row", prices))
    figures = cache_break(0, 1, before, kept, after, 0, prices)
    old = Receipt(tier, before, after, kept, figures.invalidated_tokens,
                  _old_break_even(before, kept, after, 0, prices), waited, "row")  # fmt: skip
    assert made == old and repr(made) == repr(old)
    assert figures.break_even_requests == old.break_even_requests


@settings(max_examples=100, deadline=None)
@given(_MESSAGES, st.booleans())
def test_the_base_report_as_before(messages: list[Message], force: bool) -> None:
    facts = Analyzer().analyze(messages)
    costs = [f.tokens for f in facts]
    plan = make_plan(messages, costs, DEFAULT_CONFIG, 32_000, 1_000, facts)
    job = make_job(messages, facts, plan, 7, 20_000, DEFAULT_CONFIG, 32_000, force=force,
                   focus=None)  # fmt: skip
    before = sum(costs) + 7
    old = CompressionReport(
        Outcome.NOOP, before_tokens=before, after_tokens=before,
        before_messages=len(messages), after_messages=len(messages),
    )  # fmt: skip
    assert job.base == old and repr(job.base) == repr(old)
    assert job.base.to_dict() == old.to_dict()
