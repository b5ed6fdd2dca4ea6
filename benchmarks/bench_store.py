"""Session store throughput on the largest real session: appends/s and compaction latency.

Run: ``.venv/bin/python benchmarks/bench_store.py [--rounds N] [--postgres URL]``.
PostgreSQL is measured when ``--postgres`` or ``$WINDOWKEEPER_TEST_POSTGRES_URL`` names a
server (``source .ci/postgres.sh`` starts a throwaway one); it uses a fresh schema that is
dropped afterwards. Prints a markdown table:

* appends/s: one message per ``append_messages`` call (one transaction each);
* batch append: the whole session in one ``create_session`` call (messages/s);
* compaction p50/p99: ``compact_session`` end to end (read, lease, compress, commit,
  release) on a fresh copy of the session, and the commit transaction alone;
* compress only: the same compaction with no store (the floor the store adds to).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

from common import markdown_table, session_paths
from windowkeeper import ContextCompressor, load_conversation
from windowkeeper.core.messages import Message
from windowkeeper.store import CommitOutcome, Compaction, SessionStore, compact_session, open_store

WINDOW = 64_000


class _TimedStore:
    """Records how long each commit transaction takes (wraps one store instance)."""

    def __init__(self, store: SessionStore) -> None:
        self.commits: list[float] = []
        original = store.commit_compaction

        def timed(session_id: str, compaction: Compaction) -> CommitOutcome:
            started = time.perf_counter()
            try:
                return original(session_id, compaction)
            finally:
                self.commits.append(time.perf_counter() - started)

        store.commit_compaction = timed  # type: ignore[method-assign]


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def measure(store: SessionStore, messages: list[Message], rounds: int) -> list[str]:
    sid = store.create_session(messages[:1]).id
    started = time.perf_counter()
    for message in messages[1:]:
        store.append_messages(sid, [message])
    appends = (len(messages) - 1) / (time.perf_counter() - started)
    started = time.perf_counter()
    store.create_session(messages)
    batch = len(messages) / (time.perf_counter() - started)
    timer = _TimedStore(store)
    totals = []
    for _ in range(rounds):
        sid = store.create_session(messages).id
        started = time.perf_counter()
        done = compact_session(store, sid, ContextCompressor(context_length=WINDOW), force=True)
        totals.append(time.perf_counter() - started)
        assert done.result.report.compressed
    ms = [t * 1000 for t in totals]
    commit_ms = [t * 1000 for t in timer.commits]
    return [
        f"{appends:,.0f}",
        f"{batch:,.0f}",
        f"{percentile(ms, 0.5):.1f} / {percentile(ms, 0.99):.1f}",
        f"{percentile(commit_ms, 0.5):.1f} / {percentile(commit_ms, 0.99):.1f}",
    ]


@contextmanager
def postgres_schema(base: str) -> Iterator[str]:
    import psycopg

    schema = f"wk_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    separator = "&" if "?" in base else "?"
    try:
        yield f"{base}{separator}options={quote(f'-csearch_path={schema}')}"
    finally:
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--postgres", default=os.environ.get("WINDOWKEEPER_TEST_POSTGRES_URL"))
    args = parser.parse_args()
    path = max(session_paths(), key=lambda p: p.stat().st_size)
    messages = load_conversation(path).messages
    compress_ms = []
    for _ in range(min(args.rounds, 20)):
        started = time.perf_counter()
        ContextCompressor(context_length=WINDOW).compress(messages, force=True)
        compress_ms.append((time.perf_counter() - started) * 1000)
    rows = []
    with tempfile.TemporaryDirectory() as tmp, open_store(f"sqlite:///{Path(tmp)}/b.db") as s:
        rows.append(["SQLite (WAL)", *measure(s, messages, args.rounds)])
    if args.postgres:
        with postgres_schema(args.postgres) as url, open_store(url) as store:
            rows.append(["PostgreSQL 15", *measure(store, messages, args.rounds)])
    header = ["backend", "appends/s (1 msg/tx)", "batch msgs/s",
              "compaction p50 / p99 ms", "commit tx p50 / p99 ms"]  # fmt: skip
    print(f"{path.name}: {len(messages)} messages, {path.stat().st_size / 1e3:.0f} kB; "
          f"{args.rounds} compactions per backend; compress alone p50 "
          f"{statistics.median(compress_ms):.1f} ms")  # fmt: skip
    print(markdown_table(header, rows))


if __name__ == "__main__":
    main()
