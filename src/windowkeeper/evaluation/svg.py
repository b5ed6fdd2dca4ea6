"""The inline SVG charts of the ``--html`` page: each with a title, axes with ticks and
labels, and a legend below the plot area (never over the data).

Plot area: ``_LEFT``..``width - _RIGHT`` by ``_TOP``..``height - _BOTTOM``; the legend
and the x label live in the bottom margin.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from .report import EvalReport
from .retention import AgeRetention

_LEFT, _RIGHT, _TOP, _BOTTOM = 58, 14, 28, 62
_BLUE, _ORANGE, _RED, _GREEN, _GREY = "#1f77b4", "#e69500", "#c00", "#2a9d3a", "#888"


class _Frame:
    """Maps data to pixels for one chart and draws its axes."""

    def __init__(self, width: int, height: int, xs: tuple[float, float], top: float) -> None:
        self.width, self.height = width, height
        self.x0, self.x1 = xs
        self.top = top or 1.0

    def at(self, x: float, y: float) -> tuple[float, float]:
        span = (self.x1 - self.x0) or 1.0
        px = _LEFT + (x - self.x0) / span * (self.width - _LEFT - _RIGHT)
        return px, self.height - _BOTTOM - y / self.top * (self.height - _TOP - _BOTTOM)

    def axes(self, xticks: Sequence[float], yticks: Sequence[float], x_label: str,
             y_unit: str) -> list[str]:  # fmt: skip
        bottom, right = self.height - _BOTTOM, self.width - _RIGHT
        parts = [
            f'<line x1="{_LEFT}" y1="{_TOP}" x2="{_LEFT}" y2="{bottom}" stroke="#333"/>',
            f'<line x1="{_LEFT}" y1="{bottom}" x2="{right}" y2="{bottom}" stroke="#333"/>',
        ]
        for x in xticks:
            px, _ = self.at(x, 0)
            parts.append(
                f'<line x1="{px:.1f}" y1="{bottom}" x2="{px:.1f}" y2="{bottom + 4}" '
                f'stroke="#333"/>{_text(px, bottom + 15, f"{x:,.0f}", "middle")}'
            )
        for y in yticks:
            _, py = self.at(self.x0, y)
            parts.append(
                f'<line x1="{_LEFT - 4}" y1="{py:.1f}" x2="{_LEFT}" y2="{py:.1f}" '
                f'stroke="#333"/>{_text(_LEFT - 6, py + 4, f"{y:,.0f}{y_unit}", "end")}'
            )
        parts.append(_text((_LEFT + right) / 2, bottom + 29, x_label, "middle"))
        return parts

    def legend(self, items: Sequence[tuple[str, str, str]]) -> list[str]:
        """(colour, dash array or "", label) in a row under the x label."""
        parts, x, y = [], float(_LEFT), self.height - 12
        for colour, dash, label in items:
            parts.append(
                f'<line x1="{x:.0f}" y1="{y - 4}" x2="{x + 18:.0f}" y2="{y - 4}" '
                f'stroke="{colour}" stroke-width="2" stroke-dasharray="{dash}"/>'
            )
            parts.append(_text(x + 22, y, label, "start"))
            x += 30 + 6.2 * len(label)
        return parts


def _text(x: float, y: float, text: str, anchor: str, size: int = 10) -> str:
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}">'
            f"{escape(text)}</text>")  # fmt: skip


def _ticks(top: float, count: int = 4) -> list[float]:
    return [top * i / count for i in range(count + 1)]


def _polyline(points: Sequence[tuple[float, float]], colour: str) -> str:
    path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
    return f'<polyline fill="none" stroke="{colour}" stroke-width="1.5" points="{path}"/>'


def _svg(role: str, frame: _Frame, title: str, parts: Sequence[str]) -> str:
    heading = _text(frame.width / 2, 16, title, "middle", 12)
    return (
        f'<svg class="{role}" xmlns="http://www.w3.org/2000/svg" width="{frame.width}" '
        f'height="{frame.height}" viewBox="0 0 {frame.width} {frame.height}">'
        f"<title>{escape(title)}</title>{heading}{''.join(parts)}</svg>"
    )


def context_svg(report: EvalReport, width: int = 560, height: int = 250) -> str:
    """Context tokens per request (blue), the trigger (orange) and the window (red),
    dashed, and a grey mark at each compaction."""
    tokens = report.tokens_per_request
    last = max(len(tokens) - 1, 1)
    frame = _Frame(width, height, (0, last), max([report.window, *tokens, 1]) * 1.05)
    xticks = sorted({round(x) for x in _ticks(last)})  # requests are whole: no 2 twice
    parts = frame.axes(xticks, _ticks(report.window), f"request (n={len(tokens):,})", "")
    parts.append(_polyline([frame.at(i, v) for i, v in enumerate(tokens)], _BLUE))
    for value, colour in ((report.threshold_tokens, _ORANGE), (report.window, _RED)):
        (x0, y), (x1, _) = frame.at(0, value), frame.at(last, value)
        parts.append(f'<line x1="{x0:.1f}" y1="{y:.1f}" x2="{x1:.1f}" y2="{y:.1f}" '
                     f'stroke="{colour}" stroke-dasharray="4 3"/>')  # fmt: skip
    for c in report.compactions:
        x, bottom = frame.at(c.request, 0)
        parts.append(f'<line x1="{x:.1f}" y1="{_TOP}" x2="{x:.1f}" y2="{bottom:.1f}" '
                     'stroke="#888" stroke-opacity="0.5"/>')  # fmt: skip
    parts += frame.legend([(_BLUE, "", "context tokens"), (_ORANGE, "4 3", "trigger"),
                           (_RED, "4 3", "window"),
                           (_GREY, "", f"compaction (n={len(report.compactions)})")])  # fmt: skip
    return _svg("context", frame, "Replay: prompt tokens per request", parts)


def age_svg(ages: Sequence[AgeRetention], width: int = 400, height: int = 250) -> str:
    """Share of facts still findable by age, each point labelled with its facts (n);
    the caller shows a note instead when no fact has an age (no compaction)."""
    rows = [a for a in ages if a.facts]
    xs = (min((a.age for a in rows), default=0) - 0.5, max((a.age for a in rows), default=1) + 0.5)
    frame = _Frame(width, height, xs, 115)
    step = max(1, len(rows) // 6)
    parts = frame.axes([a.age for a in rows[::step]], [0, 25, 50, 75, 100],
                       "age: compactions since the fact left", "%")  # fmt: skip
    points = [frame.at(a.age, 100 * a.kept / a.facts) for a in rows]
    parts.append(_polyline(points, _GREEN))
    for i, ((x, y), a) in enumerate(zip(points, rows, strict=True)):
        parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.5" fill="{_GREEN}"/>')
        lift = 6 if i % 2 == 0 or len(rows) <= 8 else 16  # alternate when crowded
        parts.append(_text(x, y - lift, f"n={a.facts}", "middle", 8))
    total = sum(a.facts for a in rows)
    parts += frame.legend([(_GREEN, "", f"facts findable (n per point; {total:,} in all)")])
    return _svg("retention-by-age", frame, "Facts still findable by age", parts)
