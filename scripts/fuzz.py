"""Fuzz the library with random hostile histories (issue 10); figures for docs/benchmarks.md.

Each case (:func:`windowkeeper.testing.histories.fuzz_case`) is a valid conversation with
tool-call arguments nested up to 5,000 levels, 5,000-digit integer literals, broken JSON,
CJK, emoji, lone surrogates, images and parallel calls; it is validated, read back from
JSONL, compressed at a random window from 2K to 200K (forced or not) and run through the
manager's preflight; every ``--store-every``-th case is also stored, read back and
compacted in an SQLite store. Reports exceptions, invariant violations and compactions
whose output is over the window without a word in ``report.warnings`` (split into forced
ones whose incompressible floor would have fitted, and the rest), and compactions that
drop the newest written request (design §9).

Run: ``.venv/bin/python scripts/fuzz.py [--count 10000] [--seed 0] [--store-every 20]``;
exit code 1 when any exception, invariant violation or dropped request occurred.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter

from windowkeeper.store import open_store
from windowkeeper.testing.histories import FuzzCase, fuzz_case


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0, help="Seed of the first case.")
    parser.add_argument("--store-every", type=int, default=20, help="0: never store.")
    args = parser.parse_args()
    started = time.perf_counter()
    cases: list[FuzzCase] = []
    with tempfile.TemporaryDirectory() as folder, open_store(f"sqlite:///{folder}/f.db") as store:
        for number in range(args.count):
            stored = args.store_every and number % args.store_every == 0
            cases.append(fuzz_case(args.seed + number, store if stored else None))
    elapsed = time.perf_counter() - started
    failed = [c for c in cases if c.exception]
    broken = [c for c in cases if c.violations]
    dropped = [c for c in cases if c.task_dropped]
    over = [c for c in cases if c.over_window]
    silent = [c for c in over if not c.reported]
    silent_forced = [c for c in silent if c.forced_floor_fits]
    print(f"cases: {len(cases):,} ({sum(1 for c in cases if c.force):,} forced), "
          f"{elapsed:,.0f} s")  # fmt: skip
    print(f"exceptions: {len(failed)}")
    print(f"invariant violations: {len(broken)}")
    print(f"newest written request dropped (neither kept nor restated): {len(dropped)}")
    print(f"over the window after compaction: {len(over)}; unreported: {len(silent)} "
          f"(forced with a floor that fits: {len(silent_forced)})")  # fmt: skip
    for kind, count in Counter(c.exception.split(":")[0] for c in failed).most_common():
        print(f"  {count} x {kind}")
    for case in [*failed[:10], *broken[:10]]:
        print(f"  seed {case.seed}: {case.exception or case.violations[:3]}")
    for case in dropped[:5]:
        print(f"  request dropped: seed {case.seed}, window {case.window:,}")
    for case in silent[:5]:
        print(f"  unreported over-window: seed {case.seed}, window {case.window:,}, "
              f"forced {case.force}")  # fmt: skip
    return 1 if failed or broken or dropped else 0


if __name__ == "__main__":
    sys.exit(main())
