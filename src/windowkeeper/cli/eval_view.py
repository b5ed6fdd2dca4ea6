"""The terminal view of ``windowkeeper eval``: rich tables that fit 80 columns."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.table import Table

from ..core.messages import Message, ToolSchema
from ..evaluation import EvalReport, EvalTotals, evaluate
from ..evaluation.retention import AgeRetention

_SHOWN_AGES = (1, 2, 3, 5, 10, 20, 50, 100)


def _pct(part: int, whole: int) -> str:
    return f"{part / whole:.0%}" if whole else "-"


def _kept(report: EvalReport) -> str:
    facts = sum(k.facts for k in report.retention_by_kind)
    kept = sum(k.kept_at_end for k in report.retention_by_kind)
    return f"{kept}/{facts} {_pct(kept, facts)}" if facts else "-"


def _sessions(reports: Sequence[EvalReport]) -> Table:
    table = Table(title="Sessions", title_justify="left")
    for name in ("session", "requests", "compactions", "peak", "saved", "facts kept"):
        table.add_column(name, justify="left" if name == "session" else "right")
    for r in reports:
        saved = r.cumulative_baseline_tokens - r.cumulative_tokens
        tiers = "/".join(str(r.by_tier.get(t, 0)) for t in ("prune", "summary"))
        table.add_row(
            r.name, f"{r.requests:,}", f"{len(r.compactions)} ({tiers})", f"{r.peak_tokens:,}",
            _pct(saved, r.cumulative_baseline_tokens), _kept(r),
        )  # fmt: skip
    table.caption = "compactions (prune-only/summary)"
    return table


def _retention(totals: EvalTotals) -> Table:
    table = Table(title="Retention by kind", title_justify="left")
    for name in ("fact kind", "facts", "kept at end", "kept always"):
        table.add_column(name, justify="left" if name == "fact kind" else "right")
    for k in totals.retention_by_kind:
        table.add_row(
            k.kind.value, f"{k.facts:,}", f"{k.kept_at_end:,} {_pct(k.kept_at_end, k.facts)}",
            f"{k.kept_always:,} {_pct(k.kept_always, k.facts)}",
        )  # fmt: skip
    facts = sum(k.facts for k in totals.retention_by_kind)
    kept = sum(k.kept_at_end for k in totals.retention_by_kind)
    always = sum(k.kept_always for k in totals.retention_by_kind)
    table.add_section()
    table.add_row("all", f"{facts:,}", f"{kept:,} {_pct(kept, facts)}",
                  f"{always:,} {_pct(always, facts)}")  # fmt: skip
    return table


def _ages(ages: Sequence[AgeRetention]) -> Table:
    table = Table(title="Retention by age (compactions since a fact left)", title_justify="left")
    shown = [a for a in ages if a.age in _SHOWN_AGES or a is ages[-1]]
    table.add_column("age")
    for a in shown:
        table.add_column(str(a.age), justify="right")
    table.add_row("facts", *(f"{a.facts:,}" for a in shown))
    table.add_row("findable", *(_pct(a.kept, a.facts) for a in shown))
    return table


def _figures(totals: EvalTotals) -> Table:
    table = Table(title="Tokens and prompt cache", title_justify="left", show_header=False)
    table.add_column("figure")
    table.add_column("value", justify="right")
    with_c, without = totals.cumulative_tokens, totals.cumulative_baseline_tokens
    evens = sorted(b.break_even_requests for b in totals.cache_breaks
                   if b.break_even_requests is not None)  # fmt: skip
    rows = [
        ("cumulative prompt tokens", f"{with_c:,} ({_pct(without - with_c, without)} saved)"),
        ("without compaction", f"{without:,}"),
        ("peak context / over the window", f"{totals.peak_tokens:,} / {totals.over_window}"),
        ("compactions by tier", _counts(totals.by_tier)),
        ("compactions by trigger", _counts(totals.by_trigger)),
        ("time compacting", f"{totals.compacting_ms:,.0f} ms"),
        ("cache tokens invalidated", f"{sum(b.invalidated_tokens for b in totals.cache_breaks):,}"),
        ("median break-even", f"{evens[len(evens) // 2]} requests" if evens else "-"),
        ("paid off in the run", f"{sum(b.paid_off for b in totals.cache_breaks)}"
                                f"/{len(totals.cache_breaks)}"),
    ]  # fmt: skip
    for name, value in rows:
        table.add_row(name, value)
    return table


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{name} {count}" for name, count in sorted(counts.items())) or "-"


def render_eval(console: Console, reports: Sequence[EvalReport], totals: EvalTotals) -> None:
    first = reports[0]
    console.print(
        f"window {first.context_length:,} tokens, trigger {first.threshold_tokens:,}; "
        f"{len(reports)} session(s), {totals.requests:,} requests"
    )
    console.print(_sessions(reports))
    console.print(_figures(totals))
    if any(k.facts for k in totals.retention_by_kind):
        console.print(_retention(totals))
        console.print(_ages(totals.retention_by_age))
    else:
        console.print("no compaction happened: nothing left the verbatim context")
    if len(reports) == 1 and first.lost:
        lost = ", ".join(f"{f.kind.value} {f.text[:40]!r}" for f in first.lost[:5])
        console.print(f"not findable at the end ({first.lost_count}), e.g.: {lost}")
    for warning in dict.fromkeys(w for r in reports for w in r.warnings):
        if not warning.startswith("session compressed "):
            console.print(f"warning: {warning}")


def demo_eval(messages: list[Message], tools: list[ToolSchema], context_length: int) -> list[str]:
    """The demo's closing three lines: ``windowkeeper eval`` of the demo session itself."""
    report = evaluate(messages, context_length=context_length, tools=tools, name="demo")
    with_c, without = report.cumulative_tokens, report.cumulative_baseline_tokens
    kinds = {k.kind.value: k for k in report.retention_by_kind}
    shown = ", ".join(
        f"{name} {kinds[kind].kept_at_end}/{kinds[kind].facts}"
        for kind, name in (("file", "files"), ("error_line", "errors"), ("id", "ids"),
                           ("user_term", "user terms"), ("task", "task"))
        if kinds[kind].facts
    )  # fmt: skip
    evens = [b.break_even_requests for b in report.cache_breaks if b.break_even_requests]
    return [
        f"eval: {report.requests} requests, {len(report.compactions)} compactions, "
        f"{_pct(without - with_c, without)} fewer prompt tokens",
        _cache_line(evens),
        f"still findable: {shown}",
    ]


def _cache_line(evens: list[int]) -> str:
    """What the prompt cache lost to compaction, in words (was ``cache repaid in 4/3``)."""
    if not evens:
        return "prompt cache: no compaction had to be paid back"
    counts = ", ".join(map(str, evens[:-1])) + (" and " if len(evens) > 1 else "") + str(evens[-1])
    unit = "request" if len(evens) == 1 and evens[0] == 1 else "requests"
    return f"prompt cache: each compaction's cache miss was paid back after {counts} {unit}"
