"""One self-contained HTML page of an evaluation: tables and inline SVG charts.

No scripts, no external files, no fonts to fetch: the page opens offline in any browser.
Every table has an ``id`` (``totals``, ``sessions``, ``by-kind``, ``by-age``, ``cache``,
and ``session-N`` per session) so tools and tests can find it; table headers share one
distinctive colour (``HEADER_RGB``) so a screenshot shows where the tables are.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from .report import EvalReport, EvalTotals
from .retention import AgeRetention, KindRetention

HEADER_RGB = (31, 78, 121)
_HEADER_CSS = "rgb({}, {}, {})".format(*HEADER_RGB)
_STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #1b1b1b; background: #fff; }
h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 28px; } h3 { font-size: 15px; }
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


def _polyline(points: Sequence[tuple[float, float]], colour: str) -> str:
    path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
    return f'<polyline fill="none" stroke="{colour}" stroke-width="1.5" points="{path}"/>'


def context_svg(report: EvalReport, width: int = 520, height: int = 200) -> str:
    """Context tokens per request (blue), the threshold (orange) and the window (red),
    both dashed, and a grey mark at each compaction."""
    tokens = report.tokens_per_request
    top = max([report.window, *tokens, 1]) * 1.05
    n = max(len(tokens) - 1, 1)

    def at(i: float, v: float) -> tuple[float, float]:
        return 40 + i / n * (width - 50), height - 20 - v / top * (height - 30)

    lines = [_polyline([at(i, v) for i, v in enumerate(tokens)], "#1f77b4")]
    for value, colour in ((report.threshold_tokens, "#e69500"), (report.window, "#c00")):
        (x0, y), (x1, _) = at(0, value), at(n, value)
        lines.append(
            f'<line x1="{x0:.1f}" y1="{y:.1f}" x2="{x1:.1f}" y2="{y:.1f}" stroke="{colour}" '
            'stroke-dasharray="4 3"/>'
        )
    for c in report.compactions:
        x, _ = at(c.request, 0)
        lines.append(f'<line x1="{x:.1f}" y1="10" x2="{x:.1f}" y2="{height - 20}" '
                     'stroke="#888" stroke-opacity="0.5"/>')  # fmt: skip
    label = f'<text x="4" y="14" font-size="11">tokens per request (max {top / 1.05:,.0f})</text>'
    return _svg("context", width, height, [label, *lines])


def age_svg(ages: Sequence[AgeRetention], width: int = 360, height: int = 200) -> str:
    """Share of facts still findable by age (compactions since they left)."""
    rows = [a for a in ages if a.facts]
    n = max(len(rows) - 1, 1)
    points = [
        (40 + i / n * (width - 50), height - 20 - a.kept / a.facts * (height - 40))
        for i, a in enumerate(rows)
    ]
    label = '<text x="4" y="14" font-size="11">findable by age (0-100%)</text>'
    return _svg("retention-by-age", width, height, [label, _polyline(points, "#2a9d3a")])


def _svg(role: str, width: int, height: int, parts: Sequence[str]) -> str:
    return (
        f'<svg class="{role}" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}">{"".join(parts)}</svg>'
    )


_SESSION_COLUMNS = ("session", "requests", "compactions", "peak", "saved", "facts kept",
                    "cache tokens invalidated")  # fmt: skip
_NOTE = (
    '<p class="note">Facts are extracted from each span that leaves the verbatim context and '
    "looked for in the context the agent sees after every later compaction; an archive "
    "handle alone does not count as findable. Age: compactions since the fact left the "
    "verbatim context.</p>"
)


def _totals_section(totals: EvalTotals) -> list[str]:
    return [
        "<h2>Totals</h2>",
        _table("totals", ["figure", "value"], _token_rows(totals)),
        _table("by-kind", ["fact kind", "facts", "kept at end", "share", "kept always"],
               _kind_rows(totals.retention_by_kind)),
        _table("by-age", ["age", "facts", "kept", "share"], _age_rows(totals.retention_by_age)),
        age_svg(totals.retention_by_age),
        _table("cache", ["prompt cache", "value"], _cache_rows(totals)),
    ]  # fmt: skip


def _session_row(r: EvalReport) -> list[object]:
    facts = sum(k.facts for k in r.retention_by_kind)
    kept = sum(k.kept_at_end for k in r.retention_by_kind)
    saved = _pct(r.cumulative_baseline_tokens - r.cumulative_tokens, r.cumulative_baseline_tokens)
    return [r.name, r.requests, len(r.compactions), f"{r.peak_tokens:,}", saved,
            f"{kept}/{facts}", f"{r.invalidated_tokens:,}"]  # fmt: skip


def _session_section(number: int, report: EvalReport) -> list[str]:
    rows = [*_token_rows(report), *_cache_rows(report)]
    return [
        f"<h3>{escape(report.name or f'session {number}')}</h3>",
        context_svg(report),
        age_svg(report.retention_by_age),
        _table(f"session-{number}", ["figure", "value"], rows),
    ]


def render_html(reports: Sequence[EvalReport], totals: EvalTotals) -> str:
    """The whole page: totals, one row per session, then each session's tables and charts."""
    window = f"{reports[0].context_length:,}-token window" if reports else "no session"
    parts = [
        f"<h1>windowkeeper eval: {len(reports)} session(s), {escape(window)}</h1>",
        _NOTE,
        *_totals_section(totals),
        "<h2>Sessions</h2>",
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
