"""Keyed sessions and positional appends, on every backend (the ``store`` fixture)."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from windowkeeper.core.errors import StoreError
from windowkeeper.core.messages import Message
from windowkeeper.store import Compaction, KeyedSessions, SessionStore, open_store


def msg(n: int) -> Message:
    return {"role": "user" if n % 2 == 0 else "assistant", "content": f"message {n}"}


def digest(n: int) -> str:
    return f"d{n}"


def keyed(store: SessionStore) -> KeyedSessions:
    assert isinstance(store, KeyedSessions)
    return store


def append(store: SessionStore, sid: str, start: int, end: int) -> object:
    rng = range(start, end)
    return keyed(store).append_at(sid, start, [msg(n) for n in rng], [digest(n) for n in rng])


def test_open_keyed_creates_once_and_finds_by_key(store: SessionStore) -> None:
    ks = keyed(store)
    assert ks.find_keyed("scope/a") is None
    first = ks.open_keyed("scope/a", title="gw")
    again = ks.open_keyed("scope/a", title="other")
    assert first.id == again.id and first.key == "scope/a" and first.positions == 0
    assert first.record.title == "gw" and first.window is None
    found = ks.find_keyed("scope/a")
    assert found is not None and found.id == first.id
    ks.open_keyed("scope/ab")
    ks.open_keyed("other/a")
    assert sorted(k.key for k in ks.list_keyed("scope/")) == ["scope/a", "scope/ab"]
    assert [k.key for k in ks.list_keyed("SCOPE/")] == []  # exact, case-sensitive


def test_append_at_is_idempotent_by_position_and_digest(store: SessionStore) -> None:
    ks = keyed(store)
    sid = ks.open_keyed("k").id
    first = ks.append_at(sid, 0, [msg(0), msg(1)], [digest(0), digest(1)])
    assert first.ok and first.positions == 2 and first.last_seq is not None
    # A writer resending an overlapping history stores only what is new.
    overlap = ks.append_at(sid, 1, [msg(1), msg(2), msg(3)], [digest(1), digest(2), digest(3)])
    assert overlap.ok and overlap.positions == 4
    repeat = ks.append_at(sid, 0, [msg(0)], [digest(0)])
    assert repeat.ok and repeat.positions == 4 and repeat.last_seq == first.last_seq - 1
    rows = store.load(sid).rows
    assert [r.message for r in rows] == [msg(n) for n in range(4)]
    assert ks.client_digests(sid) == [digest(n) for n in range(4)]
    assert ks.client_digests(sid, 1, 3) == [digest(1), digest(2)]


def test_a_different_digest_is_a_conflict_and_a_gap_is_refused(store: SessionStore) -> None:
    ks = keyed(store)
    sid = ks.open_keyed("k").id
    append(store, sid, 0, 3)
    conflict = ks.append_at(sid, 1, [msg(1), {"role": "user", "content": "edited"}],
                            [digest(1), "other"])  # fmt: skip
    assert not conflict.ok and conflict.conflict == 2 and conflict.positions == 3
    assert len(store.load(sid).rows) == 3  # nothing written
    with pytest.raises(StoreError, match="gap"):
        append(store, sid, 5, 6)
    with pytest.raises(StoreError):
        ks.append_at(sid, 3, [msg(3)], [])


def test_positions_survive_a_compaction_and_the_watermark_is_by_position(
    store: SessionStore,
) -> None:
    ks = keyed(store)
    sid = ks.open_keyed("k").id
    append(store, sid, 0, 4)
    covered = ks.append_at(sid, 0, [msg(0), msg(1)], [digest(0), digest(1)])
    record = store.get_session(sid)
    assert covered.last_seq is not None
    summary: Message = {"role": "user", "content": "[summary of 0-1]"}
    outcome = store.commit_compaction(sid, Compaction(
        generation=record.generation, watermark=covered.last_seq, messages=(summary,),
        archive=(), guard_state=None, previous_summary=None,
    ))  # fmt: skip
    assert outcome.committed
    # Positions 2 and 3 were appended after the covered ones: they stay active, behind C.
    assert store.load(sid).messages == [summary, msg(2), msg(3)]
    later = append(store, sid, 2, 6)
    assert getattr(later, "positions", None) == 6
    rows = store.load(sid, include_archived=True).rows
    appended = [r.message for r in rows if r.origin == "append"]
    assert appended == [msg(n) for n in range(6)]  # every client message exactly once
    assert ks.append_at(sid, 5, [msg(5)], [digest(5)]).last_seq == max(r.seq for r in rows)


def test_the_learned_window_is_kept(
    store: SessionStore, reopen: Callable[[], SessionStore]
) -> None:
    sid = keyed(store).open_keyed("k").id
    keyed(store).set_window(sid, 12_345)
    found = keyed(reopen()).find_keyed("k")
    assert found is not None and found.window == 12_345
    keyed(store).set_window(sid, None)
    assert keyed(store).open_keyed("k").window is None


def test_concurrent_writers_store_each_position_once(durable_url: str) -> None:
    # Two "gateways" (two store handles) resend overlapping histories in parallel.
    with open_store(durable_url) as a, open_store(durable_url) as b:
        sid = keyed(a).open_keyed("shared").id
        assert keyed(b).open_keyed("shared").id == sid
        errors: list[BaseException] = []

        def writer(store: SessionStore, offset: int) -> None:
            try:
                for end in range(2 + offset, 40, 2):
                    append(store, sid, 0, end)
            except BaseException as exc:  # reported below
                errors.append(exc)

        threads = [threading.Thread(target=writer, args=(s, o)) for s, o in ((a, 0), (b, 1))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        rows = a.load(sid, include_archived=True).rows
        assert [r.message for r in rows] == [msg(n) for n in range(39)]


def test_open_keyed_races_create_one_session(durable_url: str) -> None:
    with open_store(durable_url) as a, open_store(durable_url) as b:
        ids: list[str] = []
        barrier = threading.Barrier(2)

        def opener(store: SessionStore) -> None:
            barrier.wait()
            ids.append(keyed(store).open_keyed("raced").id)

        threads = [threading.Thread(target=opener, args=(s,)) for s in (a, b)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(ids) == 2 and ids[0] == ids[1]
        assert len(keyed(a).list_keyed("raced")) == 1
