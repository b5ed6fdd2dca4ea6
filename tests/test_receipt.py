"""The receipt of every compaction (issue 26, SPEC §4): tokens, the prompt cache it
invalidated, the requests to break even at the configured prices, tier, the agent's wait."""

from __future__ import annotations

import copy
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from factories import long_session, tool, user
from windowkeeper import CompressionConfig, ContextCompressor, Tier
from windowkeeper.core.cache import CachePrices, cache_break, kept_prefix, prices_for, receipt
from windowkeeper.core.settings import load_settings
from windowkeeper.core.tokens import tool_schema_tokens
from windowkeeper.loop.events import Event, EventKind
from windowkeeper.loop.manager import ContextManager

TOOLS = [{"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}]


def unchanged_prefix(comp: ContextCompressor, before: list, after: list) -> int:
    """Tool schemas plus the leading messages the compaction left equal (independently)."""
    total = tool_schema_tokens(comp.tools)
    for index, message in enumerate(before):
        if index >= len(after) or after[index] != message:
            break
        total += comp.analyzer.facts(message).tokens
    return total


def test_every_completed_compaction_carries_its_receipt() -> None:
    for rounds, window, tier in ((30, 64_000, Tier.PRUNE), (200, 16_000, Tier.SUMMARY)):
        messages = long_session(rounds=rounds, output_chars=200 if tier is Tier.SUMMARY else 3000)
        comp = ContextCompressor(context_length=window, tools=TOOLS)
        result = comp.compress(messages, force=True)
        report, got = result.report, result.report.receipt
        assert report.compressed and report.tier is tier and got is not None
        assert got.tier is tier
        assert (got.tokens_before, got.tokens_after) == (report.before_tokens, report.after_tokens)
        kept = unchanged_prefix(comp, messages, result.messages)
        assert got.kept_prefix_tokens == kept > 0  # the system prompt and schemas stay cached
        assert got.invalidated_tokens == report.before_tokens - kept > 0
        expected = cache_break(0, 1, report.before_tokens, kept, report.after_tokens, 0,
                               CachePrices())  # fmt: skip
        assert got.break_even_requests == expected.break_even_requests
        assert got.waited_ms == report.elapsed_ms > 0 and not got.background
        assert report.to_dict()["receipt"]["tier"] == tier.value


def test_no_receipt_when_nothing_changed() -> None:
    messages = [user("hello")]
    report = ContextCompressor(context_length=64_000).compress(messages, force=True).report
    assert not report.compressed and report.receipt is None
    assert report.to_dict()["receipt"] is None


def test_the_price_row_of_the_provider_decides_the_break_even() -> None:
    messages = long_session(rounds=200, output_chars=200)
    table = {"default": CachePrices(read=0.1, write=1.25), "acme": CachePrices(0.5, 1.0)}
    config = CompressionConfig(cache_prices=table)
    default = ContextCompressor(config, context_length=16_000).compress(messages, force=True)
    acme = ContextCompressor(config, context_length=16_000, provider="ACME").compress(
        messages, force=True
    )
    a, b = default.report.receipt, acme.report.receipt
    assert a is not None and b is not None
    assert (a.prices, b.prices) == ("default", "acme")
    assert a.invalidated_tokens == b.invalidated_tokens
    for got, prices in ((a, table["default"]), (b, table["acme"])):
        figures = cache_break(0, 1, got.tokens_before, got.kept_prefix_tokens,
                              got.tokens_after, 0, prices)  # fmt: skip
        assert got.break_even_requests == figures.break_even_requests


def test_the_price_table_is_a_setting(tmp_path: Path) -> None:
    path = tmp_path / "windowkeeper.yaml"
    path.write_text(
        "compression:\n  cache_prices:\n    default: {read: 0.2, write: 1.0}\n"
        "    anthropic: {read: 0.1, write: 2.0}\n",
        encoding="utf-8",
    )
    config = load_settings(path, env={}).compression_config()
    assert dict(config.cache_prices) == {
        "default": CachePrices(0.2, 1.0),
        "anthropic": CachePrices(0.1, 2.0),
    }
    assert prices_for(config.cache_prices, "Anthropic") == ("anthropic", CachePrices(0.1, 2.0))
    assert prices_for(config.cache_prices, "other") == ("default", CachePrices(0.2, 1.0))
    assert load_settings(None, env={}, cwd=tmp_path / "none").compression_config() == (
        CompressionConfig()
    )


def test_the_manager_states_the_agents_wait_and_logs_the_receipt() -> None:
    ticks = iter(range(0, 10_000, 5))  # seconds: every clock read is 5 s later
    events: list[Event] = []
    comp = ContextCompressor(context_length=16_000)
    manager = ContextManager(comp, on_event=events.append, clock=lambda: float(next(ticks)))
    messages = long_session(rounds=200, output_chars=200)
    out = manager.preflight(messages)
    assert out is not messages
    got = manager.last_receipt
    assert got is not None and got.waited_ms == 5_000.0  # the manager's clock, not the engine's
    finished = [e for e in events if e.kind is EventKind.COMPACTION_FINISHED]
    assert [e.receipt for e in finished] == [got]
    assert f"{got.invalidated_tokens:,} cached tokens invalidated" in finished[0].message


@settings(max_examples=60, deadline=None)
@given(
    before=st.integers(1, 200_000),
    kept_share=st.floats(0, 1),
    after_share=st.floats(0, 1.5),
    read=st.floats(0, 1),
    write=st.floats(0, 3),
)
def test_receipt_figures_add_up(
    before: int, kept_share: float, after_share: float, read: float, write: float
) -> None:
    kept = int(before * kept_share)
    after = max(kept, int(before * after_share))
    got = receipt(Tier.SUMMARY, before, after, kept, 1.0, ("default", CachePrices(read, write)))
    assert got.kept_prefix_tokens + got.invalidated_tokens == before
    even = got.break_even_requests
    if after >= before:  # saves nothing: pays at once or never
        assert even is None or even == 1
    if even is not None and even > 1:
        assert after < before  # only a smaller request can pay back a dearer first one


def test_a_near_zero_read_price_never_repays_rather_than_overflowing() -> None:
    got = receipt(Tier.SUMMARY, 2, 1, 0, 1.0, ("default", CachePrices(5e-324, 1.0)))
    assert got.break_even_requests is None


def test_kept_prefix_stops_at_the_first_changed_message() -> None:
    before = [user("a"), user("b"), tool("x", "out")]
    after = [before[0], copy.deepcopy(before[1]), user("changed"), before[2]]
    assert kept_prefix(before, after, [3, 5, 7]) == 8
    assert kept_prefix(before, [], [3, 5, 7]) == 0
    assert kept_prefix([user("a"), tool("c", "x")], [user("a")], [1, 2]) == 1
