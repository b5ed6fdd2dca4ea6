"""One self-contained HTML page of an evaluation: tables and inline SVG charts.

No scripts, no external files, no fonts to fetch: the page opens offline in any browser.
Every table has a heading and an ``id`` (``totals``, ``sessions``, ``by-kind``, ``by-age``,
``cache``, and ``session-N`` and ``receipts-N`` per session) so tools and tests can find
it; table headers share one distinctive colour (``HEADER_RGB``) so a screenshot shows
where the tables are.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from .receipts import receipts
from .report import EvalReport, EvalTotals
from .retention import AgeRetention, KindRetention
from .svg import age_svg, context_svg

HEADER_RGB = (31, 78, 121)
_HEADER_CSS = "rgb({}, {}, {})".format(*HEADER_RGB)
_STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #1b1b1b; background: #fff; }
h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 28px; } h3 { font-size: 15px; }
h4 { font-size: 14px; margin: 8px 0 4px; }
table { border-collapse: collapse; margin: 8px 0 16px; }
th { background: HEADER; color: #fff; padding: 6px 10px; text-align: left; }
td { border-bottom: 1px solid #ddd; padding: 4px 10px; text-align: right; }
td:first-child { text-align: left; }
.note { color: #555; max-width: 60em; }
svg { background: #fafafa; border: 1px solid #ddd; margin: 4px 12px 12px 0; }
""".replace("HEADER", _HEADER_CSS)


def _pct(kept: int, total: int) -> str:
    return f"{kept / total:.0%}" if total else "-"


def _table(table_id: str, header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f"<td>{escape(str(cell))}</td>" for cell in row) + "</tr>" for row in rows
    )
    return f'<table id="{table_id}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _token_rows(t: EvalReport | EvalTotals) -> list[list[object]]:
    with_c, without = t.cumulative_tokens, t.cumulative_baseline_tokens
    count = len(t.compactions) if isinstance(t, EvalReport) else t.compactions
    return [
        ["requests", f"{t.requests:,}"],
        ["cumulative prompt tokens", f"{with_c:,}"],
        ["without compaction", f"{without:,}"],
        ["saved", _pct(without - with_c, without)],
        ["peak context tokens", f"{t.peak_tokens:,}"],
        ["requests over the window", t.over_window],
        ["compactions", count],
        ["by tier", ", ".join(f"{k} {v}" for k, v in sorted(t.by_tier.items())) or "-"],
        ["by trigger", ", ".join(f"{k} {v}" for k, v in sorted(t.by_trigger.items())) or "-"],
        ["time compacting", f"{t.compacting_ms:,.0f} ms"],
    ]


def _kind_rows(kinds: Sequence[KindRetention]) -> list[list[object]]:
    rows: list[list[object]] = [
        [k.kind.value, k.facts, k.kept_at_end, _pct(k.kept_at_end, k.facts), k.kept_always]
        for k in kinds
    ]
    facts = sum(k.facts for k in kinds)
    kept = sum(k.kept_at_end for k in kinds)
    rows.append(["all", facts, kept, _pct(kept, facts), sum(k.kept_always for k in kinds)])
    return rows


def _age_rows(ages: Sequence[AgeRetention]) -> list[list[object]]:
    return [[a.age, a.facts, a.kept, _pct(a.kept, a.facts)] for a in ages]


def _cache_rows(t: EvalReport | EvalTotals) -> list[list[object]]:
    breaks = t.cache_breaks
    evens = sorted(b.break_even_requests for b in breaks if b.break_even_requests is not None)
    median = evens[len(evens) // 2] if evens else "-"
    return [
        ["cache breaks", len(breaks)],
        ["tokens invalidated", f"{sum(b.invalidated_tokens for b in breaks):,}"],
        ["median break-even (requests)", median],
        ["paid off within the run", sum(b.paid_off for b in breaks)],
        ["never pay", sum(b.break_even_requests is None for b in breaks)],
        ["input cost with caching", f"{t.cached_cost:,.0f}"],
        ["without compaction", f"{t.cached_cost_without:,.0f}"],
    ]


_SESSION_COLUMNS = ("session", "requests", "compactions", "peak", "saved", "facts kept",
                    "cache tokens invalidated")  # fmt: skip
_NOTE = (
    '<p class="note">Facts are extracted from each span that leaves the verbatim context and '
    "looked for in the context the agent sees after every later compaction; an archive "
    "handle alone does not count as findable. Age: compactions since the fact left the "
    "verbatim context.</p>"
)


_NO_FACTS = ('<p class="note">No compaction: no fact left the verbatim context, so there '
             "is no retention to chart.</p>")  # fmt: skip


def _ages_chart(ages: Sequence[AgeRetention]) -> str:
    """The chart, or a note where it would be an empty box."""
    return age_svg(ages) if any(a.facts for a in ages) else _NO_FACTS


def _totals_section(totals: EvalTotals) -> list[str]:
    return [
        "<h2>Totals</h2>",
        "<h3>Tokens and compactions</h3>",
        _table("totals", ["figure", "value"], _token_rows(totals)),
        "<h3>Retention by fact kind</h3>",
        _table("by-kind", ["fact kind", "facts", "kept at end", "share", "kept always"],
               _kind_rows(totals.retention_by_kind)),
        "<h3>Retention by age (compactions since a fact left)</h3>",
        _table("by-age", ["age", "facts", "kept", "share"], _age_rows(totals.retention_by_age)),
        _ages_chart(totals.retention_by_age),
        "<h3>Prompt cache</h3>",
        _table("cache", ["prompt cache", "value"], _cache_rows(totals)),
    ]  # fmt: skip


_RECEIPT_COLUMNS = (
    "compaction",
    "request",
    "tier",
    "trigger",
    "tokens before",
    "tokens after",
    "cache prefix invalidated",
    "requests to break even",
)


def _receipt_rows(report: EvalReport) -> list[list[object]]:
    rows: list[list[object]] = []
    for r in receipts(report):
        if r.invalidated_tokens is None:  # no request followed it, or shared with the next
            cache, even = "-", "-"
        else:
            cache = f"{r.invalidated_tokens:,}"
            even = "never" if r.break_even_requests is None else str(r.break_even_requests)
        rows.append([f"#{r.ordinal}", r.request, r.tier, r.trigger, f"{r.before_tokens:,}",
                     f"{r.after_tokens:,}", cache, even])  # fmt: skip
    return rows


def _session_row(r: EvalReport) -> list[object]:
    facts = sum(k.facts for k in r.retention_by_kind)
    kept = sum(k.kept_at_end for k in r.retention_by_kind)
    saved = _pct(r.cumulative_baseline_tokens - r.cumulative_tokens, r.cumulative_baseline_tokens)
    return [r.name, r.requests, len(r.compactions), f"{r.peak_tokens:,}", saved,
            f"{kept}/{facts}", f"{r.invalidated_tokens:,}"]  # fmt: skip


def _session_section(number: int, report: EvalReport) -> list[str]:
    rows = [*_token_rows(report), *_cache_rows(report)]
    name = escape(report.name or f"session {number}")
    receipt_rows = _receipt_rows(report)
    return [
        f"<h3>{name}</h3>",
        context_svg(report),
        _ages_chart(report.retention_by_age),
        f"<h4>{name}: figures</h4>",
        _table(f"session-{number}", ["figure", "value"], rows),
        f"<h4>{name}: compaction receipts (n={len(receipt_rows)})</h4>",
        _table(f"receipts-{number}", _RECEIPT_COLUMNS, receipt_rows)
        if receipt_rows
        else '<p class="note">No compaction in this session.</p>',
    ]


def render_html(reports: Sequence[EvalReport], totals: EvalTotals) -> str:
    """The whole page: totals, one row per session, then each session's tables and charts."""
    window = f"{reports[0].context_length:,}-token window" if reports else "no session"
    parts = [
        f"<h1>windowkeeper eval: {len(reports)} session(s), {escape(window)}</h1>",
        _NOTE,
        *_totals_section(totals),
        "<h2>Sessions</h2>",
        "<h3>One row per session</h3>",
        _table("sessions", _SESSION_COLUMNS, [_session_row(r) for r in reports]),
    ]
    for number, report in enumerate(reports, 1):
        parts += _session_section(number, report)
    body = "\n".join(parts)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>windowkeeper eval</title><style>{_STYLE}</style></head>"
        f"<body>\n{body}\n</body></html>\n"
    )
