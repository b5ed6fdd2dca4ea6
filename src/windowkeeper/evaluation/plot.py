"""The ``--plot`` PNG of one evaluated session (matplotlib, the ``plot`` extra).

Top left, the replay: context tokens per request (the total without compaction in the
title: its curve would flatten this one), the trigger and the window, a mark at each
compaction (solid: summary, dotted: prune-only). Top right: the share of facts still
findable by age (compactions since they left the verbatim context), each point labelled
with its number of facts. Bottom: the receipt of every compaction (tokens before and
after, cache prefix invalidated, requests to break even, tier). Every legend sits
outside its axes so it never hides data; a panel with nothing to show (no compaction)
says so instead of drawing an empty box.

Speed: one figure is made per run and cleared between sessions (making a figure and
laying it out costs more than drawing it); the layout is fixed (no ``tight_layout``, a
second draw per save); the Agg backend is chosen before pyplot is imported.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..core.errors import ConfigError
from .receipts import Receipt, receipts
from .report import EvalReport

_LEGEND = {"loc": "upper center", "fontsize": 8, "frameon": False}
# An explicit y turns off matplotlib's title auto-placement, which measures every tick
# label of the axes on each draw (a sixth of the drawing time, profiled).
_TITLE = {"fontsize": 9, "y": 1.0}


def _pyplot() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")
        from matplotlib import pyplot
    except ImportError:
        raise ConfigError("--plot needs matplotlib: pip install 'windowkeeper[plot]'") from None
    return pyplot


def plot_available() -> None:
    """Raise the ``--plot needs matplotlib`` :class:`ConfigError` when it is missing."""
    _pyplot()


class PlotWriter:
    """Writes one PNG per report on one reused figure (see :func:`plot_writer`)."""

    def __init__(self, pyplot: Any) -> None:
        self.figure = pyplot.figure(figsize=(12, 7.6), dpi=100)
        grid = self.figure.add_gridspec(2, 2, width_ratios=[2, 1], height_ratios=[1, 1],
                                        left=0.07, right=0.98, top=0.9, bottom=0.12,
                                        hspace=0.6, wspace=0.22)  # fmt: skip
        self.tokens = self.figure.add_subplot(grid[0, 0])
        self.ages = self.figure.add_subplot(grid[0, 1])
        self.receipts = self.figure.add_subplot(grid[1, :])

    def write(self, report: EvalReport, destination: Path) -> None:
        """Write the PNG; a destination that cannot be written is a :class:`ConfigError`."""
        for axes in (self.tokens, self.ages, self.receipts):
            _clear(axes)
        self.figure.suptitle(report.name or "session", fontsize=11, x=0.07, y=0.98, ha="left")
        _replay(self.tokens, report)
        _ages(self.ages, report)
        _receipts(self.receipts, receipts(report))
        try:
            # compress_level 1: a tenth of the encoding time for a slightly larger file
            self.figure.savefig(destination, pil_kwargs={"compress_level": 1})
        except OSError as exc:
            raise ConfigError(f"{destination}: cannot write: {exc.strerror}") from exc


@contextmanager
def plot_writer() -> Iterator[PlotWriter]:
    """A :class:`PlotWriter` whose figure is closed afterwards."""
    pyplot = _pyplot()
    writer = PlotWriter(pyplot)
    try:
        yield writer
    finally:
        pyplot.close(writer.figure)


def write_plot(report: EvalReport, destination: Path) -> None:
    """One PNG for one report (several: use :func:`plot_writer`)."""
    with plot_writer() as writer:
        writer.write(report, destination)


def _clear(axes: Any) -> None:
    """Remove what the last session drew but keep the axes, their spines and their tick
    objects (``cla()`` rebuilds all of them, the larger part of drawing a new figure).
    What must hold: every panel sets its own limits, ticks, labels and title again."""
    for artist in [*axes.lines, *axes.patches, *axes.texts, *axes.collections]:
        artist.remove()
    axes.containers.clear()
    if axes.legend_ is not None:
        axes.legend_.remove()
    axes.set_axis_on()


def _replay(axes: Any, report: EvalReport) -> None:
    requests = range(report.requests)
    axes.plot(requests, report.tokens_per_request, color="#1f77b4", label="with compaction")
    axes.axhline(report.threshold_tokens, linestyle="--", color="#e69500",
                 label=f"trigger {report.threshold_tokens:,}")  # fmt: skip
    axes.axhline(report.window, linestyle=":", color="#c00", label=f"window {report.window:,}")
    for tier, style in (("summary", "-"), ("prune", ":")):
        at = [c.request for c in report.compactions if (c.tier == "prune") == (tier == "prune")]
        if at:
            axes.vlines(
                at,
                0,
                1,
                transform=axes.get_xaxis_transform(),
                color="grey",
                alpha=0.5,
                linestyle=style,
                label=f"{tier} compaction (n={len(at)})",
            )
    top = max([report.window, *report.tokens_per_request, 1])
    axes.set_ylim(0, top * 1.08)
    axes.set_xlim(0, max(report.requests - 1, 1))
    axes.xaxis.get_major_locator().set_params(integer=True)
    axes.set_xlabel(f"request (n={report.requests:,})")
    axes.set_ylabel("prompt tokens (estimated)")
    with_c, without = report.cumulative_tokens, report.cumulative_baseline_tokens
    saved = f"{(without - with_c) / without:.0%}" if without else "-"
    title = (f"Replay: context tokens per request; {with_c:,} cumulative, "
             f"{without:,} without compaction ({saved} saved)")  # fmt: skip
    axes.set_title(title, **_TITLE)
    axes.legend(bbox_to_anchor=(0.5, -0.2), ncol=3, **_LEGEND)


def _empty(axes: Any, title: str, text: str) -> None:
    """A panel with nothing to plot: its title and why, no box."""
    axes.set_axis_off()
    axes.set_title(title, **_TITLE)
    axes.text(0.5, 0.5, text, ha="center", va="center", fontsize=9, color="#555",
              transform=axes.transAxes, wrap=True)  # fmt: skip


def _ages(axes: Any, report: EvalReport) -> None:
    rows = [a for a in report.retention_by_age if a.facts]
    title = "Facts still findable by age"
    if not rows:
        _empty(axes, title, "no compaction:\nno fact left the verbatim context")
        return
    x = [a.age for a in rows]
    y = [100 * a.kept / a.facts for a in rows]
    total = sum(a.facts for a in rows)
    axes.plot(
        x, y, marker="o", color="#2a9d3a", label=f"findable (n facts per point, {total:,} in all)"
    )
    for age, share, row in zip(x, y, rows, strict=True):
        axes.annotate(f"n={row.facts}", (age, share), textcoords="offset points",
                      xytext=(0, 5), ha="center", va="bottom", fontsize=6,
                      rotation=90 if len(rows) > 8 else 0)  # fmt: skip
    axes.set_ylim(0, 125 if len(rows) > 8 else 112)
    axes.set_yticks(range(0, 101, 20))
    axes.set_xlim(min(x) - 0.5, max(x) + 0.5)
    axes.xaxis.get_major_locator().set_params(integer=True)
    axes.set_xlabel("age: compactions since the fact left")
    axes.set_ylabel("facts still findable (%)")
    axes.set_title(title, **_TITLE)
    axes.legend(bbox_to_anchor=(0.5, -0.2), **_LEGEND)


def _break_even(receipt: Receipt) -> str:
    if receipt.invalidated_tokens is None:
        return "-"  # no request followed it, or it shares the next compaction's break
    return "never" if receipt.break_even_requests is None else str(receipt.break_even_requests)


def _receipts(axes: Any, items: tuple[Receipt, ...]) -> None:
    title = f"Compaction receipts (n={len(items)})"
    if not items:
        _empty(axes, title, "no compaction in this session")
        return
    x = range(len(items))
    width = 0.27
    axes.bar([i - width for i in x], [r.before_tokens for r in items], width,
             color="#bbb", label="tokens before")  # fmt: skip
    axes.bar(list(x), [r.after_tokens for r in items], width, color="#1f77b4",
             label="tokens after")  # fmt: skip
    axes.bar([i + width for i in x], [r.invalidated_tokens or 0 for r in items], width,
             color="#e69500", label="cache prefix invalidated")  # fmt: skip
    top = max(r.before_tokens for r in items)
    crowded = len(items) > 20
    for i, r in zip(x, items, strict=True):
        axes.text(i, top * 1.03, _break_even(r), ha="center", va="bottom", fontsize=7,
                  rotation=90 if crowded else 0)  # fmt: skip
    axes.set_ylim(0, top * (1.25 if crowded else 1.15))
    # crowded: the tier's initial under the ordinal, so neighbouring labels never touch
    labels = [f"{r.ordinal}\n{r.tier[0].upper() if crowded else r.tier}" for r in items]
    axes.set_xticks(list(x), labels, fontsize=6 if crowded else 7)
    axes.set_xlim(-0.6, len(items) - 0.4)
    tiers = " (S summary, P prune)" if crowded else ""
    axes.set_xlabel(f"compaction (ordinal, tier{tiers})")
    axes.set_ylabel("tokens")
    axes.set_title(f"{title}: tokens before/after and cache prefix invalidated; "
                   "number above: requests to break even", **_TITLE)  # fmt: skip
    axes.legend(bbox_to_anchor=(0.5, -0.3), ncol=3, **_LEGEND)
