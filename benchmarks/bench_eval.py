"""``windowkeeper eval`` on every real session: its cost against the plain replay, and the
project's retention table.

For each window: the CPU time of replaying all sessions with ``replay()`` (its defaults,
invariant checks included) against ``evaluate()`` on the same parsed sessions, run
alternately in the same process, and the median of the per-pair ratios (target: eval <
2x the replay at 32K); then the totals of the
evaluation: tokens, compactions by tier and trigger, retention by kind and by age, and
the prompt cache. Run:
``.venv/bin/python benchmarks/bench_eval.py [--windows 32000,16000,8000] [--repeat 5]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from common import markdown_table, session_paths
from windowkeeper import EvalTotals, evaluate, parse_conversation, replay
from windowkeeper.evaluation.report import EvalReport

SHOWN_AGES = (1, 2, 3, 5, 10, 20)


def _pct(part: int, whole: int) -> str:
    return f"{part / whole:.1%}" if whole else "-"


def totals_rows(window: int, totals: EvalTotals) -> tuple[list[object], list[object]]:
    kinds = {k.kind.value: k for k in totals.retention_by_kind}
    facts = sum(k.facts for k in kinds.values())
    kept = sum(k.kept_at_end for k in kinds.values())
    by_kind = [f"{k.kept_at_end}/{k.facts} ({_pct(k.kept_at_end, k.facts)})"
               for k in kinds.values()]  # fmt: skip
    ages = {a.age: a for a in totals.retention_by_age}
    by_age = [_pct(ages[a].kept, ages[a].facts) if a in ages else "-" for a in SHOWN_AGES]
    retention = [f"{window // 1000}K", f"{kept}/{facts} ({_pct(kept, facts)})", *by_kind, *by_age]
    breaks = totals.cache_breaks
    evens = sorted(b.break_even_requests for b in breaks if b.break_even_requests is not None)
    saved = _pct(totals.cumulative_baseline_tokens - totals.cumulative_tokens,
                 totals.cumulative_baseline_tokens)  # fmt: skip
    tokens = [
        f"{window // 1000}K", totals.requests, f"{totals.cumulative_tokens:,}",
        f"{totals.cumulative_baseline_tokens:,}", saved, f"{totals.peak_tokens:,}",
        totals.over_window,
        ", ".join(f"{k} {v}" for k, v in sorted(totals.by_tier.items())) or "-",
        ", ".join(f"{k} {v}" for k, v in sorted(totals.by_trigger.items())) or "-",
        f"{totals.compacting_ms:,.0f}",
        f"{sum(b.invalidated_tokens for b in breaks):,}",
        evens[len(evens) // 2] if evens else "-",
        f"{sum(b.paid_off for b in breaks)}/{len(breaks)}",
    ]  # fmt: skip
    return retention, tokens


def paired(
    plain: Callable[[], object], measured: Callable[[], object], repeat: int
) -> tuple[float, float, float]:
    """Median CPU seconds of each and the median of the per-pair ratios.

    The two run alternately (after one warm-up each), so both see the same load from the
    neighbours of a shared machine.
    """
    plain()
    measured()
    pairs = []
    for _ in range(repeat):
        started = time.process_time()
        plain()
        middle = time.process_time()
        measured()
        pairs.append((middle - started, time.process_time() - middle))
    bases, costs = zip(*pairs, strict=True)
    ratio = statistics.median(cost / base for base, cost in pairs)
    return statistics.median(bases), statistics.median(costs), ratio


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--windows", default="32000,16000,8000")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    sessions = [(p.stem, parse_conversation(p.read_text(encoding="utf-8")))
                for p in session_paths()]  # fmt: skip
    timing, retention, tokens = [], [], []
    for window in (int(w) for w in args.windows.split(",")):

        def plain(window: int = window) -> None:
            for _, c in sessions:
                replay(c.messages, context_length=window, tools=c.tools)

        def measured(window: int = window) -> list[EvalReport]:
            return [evaluate(c.messages, context_length=window, tools=c.tools, name=name)
                    for name, c in sessions]  # fmt: skip

        base, cost, ratio = paired(plain, measured, args.repeat)
        timing.append([f"{window // 1000}K", f"{base:.2f}", f"{cost:.2f}", f"{ratio:.2f}x"])
        rows = totals_rows(window, EvalTotals.of(measured()))
        retention.append(rows[0])
        tokens.append(rows[1])
    print(f"{len(sessions)} sessions, median CPU seconds of {args.repeat} alternating runs\n")
    print(markdown_table(["window", "replay s", "eval s", "eval / replay (median)"], timing))
    kinds = ["file", "modified file", "error", "error line", "id", "user term", "task"]
    print()
    print(markdown_table(
        ["window", "all facts kept", *kinds, *(f"age {a}" for a in SHOWN_AGES)], retention
    ))  # fmt: skip
    print()
    print(markdown_table(
        ["window", "requests", "cumulative prompt tokens", "without compaction", "saved",
         "peak", "over window", "compactions by tier", "by trigger", "compacting ms",
         "cache tokens invalidated", "median break-even", "paid off"], tokens,
    ))  # fmt: skip


if __name__ == "__main__":
    main()
