"""Undo of a compaction and its log, on every backend (the ``store`` fixture: memory,
SQLite, PostgreSQL); part of the store contract (issue 26)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from _workers import make_compressor, round_messages
from hypothesis import given, settings
from hypothesis import strategies as st
from test_contract import compaction, msg

from windowkeeper.core.errors import StoreError
from windowkeeper.core.messages import Message
from windowkeeper.core.report import Reason
from windowkeeper.engine.guard import GuardState
from windowkeeper.store import MemoryStore, SessionStore, compact_session


def contents(store: SessionStore, sid: str) -> list[object]:
    return [m["content"] for m in store.load(sid).messages]


def test_undo_restores_the_history_and_the_state(
    store: SessionStore, reopen: Callable[[], SessionStore]
) -> None:
    sid = store.create_session([msg("user", f"m{i}") for i in range(5)]).id
    store.save_state(sid, guard_state='{"strikes": 0}', previous_summary="older")
    before = store.load(sid).messages
    pending = compaction(store, sid, [msg("user", "m0"), msg("assistant", "S")],
                         archive=(("wk0000000001", "message", "user: m1", msg("user", "m1")),),
                         guard_state='{"strikes": 1}', previous_summary="S")  # fmt: skip
    store.append_messages(sid, [msg("user", "late")])  # between the read and the commit
    assert store.commit_compaction(sid, pending).committed
    store.append_messages(sid, [msg("assistant", "after")])
    [logged] = store.compactions(sid)
    assert logged.generation == 1 and logged.undone_at is None
    assert len(logged.replaced) == 5 and len(logged.inserted) == 2
    assert logged.handles == ("wk0000000001",)
    assert (logged.guard_state, logged.previous_summary) == ('{"strikes": 0}', "older")
    outcome = store.undo(sid)
    assert outcome.undone and outcome.session_id == sid and outcome.generation == 1
    assert outcome.restored == 5
    assert store.load(sid).messages == [*before, msg("user", "late"), msg("assistant", "after")]
    again = reopen()  # durable
    record = again.get_session(sid)
    # The state from before, holding automatic compaction (else the next request would
    # compact the same history again).
    assert GuardState.from_json(record.guard_state or "") == GuardState(strikes=0, undone=True)
    assert record.previous_summary == "older"
    assert (record.compactions, record.generation, record.active_messages) == (0, 2, 7)
    assert again.compactions(sid)[0].undone_at is not None


def test_undo_goes_back_one_compaction_at_a_time(store: SessionStore) -> None:
    sid = store.create_session([msg("user", f"m{i}") for i in range(4)]).id
    assert store.commit_compaction(sid, compaction(store, sid, [msg("assistant", "A")])).committed
    store.append_messages(sid, [msg("user", "x")])
    assert store.commit_compaction(sid, compaction(store, sid, [msg("assistant", "B")])).committed
    assert contents(store, sid) == ["B"]
    assert store.undo(sid).generation == 2
    assert contents(store, sid) == ["A", "x"]
    assert store.undo(sid).generation == 1
    assert contents(store, sid) == ["m0", "m1", "m2", "m3", "x"]
    with pytest.raises(StoreError, match="no compaction to undo"):
        store.undo(sid)
    rows = store.load(sid, include_archived=True).rows
    assert len({r.seq for r in rows}) == len(rows) == 7  # nothing copied, nothing deleted


def test_a_compaction_read_before_an_undo_cannot_commit(store: SessionStore) -> None:
    sid = store.create_session([msg("user", f"m{i}") for i in range(3)]).id
    assert store.commit_compaction(sid, compaction(store, sid, [msg("assistant", "A")])).committed
    stale = compaction(store, sid, [msg("assistant", "over A")])
    store.undo(sid)
    assert not store.commit_compaction(sid, stale).committed
    assert contents(store, sid) == ["m0", "m1", "m2"]


def test_a_rotated_session_points_back_to_its_parent(store: SessionStore) -> None:
    sid = store.create_session([msg("user", f"m{i}") for i in range(3)]).id
    done = store.commit_compaction(sid, compaction(store, sid, [msg("assistant", "S")],
                                                   rotate=True))  # fmt: skip
    outcome = store.undo(done.session_id)
    assert not outcome.undone and outcome.session_id == sid
    assert contents(store, sid) == ["m0", "m1", "m2"]  # the parent holds the history
    assert store.compactions(done.session_id) == [] and store.compactions(sid) == []
    with pytest.raises(StoreError, match="ended"):
        store.undo(sid)


def test_undo_of_a_real_compaction_gives_back_every_message(store: SessionStore) -> None:
    history = round_messages("a") + round_messages("b") + round_messages("c")
    sid = store.create_session(history).id
    store.save_state(sid, guard_state=GuardState(strikes=1).to_json(), previous_summary=None)
    done = compact_session(store, sid, make_compressor(), force=True)
    assert done.result.report.compressed and store.load(sid).messages != history
    store.undo(sid)
    assert store.load(sid).messages == history
    assert GuardState.from_json(store.get_session(sid).guard_state or "").strikes == 1


@settings(max_examples=40, deadline=None)
@given(steps=st.lists(st.tuples(st.integers(0, 3), st.integers(1, 3)), min_size=1, max_size=8))
def test_undoing_every_compaction_gives_back_everything_appended(
    steps: list[tuple[int, int]],
) -> None:
    store = MemoryStore()
    sid = store.create_session([msg("user", "start")]).id
    appended: list[Message] = [msg("user", "start")]
    for number, (adds, written) in enumerate(steps):
        new = [msg("user", f"{number}.{i}") for i in range(adds)]
        store.append_messages(sid, new)
        appended += new
        out = [msg("assistant", f"S{number}.{i}") for i in range(written)]
        assert store.commit_compaction(sid, compaction(store, sid, out)).committed
    for _ in steps:
        assert store.undo(sid).undone
    assert store.load(sid).messages == appended
    assert store.get_session(sid).compactions == 0


def test_after_an_undo_only_a_forced_compaction_runs_and_it_ends_the_hold(
    store: SessionStore,
) -> None:
    """Undo holds automatic compaction (the same history would be compacted again at
    once); a compaction forced because the history no longer fits runs and ends it."""
    history = round_messages("a") + round_messages("b") + round_messages("c")
    sid = store.create_session(history).id
    assert compact_session(store, sid, make_compressor(), force=True).result.report.compressed
    store.undo(sid)
    held = compact_session(store, sid, make_compressor())
    assert not held.result.report.compressed
    assert held.result.report.reason is Reason.UNDONE
    assert store.load(sid).messages == history
    forced = compact_session(store, sid, make_compressor(), force=True)
    assert forced.result.report.compressed
    assert not GuardState.from_json(store.get_session(sid).guard_state or "").undone
