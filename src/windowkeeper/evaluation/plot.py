"""The ``--plot`` PNG of one evaluated session (drawn with Pillow, see :mod:`.raster`).

Top left, the replay: context tokens per request (the total without compaction in the
title: its curve would flatten this one), the trigger and the window, a mark at each
compaction (solid: summary, dotted: prune-only). Top right: the share of facts still
findable by age (compactions since they left the verbatim context), each point labelled
with its number of facts. Bottom: the receipt of every compaction (tokens before and
after, cache prefix invalidated, requests to break even, tier). Every legend sits
outside its axes so it never hides data; a panel with nothing to show (no compaction)
says so instead of drawing an empty box.

What must hold: a PNG depends only on its report (no state carries from one to the
next), every panel has its title, axes, ticks, labels and legend with the sample sizes.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .raster import DASHED, DOTTED, Axes, Canvas, Key, legend, nice_ticks
from .receipts import Receipt, receipts
from .report import EvalReport

WIDTH, HEIGHT = 1200, 760
_BLUE, _ORANGE, _RED, _GREEN = "#1f77b4", "#e69500", "#cc0000", "#2a9d3a"
_MARK, _BEFORE, _NOTE = "#a8a8a8", "#bbbbbb", "#555555"
_REPLAY = (84.0, 76.0, 748.0, 304.0)
_AGES = (836.0, 76.0, 1176.0, 304.0)
_RECEIPTS = (84.0, 468.0, 1176.0, 668.0)


class PlotWriter:
    """Writes one PNG per report (see :func:`plot_writer`)."""

    def write(self, report: EvalReport, destination: Path) -> None:
        """Write the PNG; a destination that cannot be written is a ``ConfigError``."""
        canvas = Canvas(WIDTH, HEIGHT)
        canvas.text(84, 12, report.name or "session", 15, "la")
        _replay(canvas, report)
        _ages(canvas, report)
        _receipts(canvas, receipts(report))
        canvas.save(destination)


@contextmanager
def plot_writer() -> Iterator[PlotWriter]:
    """A :class:`PlotWriter` for a run of PNGs (the fonts are cached in :mod:`.raster`)."""
    yield PlotWriter()


def write_plot(report: EvalReport, destination: Path) -> None:
    """One PNG for one report."""
    PlotWriter().write(report, destination)


def _replay(canvas: Canvas, report: EvalReport) -> None:
    tokens = report.tokens_per_request
    top = max([report.window, *tokens, 1]) * 1.08
    last = max(report.requests - 1, 1)
    axes = Axes(canvas, _REPLAY, (0, last), (0, top))
    keys = [Key("with compaction", _BLUE), Key(f"trigger {report.threshold_tokens:,}", _ORANGE,
            DASHED), Key(f"window {report.window:,}", _RED, DOTTED)]  # fmt: skip
    _, y0, _, y1 = _REPLAY
    for tier, dash in (("summary", None), ("prune", DOTTED)):
        at = [c.request for c in report.compactions if (c.tier == "prune") == (tier == "prune")]
        for request in at:
            x, _ = axes.at(request, 0)
            canvas.line([(x, y0), (x, y1)], _MARK, 1.4, dash)
        if at:
            keys.append(Key(f"{tier} compaction (n={len(at)})", _MARK, dash))
    for value, colour, dash in ((report.threshold_tokens, _ORANGE, DASHED),
                                (report.window, _RED, DOTTED)):  # fmt: skip
        canvas.line([axes.at(0, value), axes.at(last, value)], colour, 1.4, dash)
    canvas.line([axes.at(i, v) for i, v in enumerate(tokens)], _BLUE, 1.5)
    with_c, without = report.cumulative_tokens, report.cumulative_baseline_tokens
    saved = f"{(without - with_c) / without:.0%}" if without else "-"
    title = (f"Replay: context tokens per request; {with_c:,} cumulative, "
             f"{without:,} without compaction ({saved} saved)")  # fmt: skip
    xticks = [(x, f"{x:,.0f}") for x in nice_ticks(0, last, 8, integer=True)]
    axes.decorate(xticks, nice_ticks(0, top / 1.0001, 7), f"request (n={report.requests:,})",
                  "prompt tokens (estimated)", title)  # fmt: skip
    legend(canvas, keys, (_REPLAY[0] + _REPLAY[2]) / 2, y1 + 62, 3)


def _empty(canvas: Canvas, box: tuple[float, float, float, float], title: str, text: str) -> None:
    """A panel with nothing to plot: its title and why, no box."""
    x0, y0, x1, y1 = box
    canvas.text((x0 + x1) / 2, y0 - 7, title, 11, "md")
    for n, line in enumerate(text.split("\n")):
        canvas.text((x0 + x1) / 2, (y0 + y1) / 2 + (n - 0.5) * 16, line, 12, "mm", _NOTE)


def _ages(canvas: Canvas, report: EvalReport) -> None:
    rows = [a for a in report.retention_by_age if a.facts]
    title = "Facts still findable by age"
    if not rows:
        _empty(canvas, _AGES, title, "no compaction:\nno fact left the verbatim context")
        return
    x = [a.age for a in rows]
    y = [100 * a.kept / a.facts for a in rows]
    crowded = len(rows) > 8
    axes = Axes(canvas, _AGES, (min(x) - 0.5, max(x) + 0.5), (0, 125 if crowded else 112))
    points = [axes.at(age, share) for age, share in zip(x, y, strict=True)]
    canvas.line(points, _GREEN, 1.5)
    for (px, py), row in zip(points, rows, strict=True):
        canvas.dot(px, py, 3.5, _GREEN)
        canvas.text(px, py - 7, f"n={row.facts}", 8, "md", vertical=crowded)
    xticks = [(t, f"{t:,.0f}") for t in nice_ticks(min(x), max(x), 6, integer=True)]
    axes.decorate(xticks, range(0, 101, 20), "age: compactions since the fact left",
                  "facts still findable (%)", title)  # fmt: skip
    total = sum(a.facts for a in rows)
    keys = [Key(f"findable (n facts per point, {total:,} in all)", _GREEN, marker=True)]
    legend(canvas, keys, (_AGES[0] + _AGES[2]) / 2, _AGES[3] + 62, 1)


def _break_even(receipt: Receipt) -> str:
    if receipt.invalidated_tokens is None:
        return "-"  # no request followed it, or it shares the next compaction's break
    return "never" if receipt.break_even_requests is None else str(receipt.break_even_requests)


def _receipts(canvas: Canvas, items: tuple[Receipt, ...]) -> None:
    title = f"Compaction receipts (n={len(items)})"
    if not items:
        _empty(canvas, _RECEIPTS, title, "no compaction in this session")
        return
    crowded = len(items) > 20
    top = max(r.before_tokens for r in items)
    axes = Axes(canvas, _RECEIPTS, (-0.6, len(items) - 0.4), (0, top * (1.25 if crowded else 1.15)))
    width = 0.27
    for i, r in enumerate(items):
        for offset, value, colour in ((-width, r.before_tokens, _BEFORE),
                                      (0.0, r.after_tokens, _BLUE),
                                      (width, r.invalidated_tokens or 0, _ORANGE)):  # fmt: skip
            (left, base), (right, height) = (axes.at(i + offset - width / 2, 0),
                                             axes.at(i + offset + width / 2, value))  # fmt: skip
            canvas.rect((left, base, right, height), colour)
        px, py = axes.at(i, top * 1.03)
        canvas.text(px, py, _break_even(r), 9.5, "md", vertical=crowded)
    # crowded: the tier's initial under the ordinal, so neighbouring labels never touch
    labels = [(i, f"{r.ordinal}\n{r.tier[0].upper() if crowded else r.tier}")
              for i, r in enumerate(items)]  # fmt: skip
    tiers = " (S summary, P prune)" if crowded else ""
    axes.decorate(labels, nice_ticks(0, top, 6), f"compaction (ordinal, tier{tiers})", "tokens",
                  f"{title}: tokens before/after and cache prefix invalidated; number above: "
                  "requests to break even", tick_size=8.5 if crowded else 9.5)  # fmt: skip
    keys = [Key("tokens before", _BEFORE, box=True), Key("tokens after", _BLUE, box=True),
            Key("cache prefix invalidated", _ORANGE, box=True)]  # fmt: skip
    legend(canvas, keys, (_RECEIPTS[0] + _RECEIPTS[2]) / 2, _RECEIPTS[3] + 58, 3)
