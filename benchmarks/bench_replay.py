"""Replay every real session at a small window with the manager's triggers active.

Each assistant turn is one request carrying everything before it. Reports, per session,
the requests, compactions, peak context, requests over the window, invalid requests and
the cumulative prompt tokens with and without compression. Run:
``.venv/bin/python benchmarks/bench_replay.py [--window N]``.
"""

from __future__ import annotations

import argparse

from common import markdown_table, session_paths
from windowkeeper import parse_conversation, replay


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--window", type=int, default=32_000)
    args = parser.parse_args()
    rows = []
    total_with = total_without = prune_only = compactions = 0
    for path in session_paths():
        conversation = parse_conversation(path.read_text(encoding="utf-8"))
        report = replay(conversation.messages, context_length=args.window, tools=conversation.tools)
        with_c, without = report.cumulative_tokens, report.cumulative_baseline_tokens
        total_with += with_c
        total_without += without
        saved = 1 - with_c / without if without else 0.0
        pruned = sum(1 for c in report.compactions if c.tier == "prune")
        prune_only += pruned
        compactions += len(report.compactions)
        rows.append([
            path.stem, len(report.requests), len(report.compactions), pruned,
            f"{report.peak_tokens:,}",
            len(report.overflows), len(report.invalid_requests), f"{with_c:,}", f"{without:,}",
            f"{saved:.0%}",
        ])  # fmt: skip
    header = [
        "session", "requests", "compactions", "prune-only", "peak tokens", "over window", "invalid",
        "cumulative prompt tokens", "without compression", "saved",
    ]  # fmt: skip
    print(markdown_table(header, rows))
    saved = 1 - total_with / total_without if total_without else 0.0
    print(
        f"\ntotal: {total_with:,} vs {total_without:,} without compression ({saved:.0%} saved); "
        f"{compactions} compactions, {prune_only} prune-only"
    )


if __name__ == "__main__":
    main()
