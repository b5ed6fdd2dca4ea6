"""Compress time of every real session vs ``json.loads`` + ``json.dumps`` of the same file.

Run: ``.venv/bin/python benchmarks/bench_compress.py [--repeat N] [--window N]``.
Prints a markdown table (ratio = median CPU time of a compaction / median CPU time of
loads+dumps, both in this process) and the peak memory of one compaction (tracemalloc),
largest session first.
"""

from __future__ import annotations

import argparse
import json
import tracemalloc

from common import markdown_table, median_seconds, session_paths
from windowkeeper import ContextCompressor, parse_conversation


def measure(path_text: str, window: int, repeat: int) -> tuple[float, float, float, int, int]:
    messages = parse_conversation(path_text).messages

    def baseline() -> object:
        return json.dumps(json.loads("[" + ",".join(path_text.splitlines()) + "]"))

    def compress() -> object:
        return ContextCompressor(context_length=window).compress(messages, force=True)

    base = median_seconds(baseline, repeat)
    ours = median_seconds(compress, repeat)
    tracemalloc.start()
    compress()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return base, ours, ours / base, peak, len(messages)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--window", type=int, default=32_000)
    args = parser.parse_args()
    rows = []
    paths = sorted(session_paths(), key=lambda p: p.stat().st_size, reverse=True)
    for path in paths:
        text = path.read_text(encoding="utf-8")
        base, ours, ratio, peak, count = measure(text, args.window, args.repeat)
        rows.append(
            [path.stem, f"{len(text) / 1e6:.2f}", count, f"{base * 1e3:.2f}",
             f"{ours * 1e3:.2f}", f"{ratio:.2f}x", f"{peak / 1e6:.1f}"]
        )  # fmt: skip
    header = ["session", "MB", "msgs", "loads+dumps ms", "compress ms", "ratio", "peak MB"]
    print(markdown_table(header, rows))
    worst = max(float(r[5].rstrip("x")) for r in rows)
    print(f"\nlargest session ratio: {rows[0][5]}; worst ratio: {worst:.2f}x")


if __name__ == "__main__":
    main()
