"""The gateway's collector policy: state frozen after each request, cycles swept."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from windowkeeper.gateway.collector import Collector, NoCollector


@pytest.fixture(autouse=True)
def unfrozen() -> Iterator[None]:
    yield
    gc.unfreeze()  # the rest of the test session collects as usual


class _Node:
    def __init__(self) -> None:
        self.me = self  # a reference cycle: only the cyclic collector frees it


def test_end_freezes_what_is_held() -> None:
    gc.unfreeze()
    held = [{"role": "user", "content": [{"type": "text", "text": "x"}]}]
    collector = Collector(sweep_every=10)
    collector.begin()
    collector.end()
    assert gc.get_freeze_count() > 0
    assert gc.is_tracked(held[0])  # frozen objects are still tracked, just not walked


def test_sweep_frees_a_frozen_cycle_when_no_request_is_in_flight() -> None:
    collector = Collector(sweep_every=3)
    node = _Node()
    ref = weakref.ref(node)
    collector.begin()
    collector.end()  # node is frozen now
    del node
    gc.collect()
    assert ref() is not None  # frozen: a collection does not see the cycle
    collector.begin()  # a second request stays in flight: the sweep waits
    collector.begin()
    collector.end()
    collector.end()
    assert ref() is None and collector.sweeps == 1


def test_sweep_is_forced_when_requests_never_drain() -> None:
    collector = Collector(sweep_every=2)
    collector.begin()  # one request always in flight
    for _ in range(8):
        collector.begin()
        collector.end()
    assert collector.sweeps == 1 and collector.since_sweep == 0


def test_no_collector_leaves_the_collector_alone() -> None:
    gc.unfreeze()
    quiet = NoCollector()
    quiet.begin()
    quiet.end()
    assert gc.get_freeze_count() == 0
