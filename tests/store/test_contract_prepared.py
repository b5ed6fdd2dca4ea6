"""Prepared compactions kept with their session, on every backend (the ``store`` fixture:
memory, SQLite, PostgreSQL); part of the store contract (issue 26)."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from storeclock import FakeClock
from test_contract import compaction, msg

from windowkeeper.store import (
    PreparedCompactions,
    PreparedState,
    SessionStore,
    UnknownSessionError,
)


def prepared_store(store: SessionStore) -> PreparedCompactions:
    assert isinstance(store, PreparedCompactions)
    return store


def session(store: SessionStore) -> str:
    return store.create_session([msg("user", f"m{i}") for i in range(4)]).id


def test_only_the_lease_holder_stores_one(store: SessionStore) -> None:
    prep = prepared_store(store)
    sid = session(store)
    assert not prep.put_prepared(sid, generation=0, holder="a", body="{}")  # no lease
    assert store.acquire_lock(sid, "a")
    assert not prep.put_prepared(sid, generation=0, holder="b", body="{}")  # not b's
    assert prep.put_prepared(sid, generation=0, holder="a", body='{"x": 1}')
    found = prep.prepared(sid)
    assert found is not None
    assert (found.generation, found.holder, found.body) == (0, "a", '{"x": 1}')
    assert (found.state, found.reason, found.settled_at) == (PreparedState.READY, None, None)


def test_an_expired_lease_stores_nothing(store: SessionStore, clock: FakeClock) -> None:
    prep = prepared_store(store)
    sid = session(store)
    assert store.acquire_lock(sid, "a", ttl=10)
    clock.advance(11)
    assert not prep.put_prepared(sid, generation=0, holder="a", body="{}")
    assert prep.prepared(sid) is None


def test_it_is_stored_against_the_generation(store: SessionStore) -> None:
    prep = prepared_store(store)
    sid = session(store)
    assert store.acquire_lock(sid, "a")
    pending = compaction(store, sid, [msg("user", "m0"), msg("assistant", "S")])
    assert store.commit_compaction(sid, pending).committed  # generation 0 -> 1
    assert not prep.put_prepared(sid, generation=0, holder="a", body="{}")
    assert prep.put_prepared(sid, generation=1, holder="a", body="{}")
    assert prep.prepared(sid).generation == 1  # type: ignore[union-attr]


def test_settling_is_done_once(store: SessionStore) -> None:
    prep = prepared_store(store)
    sid = session(store)
    assert store.acquire_lock(sid, "a")
    assert prep.put_prepared(sid, generation=0, holder="a", body="{}")
    assert not prep.settle_prepared(sid, 1, applied=True)  # another generation
    results: list[bool] = []
    threads = [
        threading.Thread(target=lambda: results.append(prep.settle_prepared(sid, 0, applied=True)))
        for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results) == [False, False, False, True]
    found = prep.prepared(sid)
    assert found is not None and found.state is PreparedState.APPLIED
    assert found.settled_at is not None
    assert not prep.settle_prepared(sid, 0, applied=False, reason="edited")


def test_a_newer_one_replaces_the_older_and_a_discard_keeps_its_reason(
    store: SessionStore, reopen: Callable[[], SessionStore]
) -> None:
    prep = prepared_store(store)
    sid = session(store)
    assert store.acquire_lock(sid, "a")
    assert prep.put_prepared(sid, generation=0, holder="a", body="first")
    assert prep.settle_prepared(sid, 0, applied=False, reason="edited")
    assert prep.prepared(sid).reason == "edited"  # type: ignore[union-attr]
    assert prep.put_prepared(sid, generation=0, holder="a", body="second")
    again = prepared_store(reopen())  # durable
    found = again.prepared(sid)
    assert found is not None and found.body == "second"
    assert (found.state, found.reason) == (PreparedState.READY, None)


def test_an_unknown_session_is_an_error(store: SessionStore) -> None:
    prep = prepared_store(store)
    with pytest.raises(UnknownSessionError):
        prep.prepared("nope")
    with pytest.raises(UnknownSessionError):
        prep.put_prepared("nope", generation=0, holder="a", body="{}")
    with pytest.raises(UnknownSessionError):
        prep.settle_prepared("nope", 0, applied=True)
