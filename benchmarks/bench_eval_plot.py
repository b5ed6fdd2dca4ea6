"""``windowkeeper eval --plot`` against the same ``eval`` without plots, as the user runs
them: the CLI on every real session, in a subprocess each, alternately, CPU seconds of
the child (user + system, so neighbours on a shared machine count less than in wall
time), median of the per-pair ratios. Target: --plot at most 2x.

``--compare SRC`` adds a third run per round: ``--plot`` with another source tree first
on the path (e.g. an export of the code before a change), to put the two side by side.
Run: ``.venv/bin/python benchmarks/bench_eval_plot.py [--repeat 5] [--compare /tmp/old/src]``.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from common import SESSIONS, markdown_table, session_paths

SRC = Path(__file__).resolve().parent.parent / "src"


def cpu_seconds(src: Path, *extra: str) -> float:
    """CPU seconds of one ``windowkeeper eval`` of every real session at 16K."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(
        [sys.executable, "-m", "windowkeeper", "eval", str(SESSIONS), "--context-length",
         "16000", *extra],
        env={**os.environ, "PYTHONPATH": str(src)}, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, check=True,
    )  # fmt: skip
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--compare", type=Path, help="another src/ to run --plot with")
    args = parser.parse_args()
    sessions = len(session_paths())
    runs: list[tuple[str, Path, bool]] = [("eval", SRC, False), ("eval --plot", SRC, True)]
    if args.compare is not None:
        runs.append((f"eval --plot ({args.compare})", args.compare, True))
    with tempfile.TemporaryDirectory() as folder:
        plot = ("--plot", str(Path(folder) / "run.png"))
        for _, src, plots in runs:  # warm-up: the file cache, compiled bytecode
            cpu_seconds(src, *(plot if plots else ()))
        rounds = [
            [cpu_seconds(src, *(plot if plots else ())) for _, src, plots in runs]
            for _ in range(args.repeat)
        ]
    rows = []
    for index, (name, _, _) in enumerate(runs):
        seconds = [r[index] for r in rounds]
        ratio = statistics.median(r[index] / r[0] for r in rounds)
        rows.append([name, f"{statistics.median(seconds):.2f}", f"{ratio:.2f}x"])
    print(f"{sessions} sessions at 16K, {sessions} PNGs with --plot; median CPU seconds of "
          f"{args.repeat} alternating rounds\n")  # fmt: skip
    print(markdown_table(["command", "CPU s", "/ eval (median of rounds)"], rows))


if __name__ == "__main__":
    main()
