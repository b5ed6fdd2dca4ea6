"""The tail walk answers a history that fits whole without walking it, and the analyzer
keeps the records of the messages it is told to (issue 27, the rest stage)."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import given
from hypothesis import strategies as st

from windowkeeper.analysis.record import Analyzer
from windowkeeper.compaction.boundaries import _walk


def _old_walk(costs: Sequence[int], floor: int, ceiling: int, min_count: int) -> int:
    total = 0
    cut = len(costs)
    for index in range(len(costs) - 1, floor - 1, -1):
        if total + costs[index] > ceiling and len(costs) - index > min_count:
            break
        total += costs[index]
        cut = index
    return cut


@given(
    st.lists(st.integers(0, 500), max_size=30),
    st.integers(0, 35),
    st.integers(0, 6_000),
    st.integers(0, 5),
)
def test_the_walk_is_the_old_walk(costs: list[int], floor: int, ceiling: int, least: int) -> None:
    assert _walk(costs, floor, ceiling, least) == _old_walk(costs, floor, ceiling, least)


@given(st.lists(st.text(max_size=5), min_size=1, max_size=12), st.data())
def test_retain_keeps_exactly_the_records_of_the_messages_given(
    texts: list[str], data: st.DataObject
) -> None:
    messages = [{"role": "user", "content": text} for text in texts]
    analyzer = Analyzer()
    records = analyzer.analyze(messages)
    kept = data.draw(st.lists(st.sampled_from(messages), max_size=len(messages)))
    kept.append({"role": "user", "content": "never analysed"})
    analyzer.retain(kept)
    for message, record in zip(messages, records, strict=True):
        assert (analyzer._current(message) is record) == any(message is k for k in kept)
    assert analyzer.holds_records() == any(any(m is k for k in kept) for m in messages)
