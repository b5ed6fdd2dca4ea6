"""4 processes race to compact one session, 50 rounds, on SQLite and PostgreSQL.

Each round the parent appends a batch, every worker reads the session, then all compact
it (forced) while the parent appends another batch (rows newer than every reader's
watermark, which must stay active behind the winner's compacted rows). Exactly one
worker may win a round; the others get the "concurrent compaction" skip. Afterwards
every appended row exists exactly once (active or archived), the total row count is
what the winners' commits imply, and the active appended rows keep their append order
(the watermark moved late rows, never reordered).
"""

from __future__ import annotations

import multiprocessing
import queue
import time
from collections import Counter, defaultdict
from typing import Any

from _workers import appended_digests, compact_rounds, make_compressor, round_messages, row_digest

from windowkeeper.store import SessionStore, compact_session, open_store

WORKERS = 4
ROUNDS = 50
Result = tuple[int, str, str, int]


def test_one_winner_per_round_and_no_row_lost(durable_url: str) -> None:
    with open_store(durable_url) as store:
        sid = store.create_session(round_messages("seed")).id
        compact_session(store, sid, make_compressor(), force=True)
        rows_before = len(store.load(sid, include_archived=True).rows)
        digests_before = appended_digests(store, sid)
        started = time.monotonic()
        results, appended = _race(durable_url, sid, store)
        elapsed = time.monotonic() - started
        rows = store.load(sid, include_archived=True).rows
        digests_after = appended_digests(store, sid)

    by_round: dict[int, list[str]] = defaultdict(list)
    for number, outcome, reason, _ in results:
        by_round[number].append(outcome if outcome == "compressed" else f"{outcome}:{reason}")
    skipped = ["skipped:concurrent_compaction"] * (WORKERS - 1)
    for number in range(ROUNDS):
        assert sorted(by_round[number]) == ["compressed", *skipped], (number, by_round[number])

    # No appended row lost or duplicated; every other row is one a winner inserted.
    assert digests_after == sorted(digests_before + appended)
    assert max(Counter(digests_after).values()) == 1
    inserted = sum(length for _, outcome, _, length in results if outcome == "compressed")
    assert len(rows) == rows_before + len(appended) + inserted
    assert len({r.seq for r in rows}) == len(rows)
    order = {digest: i for i, digest in enumerate(appended)}
    active = [order[row_digest(r.message)] for r in rows if r.active and r.origin == "append"]
    assert active == sorted(active)
    assert elapsed < 60, f"took {elapsed:.1f}s"


def _race(url: str, sid: str, store: SessionStore) -> tuple[list[Result], list[str]]:
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(WORKERS + 1)
    results: Any = ctx.Queue()
    procs = [
        ctx.Process(target=compact_rounds, args=(url, sid, ROUNDS, barrier, results))
        for _ in range(WORKERS)
    ]
    for proc in procs:
        proc.start()
    appended: list[str] = []
    collected: list[Result] = []
    try:
        for number in range(ROUNDS):
            appended += _append(store, sid, f"r{number}")  # something to compact
            barrier.wait(timeout=60)  # workers read their input
            barrier.wait(timeout=60)  # workers compact ...
            appended += _append(store, sid, f"late{number}")  # ... while this lands
            barrier.wait(timeout=60)
        collected = [results.get(timeout=30) for _ in range(ROUNDS * WORKERS)]
    finally:
        for proc in procs:
            proc.join(timeout=30)
            if proc.is_alive():
                proc.kill()
                proc.join()
        _close(results)
    assert [proc.exitcode for proc in procs] == [0] * WORKERS
    return collected, appended


def _append(store: SessionStore, sid: str, tag: str) -> list[str]:
    batch = round_messages(tag, rounds=1)
    store.append_messages(sid, batch)
    return [row_digest(m) for m in batch]


def _close(results: Any) -> None:
    try:
        while True:
            results.get_nowait()
    except queue.Empty:
        pass
    results.close()
    results.join_thread()
