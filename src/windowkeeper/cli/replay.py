"""``windowkeeper replay``: replay a transcript through the context manager.

Mounted by ``cli.py`` with ``app.command("replay")(replay_command)``. Self-contained (no
import of ``cli``) so the mount cannot create an import cycle.

Usage::

    windowkeeper replay IN --context-length N [--threshold F] [--max-tokens M]
                        [--summarizer extractive] [--plot OUT.png] [--json]

Exit codes: 0 success; 2 invalid input or options, or ``--plot`` without matplotlib (one
``error:`` line each).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ..adapters.formats import Format
from ..core.config import CompressionConfig
from ..core.errors import ConfigError, WindowkeeperError
from ..core.messages import Conversation
from ..core.settings import load_settings
from ..loop.replay import ReplayReport, replay
from .common import ConfigOpt, ContextLengthOpt, MaxTokensOpt, ThresholdOpt, resolve_window
from .load import threshold_note
from .sessions import FormatOpt, StoredSource, StoreOpt, read_conversation
from .summarizer import (
    COMMON,
    DEFAULT_CHOICE,
    SummarizerChoice,
    build_summarizer,
    summarizer_options,
)

EXIT_INVALID = 2
_PROGRESS_MIN_MESSAGES = 200


def _fail(message: str) -> typer.Exit:
    typer.echo(f"error: {' '.join(message.split())}", err=True)
    return typer.Exit(EXIT_INVALID)


@dataclass(frozen=True)
class _Asked:
    """What the command line asked of the replay's settings (``None``: the config's)."""

    config_file: Path | None
    context_length: int | None
    threshold: float | None
    max_tokens: int | None
    background: bool | None


def _replay_settings(
    asked: _Asked, model: str | None
) -> tuple[CompressionConfig, int, int | None, str | None]:
    """The replay's config, window and output reserve, from the settings file with the
    command line's overrides; and the note on a threshold asked for there."""
    settings = load_settings(asked.config_file)
    config = settings.compression_config()
    if asked.threshold is not None:
        config = replace(config, threshold=asked.threshold)
    if asked.background is not None:
        config = replace(config, background=asked.background)
    window = resolve_window(asked.context_length, settings, model)
    reserve = asked.max_tokens if asked.max_tokens is not None else settings.model.max_tokens
    override = (  # only for a ratio asked for on the command line (see cli/load.py)
        threshold_note(config, window, reserve, model) if asked.threshold is not None else None
    )
    return config, window, reserve, override


@summarizer_options(COMMON)
def replay_command(
    context_length: ContextLengthOpt = None,
    source: Annotated[
        str | None, typer.Argument(metavar="[IN]", help="Transcript file, or '-' (or --session).")
    ] = None,
    threshold: ThresholdOpt = None,
    max_tokens: MaxTokensOpt = None,
    choice: SummarizerChoice = DEFAULT_CHOICE,
    plot: Annotated[
        Path | None, typer.Option("--plot", help="Write a PNG of context tokens per request.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    store: StoreOpt = None,
    session: Annotated[
        str | None,
        typer.Option("--session", metavar="ID", help="Replay this stored session (with --store)."),
    ] = None,
    config_file: ConfigOpt = None,
    fmt: FormatOpt = Format.AUTO,
    background: Annotated[
        bool | None,
        typer.Option(
            "--background/--no-background",
            help="Prepare compactions past the soft "
            "mark and apply them at the trigger [config; on with --summarizer llm].",
        ),
    ] = None,
) -> None:
    """Replay a transcript as the agent sent it, with compaction triggers active."""
    stored = StoredSource(store, session) if session is not None else None
    try:
        conversation = read_conversation(source, stored, fmt)
        asked = _Asked(config_file, context_length, threshold, max_tokens, background)
        config, window, reserve, override = _replay_settings(asked, conversation.model)
        report = _run(conversation, window, config, reserve, choice, as_json)
    except WindowkeeperError as exc:
        raise _fail(str(exc)) from None
    if as_json:
        typer.echo(json.dumps(report.to_dict(), ensure_ascii=False))
    else:
        _render(report, Console(file=sys.stdout, highlight=False))
    if override:
        typer.echo(f"note: {override}", err=True)
    if plot is not None:
        _plot(report, plot)


def _run(
    conversation: Conversation,
    context_length: int,
    config: CompressionConfig,
    max_tokens: int | None,
    choice: SummarizerChoice,
    quiet: bool,
) -> ReplayReport:
    if max_tokens is not None and max_tokens < 0:
        raise ConfigError(f"--max-tokens must be >= 0, got {max_tokens}")
    summarizer, summary_window = build_summarizer(choice, main_model=conversation.model)
    show = (
        not quiet and sys.stderr.isatty() and len(conversation.messages) >= _PROGRESS_MIN_MESSAGES
    )
    with _progress(show) as advance:
        return replay(
            conversation.messages, context_length=context_length, tools=conversation.tools,
            config=config, max_tokens=max_tokens, model=conversation.model, progress=advance,
            summarizer=summarizer, summary_context_length=summary_window,
        )  # fmt: skip


@contextmanager
def _progress(show: bool) -> Iterator[Callable[[int, int], None] | None]:
    """A rich progress bar on stderr for long runs; nothing when not shown."""
    if not show:
        yield None
        return
    columns = (TextColumn("replaying"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=Console(file=sys.stderr), transient=True) as bar:
        task = bar.add_task("replay", total=None)

        def advance(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield advance


def _render(report: ReplayReport, console: Console) -> None:
    console.print(
        f"window {report.context_length:,} tokens (usable {report.window:,}), "
        f"trigger {report.threshold_tokens:,}; {len(report.requests)} requests"
    )
    if report.compactions:
        table = Table("request", "trigger", "before", "after", "saved", "time")
        for c in report.compactions:
            table.add_row(
                str(c.turn), c.trigger, f"{c.before_tokens:,}", f"{c.after_tokens:,}",
                f"{c.savings:.0%}", f"{c.elapsed_ms:,.0f} ms",
            )  # fmt: skip
        console.print(table)
    else:
        console.print("no compaction was needed")
    with_c, without = report.cumulative_tokens, report.cumulative_baseline_tokens
    saved = 1 - with_c / without if without else 0.0
    console.print(f"peak context: {report.peak_tokens:,} tokens")
    console.print(f"requests over the window: {len(report.overflows)}")
    console.print(
        f"cumulative prompt tokens: {with_c:,} with compression vs {without:,} without "
        f"({saved:.0%} less)"
    )
    if report.invalid_requests:
        console.print(f"invalid requests (pairing/alternation): {len(report.invalid_requests)}")
    for warning in _distinct_warnings(report.warnings):
        console.print(f"warning: {warning}")


def _distinct_warnings(warnings: Sequence[str]) -> list[str]:
    """Each warning once; of the "compressed N times" ones only the newest (highest N)."""
    many = [w for w in warnings if w.startswith("session compressed ")]
    return [w for w in dict.fromkeys(warnings) if w not in many or w == many[-1]]


def _plot(report: ReplayReport, destination: Path) -> None:
    """PNG of context tokens per request, compaction marks and the threshold line."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        from matplotlib import pyplot
    except ImportError:
        raise _fail("--plot needs matplotlib: pip install 'windowkeeper[plot]'") from None
    figure, axes = pyplot.subplots(figsize=(10, 4))
    try:
        turns = [r.turn for r in report.requests]
        axes.plot(turns, [r.tokens for r in report.requests], label="context tokens")
        axes.axhline(report.threshold_tokens, linestyle="--", color="orange", label="threshold")
        axes.axhline(report.window, linestyle=":", color="red", label="window")
        for c in report.compactions:
            axes.axvline(c.turn, color="grey", alpha=0.4)
        axes.set_xlabel("request")
        axes.set_ylabel("prompt tokens (estimated)")
        axes.legend(loc="upper left")
        figure.savefig(destination, dpi=100)
    except OSError as exc:
        raise _fail(f"{destination}: cannot write: {exc.strerror}") from None
    finally:
        pyplot.close(figure)
