"""Token reduction of one forced compaction of every real session at 16K and 32K windows.

``kept floor`` is what the design must keep (protected head with the compaction note,
the verbatim tail, the handoff budget and a restated request): the reduction can reach
80% only where that floor is at most 20% of the input. Run:
``.venv/bin/python benchmarks/bench_reduction.py``.
"""

from __future__ import annotations

from common import markdown_table, session_paths
from windowkeeper import ContextCompressor, estimate_messages_tokens, parse_conversation
from windowkeeper.compaction.placement import with_system_note


def main() -> None:
    rows = []
    for path in session_paths():
        messages = parse_conversation(path.read_text(encoding="utf-8")).messages
        row: list[object] = [path.stem]
        for window in (16_000, 32_000):
            comp = ContextCompressor(context_length=window)
            plan = comp.plan(messages)
            result = comp.compress(messages, force=True)
            report = result.report
            floor = estimate_messages_tokens(with_system_note(messages[: plan.head_end]))
            floor += estimate_messages_tokens(messages[plan.tail_start :])
            floor += plan.summary_budget_tokens
            allows = floor <= report.before_tokens * 0.20
            row += [
                f"{report.before_tokens:,} → {report.after_tokens:,}",
                f"{report.savings_ratio:.0%}" + ("" if allows else " (floor)"),
            ]
        rows.append(row)
    header = ["session", "16K tokens", "16K saved", "32K tokens", "32K saved"]
    print(markdown_table(header, rows))
    print("\n(floor): the kept head + tail + handoff budget exceed 20% of the input.")


if __name__ == "__main__":
    main()
