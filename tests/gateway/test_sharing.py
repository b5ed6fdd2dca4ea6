"""A branch's background compaction through the store: one lease for jobs and foreground
compactions, the store read under it, a job that finds its session moved on."""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

from bgkit import WINDOW, GatedSummarizer, history
from windowkeeper.core.config import CompressionConfig
from windowkeeper.core.report import DiscardReason
from windowkeeper.engine.compressor import ContextCompressor
from windowkeeper.engine.prepared import PreparedCompaction
from windowkeeper.gateway.sharing import StoreSharing
from windowkeeper.store import MemoryStore, PreparedState


def prepared() -> PreparedCompaction:
    config = CompressionConfig(prune_min_chars=10**6)
    comp = ContextCompressor(config, context_length=WINDOW, summarizer=GatedSummarizer())
    found = comp.prepare(history(11))
    assert isinstance(found, PreparedCompaction)
    return found


def sharing(store: MemoryStore, sid: str, holder: str) -> StoreSharing:
    branch: Any = SimpleNamespace(store_id=sid, generation=0)
    return StoreSharing(store, branch, holder)


def test_a_job_runs_under_the_lease_and_publishes_before_letting_go() -> None:
    store = MemoryStore()
    sid = store.create_session().id
    one, two = sharing(store, sid, "one"), sharing(store, sid, "two")
    made = prepared()
    seen: list[object] = []

    def work() -> PreparedCompaction:
        seen.append(store.lease(sid))
        assert two.take() is DiscardReason.CLAIMED  # the other gateway sends as it is
        return made

    assert one.preparer()(work) is made
    assert seen and seen[0].holder == "one"  # type: ignore[attr-defined]
    assert store.lease(sid) is None
    stored = store.prepared(sid)
    assert stored is not None and stored.state is PreparedState.READY
    taken = two.take()
    assert isinstance(taken, PreparedCompaction) and taken.digest == made.digest
    assert store.lease(sid) is None  # applying needs no lease
    two.settled(taken, None)
    assert store.prepared(sid).state is PreparedState.APPLIED  # type: ignore[union-attr]


def test_a_foreground_compaction_holds_the_lease_and_a_job_then_does_nothing() -> None:
    store = MemoryStore()
    sid = store.create_session().id
    one, two = sharing(store, sid, "one"), sharing(store, sid, "two")
    assert two.take() is None  # nothing prepared: the lease is two's now
    assert store.lease(sid).holder == "two"  # type: ignore[union-attr]
    ran: list[bool] = []

    def work() -> PreparedCompaction:
        ran.append(True)
        return prepared()

    assert one.preparer()(work) is DiscardReason.CLAIMED and ran == []
    two.release()
    assert store.lease(sid) is None
    store.commit_compaction(sid, _compaction(store, sid))  # two's compaction landed
    assert one.preparer()(work) is DiscardReason.SUPERSEDED and ran == []


def test_without_a_stored_session_a_job_is_local() -> None:
    store = MemoryStore()
    branch: Any = SimpleNamespace(store_id=None, generation=0)
    local = StoreSharing(store, branch, "one")
    made = prepared()
    assert local.preparer()(lambda: made) is made
    assert local.take() is None and local.held is None


def _compaction(store: MemoryStore, sid: str) -> Any:
    from windowkeeper.store import Compaction

    snap = store.load(sid)
    return Compaction(
        generation=snap.session.generation, watermark=snap.watermark,
        messages=({"role": "user", "content": "S"},), archive=(), guard_state=None,
        previous_summary=None,
    )  # fmt: skip


def test_released_waits_until_no_live_holder_but_this_one_holds_the_lease() -> None:
    store = MemoryStore()
    sid = store.create_session().id
    one, two = sharing(store, sid, "one"), sharing(store, sid, "two")
    assert two.released(0.0) is True  # nobody holds it
    assert store.acquire_lock(sid, "one")
    assert one.released(0.0) is True  # its own
    assert two.released(0.0) is False  # held by a live holder when the bound passed
    letting_go = threading.Timer(0.2, store.release_lock, (sid, "one"))
    letting_go.start()
    assert two.released(30.0) is True
    letting_go.join()
    assert store.lease(sid) is None  # nothing taken by waiting
    assert store.acquire_lock(sid, "one", ttl=0.05)
    assert two.released(30.0) is True  # an expired lease is nobody's
