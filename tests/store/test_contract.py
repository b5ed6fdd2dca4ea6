"""One contract, every backend (memory, SQLite, PostgreSQL) through the ``store`` fixture."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from _workers import appended_digests, make_compressor, round_messages
from storeclock import FakeClock

from windowkeeper.core.errors import StoreError
from windowkeeper.core.messages import Message
from windowkeeper.core.report import Outcome, Reason
from windowkeeper.engine.guard import GuardState
from windowkeeper.store import (
    Compaction,
    SessionStore,
    UnknownSessionError,
    compact_session,
    lineage,
    restore_state,
)


def msg(role: str, text: str) -> Message:
    return {"role": role, "content": text}


def compaction(store: SessionStore, sid: str, messages: list[Message], **kw: object) -> Compaction:
    snap = store.load(sid)
    fields: dict[str, object] = {
        "generation": snap.session.generation, "watermark": snap.watermark,
        "messages": tuple(messages), "archive": (), "guard_state": None,
        "previous_summary": None,
    }  # fmt: skip
    fields.update(kw)
    return Compaction(**fields)  # type: ignore[arg-type]


def test_create_get_list(store: SessionStore, clock: FakeClock) -> None:
    first = store.create_session([msg("user", "a"), msg("assistant", "b")], title="one")
    clock.advance(5)
    second = store.create_session()
    assert first.active_messages == 2 and first.last_seq == 2 and first.title == "one"
    assert second.active_messages == 0 and second.last_seq == 0 and second.parent_id is None
    assert store.get_session(first.id) == first
    assert [r.id for r in store.list_sessions()] == [second.id, first.id]
    assert [r.id for r in store.list_sessions(limit=1)] == [second.id]


def test_unknown_session_everywhere(store: SessionStore) -> None:
    calls: list[Callable[[], object]] = [
        lambda: store.get_session("nope"),
        lambda: store.load("nope"),
        lambda: store.append_messages("nope", [msg("user", "x")]),
        lambda: store.save_state("nope", guard_state=None, previous_summary=None),
        lambda: store.archived("nope"),
        lambda: store.search_archive("x", session_id="nope"),
        lambda: store.create_session(parent_id="nope"),
    ]
    for call in calls:
        with pytest.raises(UnknownSessionError, match="nope"):
            call()


def test_append_and_load_in_order(store: SessionStore) -> None:
    sid = store.create_session([msg("user", "a")]).id
    assert store.append_messages(sid, [msg("assistant", "b"), msg("user", "c")]) == 3
    assert store.append_messages(sid, []) == 3
    snap = store.load(sid)
    assert [m["content"] for m in snap.messages] == ["a", "b", "c"]
    assert [r.seq for r in snap.rows] == [1, 2, 3] and snap.watermark == 3
    snap.messages[0]["content"] = "mutated"  # callers get copies
    assert store.load(sid).messages[0]["content"] == "a"


def test_exotic_content_round_trips(store: SessionStore) -> None:
    weird: Message = {
        "role": "tool", "tool_call_id": "c1",
        "content": "nul\x00 byte, emoji 🎉, quote \" and backslash \\",
        "_private": {"nested": [1, 2.5, None, True]},
    }  # fmt: skip
    half_emoji: Message = {"role": "user", "content": "cut emoji \ud83d here"}
    sid = store.create_session([weird, half_emoji]).id
    assert store.load(sid).messages == [weird, half_emoji]
    # A lone surrogate (half an emoji cut by a client) round-trips and stays searchable.
    compacted = store.load(sid)
    assert compacted.messages[1]["content"] == "cut emoji \ud83d here"


def test_in_place_compaction(store: SessionStore) -> None:
    sid = store.create_session([msg("user", f"m{i}") for i in range(5)]).id
    before = appended_digests(store, sid)
    archive = (("wk0000000001", "message", "user: m1", msg("user", "m1")),)
    done = store.commit_compaction(sid, compaction(
        store, sid, [msg("user", "m0"), msg("assistant", "summary")],
        archive=archive, guard_state='{"strikes": 1}', previous_summary="summary",
    ))  # fmt: skip
    assert done.committed and done.session_id == sid and done.generation == 1
    record = store.get_session(sid)
    assert (record.generation, record.compactions, record.active_messages) == (1, 1, 2)
    assert (record.guard_state, record.previous_summary) == ('{"strikes": 1}', "summary")
    assert [m["content"] for m in store.load(sid).messages] == ["m0", "summary"]
    rows = store.load(sid, include_archived=True).rows
    assert sum(not r.active for r in rows) == 5 and len(rows) == 7
    assert appended_digests(store, sid) == before  # nothing appended was lost or copied
    assert store.archived(sid, ["wk0000000001"])[0].text == "user: m1"


def test_rows_appended_after_the_read_stay_active(store: SessionStore) -> None:
    sid = store.create_session([msg("user", f"m{i}") for i in range(4)]).id
    pending = compaction(store, sid, [msg("assistant", "summary")])
    store.append_messages(sid, [msg("user", "late1"), msg("assistant", "late2")])
    assert store.commit_compaction(sid, pending).committed
    assert [m["content"] for m in store.load(sid).messages] == ["summary", "late1", "late2"]
    rows = store.load(sid, include_archived=True).rows
    assert len(rows) == 7 and len({r.seq for r in rows}) == 7
    store.append_messages(sid, [msg("user", "after")])
    assert store.load(sid).messages[-1]["content"] == "after"


def test_stale_generation_commits_nothing(store: SessionStore) -> None:
    sid = store.create_session([msg("user", f"m{i}") for i in range(3)]).id
    first = compaction(store, sid, [msg("assistant", "A")])
    second = compaction(store, sid, [msg("assistant", "B")])
    assert store.commit_compaction(sid, first).committed
    lost = store.commit_compaction(sid, second)
    assert not lost.committed and lost.generation == 1
    assert [m["content"] for m in store.load(sid).messages] == ["A"]


def test_rotation_and_lineage(store: SessionStore) -> None:
    sid = store.create_session([msg("user", f"m{i}") for i in range(3)], title="t").id
    pending = compaction(
        store, sid, [msg("assistant", "S")], rotate=True, previous_summary="S",
        archive=(("wk00000000aa", "message", "user: m1", msg("user", "m1")),),
    )  # fmt: skip
    store.append_messages(sid, [msg("user", "late")])
    done = store.commit_compaction(sid, pending)
    assert done.committed and done.session_id != sid
    old, child = store.get_session(sid), store.get_session(done.session_id)
    assert old.ended_at is not None and old.end_reason == "compression"
    assert child.parent_id == sid and child.previous_summary == "S" and child.title == "t"
    assert [m["content"] for m in store.load(child.id).messages] == ["S", "late"]
    assert [r.id for r in lineage(store, child.id)] == [child.id, sid]
    assert store.archived(child.id, ["wk00000000aa"])
    with pytest.raises(StoreError, match="ended"):
        store.append_messages(sid, [msg("user", "x")])
    assert not store.commit_compaction(sid, compaction(store, sid, [])).committed


def test_state_survives_a_restart(store: SessionStore, reopen: Callable[[], SessionStore]) -> None:
    sid = store.create_session([msg("user", "a")]).id
    guard = GuardState(strikes=2, cooldown_until=123.0, compression_count=3)
    store.save_state(sid, guard_state=guard.to_json(), previous_summary="earlier summary")
    compressor = make_compressor()
    restore_state(compressor, reopen().get_session(sid))
    assert compressor.guard == guard and compressor.previous_summary == "earlier summary"


def test_archive_lookup(store: SessionStore) -> None:
    sid = store.create_session([msg("user", "a")]).id
    archive = (
        ("wk00000000a1", "tool_output", "first text", msg("tool", "1")),
        ("wk00000000a2", "message", "second text", msg("user", "2")),
        ("wk00000000a1", "tool_output", "duplicate ignored", msg("tool", "dup")),
    )
    store.commit_compaction(sid, compaction(store, sid, [msg("user", "a")], archive=archive))
    found = store.archived(sid, ["wk00000000a2", "wkmissing000", "wk00000000a1"])
    assert [(e.handle, e.text) for e in found] == [
        ("wk00000000a2", "second text"), ("wk00000000a1", "first text"),
    ]  # fmt: skip
    assert found[1].message == msg("tool", "1") and found[1].session_id == sid
    assert {e.handle for e in store.archived(sid)} == {"wk00000000a1", "wk00000000a2"}
    assert store.archived(sid, []) == []


def test_search(store: SessionStore) -> None:
    one = store.create_session([msg("user", "a")]).id
    two = store.create_session([msg("user", "b")]).id
    texts = {
        "wk00000000b1": "tool output of bash\nTraceback: KeyError refund_total in payments",
        "wk00000000b2": "assistant: the invoice module is fine",
        "wk00000000b3": "tool output of grep\nrefund refund refund payments",
    }
    for sid, handles in ((one, ["wk00000000b1", "wk00000000b2"]), (two, ["wk00000000b3"])):
        archive = tuple((h, "tool_output", texts[h], msg("tool", h)) for h in handles)
        store.commit_compaction(sid, compaction(store, sid, [msg("user", "x")], archive=archive))
    assert {h.handle for h in store.search_archive("payments refund")} == {
        "wk00000000b1", "wk00000000b3",
    }  # fmt: skip
    hits = store.search_archive("KeyError", session_id=one)
    assert [h.handle for h in hits] == ["wk00000000b1"] and "KeyError" in hits[0].snippet
    assert hits[0].session_id == one and hits[0].kind == "tool_output"
    assert store.search_archive("payments", session_id=two)[0].handle == "wk00000000b3"
    assert store.search_archive("invoice missingword") == []
    assert store.search_archive("  ") == []
    assert len(store.search_archive('refund" OR (x* NEAR', limit=5)) <= 5  # no syntax errors


def test_lease(store: SessionStore, clock: FakeClock) -> None:
    assert store.acquire_lock("s1", "alice", ttl=300)
    assert not store.acquire_lock("s1", "bob", ttl=300)
    assert store.acquire_lock("s2", "bob", ttl=300)  # leases are per session
    assert not store.release_lock("s1", "bob")  # only the holder releases
    clock.advance(200)
    assert store.acquire_lock("s1", "alice", ttl=300)  # renewal: now expires at +500
    clock.advance(200)
    assert not store.acquire_lock("s1", "bob", ttl=300)
    clock.advance(101)
    assert store.acquire_lock("s1", "bob", ttl=300)  # expired: taken over
    assert not store.release_lock("s1", "alice")
    assert store.release_lock("s1", "bob")
    assert store.acquire_lock("s1", "carol")


def test_compact_session_end_to_end(store: SessionStore) -> None:
    sid = store.create_session(round_messages("a") + round_messages("b")).id
    before = appended_digests(store, sid)
    done = compact_session(store, sid, make_compressor(), force=True)
    result = done.result
    assert result.report.outcome is Outcome.COMPRESSED and done.session_id == sid
    assert store.load(sid).messages == result.messages
    record = store.get_session(sid)
    assert GuardState.from_json(record.guard_state or "{}").compression_count == 1
    assert record.previous_summary == result.summary
    handles = {item.handle for item in result.archived}
    assert handles and {e.handle for e in store.archived(sid, sorted(handles))} == handles
    assert appended_digests(store, sid) == before


def test_lock_loser_returns_input_unchanged(store: SessionStore) -> None:
    sid = store.create_session(round_messages("a") + round_messages("b")).id
    store.save_state(sid, guard_state=GuardState(strikes=1).to_json(), previous_summary=None)
    assert store.acquire_lock(sid, "someone-else")
    compressor = make_compressor()
    result = compact_session(store, sid, compressor, force=True).result
    assert result.report.outcome is Outcome.SKIPPED
    assert result.report.reason is Reason.CONCURRENT_COMPACTION
    assert "another compaction" in result.report.detail
    assert result.messages == store.load(sid).messages and not result.archived
    record = store.get_session(sid)
    assert record.generation == 0 and GuardState.from_json(record.guard_state or "").strikes == 1


def test_rotation_through_compact_session(store: SessionStore) -> None:
    sid = store.create_session(round_messages("a") + round_messages("b")).id
    done = compact_session(store, sid, make_compressor(), force=True, rotate=True)
    assert done.session_id != sid and store.get_session(sid).end_reason == "compression"
    assert store.load(done.session_id).messages == done.result.messages
    with pytest.raises(StoreError, match="ended"):
        compact_session(store, sid, make_compressor(), force=True)


def test_close_is_idempotent(store_url: str, clock: FakeClock) -> None:
    from windowkeeper.store import open_store

    opened = open_store(store_url, clock=clock)
    opened.close()
    opened.close()
    if not store_url.startswith("memory://"):
        with pytest.raises(StoreError, match="closed"):
            opened.list_sessions()
