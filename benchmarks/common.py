"""Shared helpers for the benchmarks: locating the real sessions, timing, markdown."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SESSIONS = ROOT / ".." / "shared" / "data" / "sessions"


def session_paths(prefix: str = "") -> list[Path]:
    if not SESSIONS.is_dir():
        raise SystemExit(f"real sessions not found at {SESSIONS.resolve()}; nothing to measure")
    return sorted(SESSIONS.glob(f"{prefix}*.jsonl"))


def median_seconds(run: Callable[[], object], repeat: int) -> float:
    """Median CPU time of ``repeat`` runs (after one warm-up run).

    CPU time (``process_time``) rather than wall time: the machines these run on are
    shared, and wall time then measures the neighbours as much as the code.
    """
    run()
    samples = []
    for _ in range(repeat):
        started = time.process_time()
        run()
        samples.append(time.process_time() - started)
    return statistics.median(samples)


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)
