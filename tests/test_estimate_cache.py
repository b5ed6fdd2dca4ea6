"""The preflight's estimate cache: always the sum of fresh estimates, whatever changed."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from factories import long_session
from windowkeeper import ContextCompressor
from windowkeeper.analysis.record import Analyzer
from windowkeeper.core.messages import Message
from windowkeeper.core.tokens import message_tokens
from windowkeeper.loop.estimates import EstimateCache
from windowkeeper.loop.manager import ContextManager

_MESSAGE = st.builds(
    lambda role, text: {"role": role, "content": text},
    st.sampled_from(["user", "assistant", "tool"]),
    st.text(max_size=40),
)


def _fresh(messages: list[Message]) -> int:
    return sum(message_tokens(m, image_tokens=100) for m in messages)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(_MESSAGE, max_size=8), min_size=1, max_size=6), st.data())
def test_the_total_is_always_the_sum_of_fresh_estimates(
    histories: list[list[Message]], data: st.DataObject
) -> None:
    cache = EstimateCache(image_tokens=100)
    previous: list[Message] = []
    for history in histories:
        keep = data.draw(st.integers(min_value=0, max_value=len(previous)))
        messages = previous[:keep] + history  # kept objects, then new or equal copies
        assert cache.total(messages) == _fresh(messages)
        previous = messages


def test_only_new_or_replaced_messages_are_estimated() -> None:
    counted: list[str] = []

    def count(text: str) -> int:
        counted.append(text)
        return len(text) // 4

    cache = EstimateCache(image_tokens=100, count=count)
    messages: list[Message] = [{"role": "user", "content": f"{n} " + "x" * 400} for n in range(5)]
    first = cache.total(messages)
    assert counted
    counted.clear()
    assert cache.total(list(messages)) == first and counted == []  # unchanged: no work
    messages.append({"role": "assistant", "content": "new"})
    cache.total(messages)
    assert len(counted) == 1 and "new" in counted[0]  # only the new message
    counted.clear()
    messages[2] = {"role": "user", "content": "replaced"}
    cache.total(messages)
    assert counted == ["replaced"]  # the others are the same objects at their places


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(_MESSAGE, max_size=8), min_size=1, max_size=6), st.data())
def test_a_message_that_moved_is_not_counted_again(
    histories: list[list[Message]], data: st.DataObject
) -> None:
    """Any mix of the last list's objects (moved, dropped, repeated) and new messages: the
    sum of fresh estimates, and only the messages the last list did not hold are counted
    (a compaction keeps its tail behind a summary: the same objects at other indices)."""
    counted: list[str] = []

    def count(text: str) -> int:
        counted.append(text)
        return len(text) // 4

    cache = EstimateCache(image_tokens=100, count=count)
    previous: list[Message] = []
    for number, history in enumerate(histories):
        new = [{**m, "content": f"<{number}.{i}> {m['content']}"} for i, m in enumerate(history)]
        kept = data.draw(st.lists(st.sampled_from(previous), max_size=8)) if previous else []
        messages = data.draw(st.permutations([*kept, *new]))
        counted.clear()
        expected = sum(message_tokens(m, image_tokens=100, count=lambda t: len(t) // 4)
                       for m in messages)  # fmt: skip
        assert cache.total(messages) == expected
        assert sorted(counted) == sorted(m["content"] for m in new)
        previous = messages


def _recording_counter() -> tuple[list[str], Callable[[str], int]]:
    """A token counter that records every text it counts."""
    counted: list[str] = []

    def count(text: str) -> int:
        counted.append(text)
        return len(text) // 4 + 1

    return counted, count


def test_the_compaction_analysis_reuses_the_preflight_estimates() -> None:
    """The records the compaction analyses are made with the estimates the preflight made
    (the same prices: each message counted once), and they equal records counted anew;
    at other prices nothing is reused."""

    counted, count = _recording_counter()
    history = long_session(rounds=25, output_chars=4_000)
    manager = ContextManager(ContextCompressor(context_length=16_000, token_counter=count))
    estimate = manager.estimate(history)
    texts = len(counted)
    counted.clear()
    compacted = manager.preflight(history)
    seeded_counts = len(counted)
    assert compacted is not history and manager.compactions == 1
    fresh = ContextManager(ContextCompressor(context_length=16_000, token_counter=count))
    fresh._share_estimates = lambda: None  # type: ignore[method-assign]
    assert fresh.estimate(history) == estimate
    counted.clear()
    assert fresh.preflight(history) == compacted  # the same compaction without the reuse
    assert len(counted) - seeded_counts == texts  # there every message is counted again
    analyzer = Analyzer(count=count)
    seeded = manager._compressor.analyzer  # type: ignore[union-attr]
    assert all(seeded.facts(m).tokens == analyzer.facts(m).tokens for m in compacted)
    other = Analyzer(image_tokens=7, count=count)
    other.seed([(history[1], 10**6)], image_tokens=100, count=count)
    assert other.facts(history[1]).tokens != 10**6


def test_seeded_records_are_made_with_the_given_estimates() -> None:

    message: Message = {"role": "user", "content": "hello there"}
    analyzer = Analyzer(image_tokens=100)
    analyzer.seed([(message, 41)], image_tokens=100, count=None)
    assert analyzer.facts(message).tokens == 41  # taken, not counted (it would be 5)
    again: Message = dict(message)
    assert analyzer.facts(again).tokens == message_tokens(again, image_tokens=100)


def test_the_estimate_of_a_compaction_counts_no_message_its_analysis_counted() -> None:
    """The messages a compaction made (its stubs) were counted and checked by its analysis:
    the estimate of its output takes those counts (equal to fresh ones), counting nothing
    again; at other prices, or without the analysis' records, each is counted anew."""
    counted, count = _recording_counter()
    history = long_session(rounds=25, output_chars=4_000)
    manager = ContextManager(ContextCompressor(context_length=16_000, token_counter=count))
    manager.estimate(history)
    compressor = manager._compressor
    assert compressor is not None
    compacted = compressor.compress(history).messages
    new = [m for m in compacted if not any(m is old for old in history)]
    assert new  # the compaction made messages the estimate has not seen
    counted.clear()
    fresh = sum(message_tokens(m, image_tokens=100, count=lambda t: len(t) // 4 + 1)
                for m in compacted)  # fmt: skip
    assert manager.estimate(compacted) - manager.schema_tokens() == fresh
    assert counted == []
    analyzer = compressor.analyzer
    assert analyzer.counted(new[0], 7, count) is None  # other prices: not taken
    assert analyzer.counted(dict(new[0]), 100, count) is None  # another object: not taken
    again = ContextManager(ContextCompressor(context_length=16_000, token_counter=count))
    again._cache.known = None  # no analysis records: every new message is counted
    again.estimate(history)
    counted.clear()
    assert again.estimate(compacted) - again.schema_tokens() == fresh
    assert len(counted) >= len(new)


def test_an_empty_analysis_is_asked_nothing_per_message(monkeypatch: pytest.MonkeyPatch) -> None:
    """A session's first estimate (no compaction yet, the analysis holds no record) asks
    the analysis nothing message by message; once a compaction made records, the estimate
    of its output asks it for each message it has not seen."""
    asked: list[Message] = []
    counted = Analyzer.counted

    def recording(self: Analyzer, message: Message, *args: object, **kwargs: object) -> object:
        asked.append(message)
        return counted(self, message, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Analyzer, "counted", recording)
    history = long_session(rounds=25, output_chars=4_000)
    manager = ContextManager(ContextCompressor(context_length=16_000))
    assert manager.estimate(history) - manager.schema_tokens() == _fresh_at(history, manager)
    assert asked == []
    compressor = manager._compressor
    assert compressor is not None
    compacted = compressor.compress(history).messages
    new = [m for m in compacted if not any(m is old for old in history)]
    assert new
    assert manager.estimate(compacted) - manager.schema_tokens() == _fresh_at(compacted, manager)
    assert all(any(m is a for a in asked) for m in new)


def _fresh_at(messages: list[Message], manager: ContextManager) -> int:
    image = manager._cache.image_tokens
    return sum(message_tokens(m, image_tokens=image) for m in messages)
