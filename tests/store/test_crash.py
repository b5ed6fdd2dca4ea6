"""SIGKILL a compaction at random moments: the store must open and read back whole.

Each iteration appends a batch, predicts the compaction's output (the compressor is
deterministic), forks a child that opens the store and compacts, SIGKILLs it after a
random delay spanning the child's whole run (open, read, lease, compress, commit), then
reopens the store and checks that the active rows are exactly the old set or exactly
the new one, that no appended row is lost or duplicated, and that a committed
compaction's archive is complete. Fork (not spawn) keeps each child's start at a few
milliseconds, so the delays really span the compaction; the parent holds no open store
or thread when it forks.
"""

from __future__ import annotations

import os
import random
import signal
import time

from _workers import appended_digests, make_compressor, round_messages

from windowkeeper.core.messages import Message
from windowkeeper.store import compact_session, open_store, restore_state

KILLS = 50


def _fork_compaction(url: str, sid: str) -> int:
    pid = os.fork()
    if pid == 0:  # the child: compact once, never return into pytest
        code = 1
        try:
            with open_store(url) as store:
                # A fixed holder: the next child reclaims the lease a killed one left.
                compact_session(store, sid, make_compressor(), force=True, holder="crash")
            code = 0
        finally:
            os._exit(code)
    return pid


def _predict(url: str, sid: str) -> tuple[list[Message], list[Message], set[str], list[str]]:
    with open_store(url) as store:
        snapshot = store.load(sid)
        compressor = make_compressor()
        restore_state(compressor, snapshot.session)
        result = compressor.compress(snapshot.messages, force=True)
        handles = {item.handle for item in result.archived}
        return snapshot.messages, result.messages, handles, appended_digests(store, sid)


def _calibrate(url: str, sid: str) -> float:
    """The slowest of three unkilled children, fork to exit, in seconds."""
    durations = []
    for number in range(3):
        with open_store(url) as store:
            store.append_messages(sid, round_messages(f"calibrate{number}", rounds=4))
        started = time.monotonic()
        _, status = os.waitpid(_fork_compaction(url, sid), 0)
        assert os.waitstatus_to_exitcode(status) == 0
        durations.append(time.monotonic() - started)
    return max(durations)


def test_killed_compactions_leave_the_store_whole(durable_url: str) -> None:
    rng = random.Random(20250101)
    with open_store(durable_url) as store:
        sid = store.create_session(round_messages("seed", rounds=4)).id
    # Runs vary (fsync, scheduling): a window of twice the slowest run spans the whole
    # compaction every time, and part of the kills land after the commit.
    window = _calibrate(durable_url, sid) * 2
    seen = {"old": 0, "new": 0}
    for number in range(KILLS):
        with open_store(durable_url) as store:
            store.append_messages(sid, round_messages(f"k{number}", rounds=4))
        old, new, handles, digests = _predict(durable_url, sid)
        pid = _fork_compaction(durable_url, sid)
        time.sleep(rng.uniform(0, window))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        with open_store(durable_url) as store:  # opens (and re-checks migrations) cleanly
            active = store.load(sid).messages
            assert active in (old, new), f"kill {number}: a partial active set"
            assert appended_digests(store, sid) == digests, f"kill {number}: rows lost"
            if active == new:
                found = {e.handle for e in store.archived(sid, sorted(handles))}
                assert found == handles, f"kill {number}: archive incomplete"
        seen["old" if active == old else "new"] += 1
    # The random delays must have landed on both sides of the commit.
    assert seen["old"] and seen["new"], seen
