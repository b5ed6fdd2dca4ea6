"""The ``--plot`` PNG of one evaluated session (matplotlib, the ``plot`` extra).

Left: context tokens per request, the threshold and the window, a mark at each
compaction (solid: summary, dotted: prune-only); the title gives the cumulative prompt
tokens with and without compaction. Right: the share
of facts still findable by age (compactions since they left the verbatim context).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..core.errors import ConfigError
from .report import EvalReport


def _pyplot() -> tuple[Any, Any]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        from matplotlib import pyplot, ticker
    except ImportError:
        raise ConfigError("--plot needs matplotlib: pip install 'windowkeeper[plot]'") from None
    return pyplot, ticker


def plot_available() -> None:
    """Raise the ``--plot needs matplotlib`` :class:`ConfigError` when it is missing."""
    _pyplot()


def write_plot(report: EvalReport, destination: Path) -> None:
    """Write the PNG; a destination that cannot be written is a :class:`ConfigError`."""
    pyplot, ticker = _pyplot()
    figure, (tokens, ages) = pyplot.subplots(
        1, 2, figsize=(12, 4), gridspec_kw={"width_ratios": [2, 1]}
    )
    try:
        requests = range(report.requests)
        tokens.plot(requests, report.tokens_per_request, label="context tokens")
        tokens.axhline(report.threshold_tokens, linestyle="--", color="orange", label="threshold")
        tokens.axhline(report.window, linestyle=":", color="red", label="window")
        for c in report.compactions:
            style = ":" if c.tier == "prune" else "-"
            tokens.axvline(c.request, color="grey", alpha=0.4, linestyle=style)
        tokens.set_ylim(0, max([report.window, *report.tokens_per_request, 1]) * 1.1)
        tokens.set_xlabel("request")
        tokens.set_ylabel("prompt tokens (estimated)")
        with_c, without = report.cumulative_tokens, report.cumulative_baseline_tokens
        tokens.set_title(
            f"{report.name or 'session'}: {with_c:,} cumulative prompt tokens "
            f"({without:,} without compaction)",
            fontsize=9,
        )
        tokens.legend(loc="upper left", fontsize=8)
        rows = [a for a in report.retention_by_age if a.facts]
        ages.plot([a.age for a in rows], [100 * a.kept / a.facts for a in rows], marker="o")
        ages.set_ylim(0, 105)
        ages.xaxis.set_major_locator(ticker.MaxNLocator(integer=True))
        ages.set_xlabel("compactions since the fact left the verbatim context")
        ages.set_ylabel("facts still findable (%)")
        figure.tight_layout()
        figure.savefig(destination, dpi=100)
    except OSError as exc:
        raise ConfigError(f"{destination}: cannot write: {exc.strerror}") from exc
    finally:
        pyplot.close(figure)
