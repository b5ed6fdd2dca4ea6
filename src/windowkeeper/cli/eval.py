"""``windowkeeper eval``: what compaction keeps and what it costs, on the user's transcripts.

Mounted by ``cli/app.py`` with ``app.command("eval")(eval_command)``; self-contained (no
import of ``cli.app``) so the mount cannot create an import cycle.

Usage::

    windowkeeper eval PATH... --context-length N [--threshold F] [--max-tokens M]
                      [--summarizer extractive|llm ...] [--json OUT] [--plot OUT.png]
                      [--html OUT.html] [--cache-read-price F] [--cache-write-price F]

``PATH`` is a transcript (any format the other commands read; ``-`` for stdin) or a
folder, searched recursively for ``*.jsonl`` and ``*.json`` files (``*.meta.json``
skipped). A file in a folder that is not a transcript is skipped with a warning; a file
named on the command line that cannot be read is an error.

Progress on stderr: a bar on a terminal, a line per session and per PNG when piped,
none with ``--json -`` (see ``eval_progress``).

The PNGs (``--plot``) are drawn with Pillow, a core dependency: no extra is needed.

Exit codes: 0 success; 2 invalid input or options, or an output that cannot be written
(one ``error:`` line each).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from ..adapters.formats import load_conversation
from ..core.config import CompressionConfig
from ..core.errors import ConfigError, WindowkeeperError
from ..core.messages import Conversation
from ..core.settings import Settings, load_settings
from ..evaluation import CachePrices, EvalReport, EvalTotals, evaluate
from ..evaluation.html import render_html
from ..summary.protocol import Summarizer
from .common import ConfigOpt, ContextLengthOpt, MaxTokensOpt, ThresholdOpt, fail, resolve_window
from .eval_progress import EvalProgress, eval_progress
from .eval_view import render_eval
from .summarizer import (
    COMMON,
    DEFAULT_CHOICE,
    SummarizerChoice,
    build_summarizer,
    summarizer_options,
)

PathsArg = Annotated[
    list[str],
    typer.Argument(metavar="PATH...", help="Transcripts or folders of them ('-' for stdin)."),
]


@dataclass(frozen=True)
class _Source:
    label: str
    path: str
    named: bool
    """Named on the command line (an unreadable one is an error, not a warning)."""


def expand(paths: list[str]) -> list[_Source]:
    """Each path, and each transcript file under each folder, in order, once."""
    sources: dict[str, _Source] = {}
    for given in paths:
        path = Path(given)
        if given != "-" and path.is_dir():
            found = sorted(
                p for p in path.rglob("*") if p.suffix in (".jsonl", ".json") and p.is_file()
            )
            for item in found:
                if not item.name.endswith(".meta.json"):
                    sources.setdefault(str(item), _Source(item.stem, str(item), False))
        else:
            label = "stdin" if given == "-" else path.stem
            sources.setdefault(given, _Source(label, given, True))
    return list(sources.values())


def _read(source: _Source) -> Conversation | None:
    try:
        return load_conversation(source.path)
    except WindowkeeperError as exc:
        if source.named:
            raise
        typer.echo(f"warning: skipped {source.path}: {' '.join(str(exc).split())}", err=True)
        return None


@dataclass(frozen=True)
class _Run:
    settings: Settings
    config: CompressionConfig
    context_length: int | None
    max_tokens: int | None
    choice: SummarizerChoice
    prices: CachePrices


_Summarizers = dict[str | None, tuple[Summarizer, int | None]]


def _evaluate_one(
    run: _Run, source: _Source, conversation: Conversation, bar: EvalProgress, built: _Summarizers
) -> EvalReport:
    window = resolve_window(run.context_length, run.settings, conversation.model)
    model = conversation.model
    if model not in built:  # one summarizer (and one window look-up) per model
        built[model] = build_summarizer(run.choice, main_model=model)
    summarizer, summary_window = built[model]
    return evaluate(
        conversation.messages, context_length=window, tools=conversation.tools,
        config=run.config, max_tokens=run.max_tokens, model=conversation.model,
        summarizer=summarizer, summary_context_length=summary_window,
        cache_prices=run.prices, name=source.label, progress=bar.advance,
    )  # fmt: skip


def _evaluate_all(run: _Run, sources: list[_Source], quiet: bool) -> list[EvalReport]:
    loaded = [(s, c) for s in sources if (c := _read(s)) is not None]
    if not loaded:
        raise ConfigError("no transcript found in the given paths")
    total = sum(len(c.messages) for _, c in loaded)
    reports = []
    built: _Summarizers = {}
    with eval_progress(quiet, total) as bar:
        for number, (source, conversation) in enumerate(loaded, 1):
            bar.next_session(source.label)
            reports.append(_evaluate_one(run, source, conversation, bar, built))
            bar.session_done(number, len(loaded), reports[-1])
    return reports


def _plot_paths(destination: Path, reports: list[EvalReport]) -> list[tuple[EvalReport, Path]]:
    """One PNG per session: ``OUT.png`` for one, ``OUT-<session>.png`` for several."""
    if len(reports) == 1:
        return [(reports[0], destination)]
    paths = []
    for number, report in enumerate(reports, 1):
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in report.name)
        name = f"{destination.stem}-{safe or number}{destination.suffix or '.png'}"
        paths.append((report, destination.with_name(name)))
    return paths


def _write(text: str, destination: Path) -> None:
    try:
        destination.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{destination}: cannot write: {exc.strerror}") from exc


def _outputs(
    reports: list[EvalReport],
    totals: EvalTotals,
    as_json: Path | None,
    plot: Path | None,
    html: Path | None,
    quiet: bool,
) -> None:
    if as_json is not None:
        data = {"sessions": [r.to_dict() for r in reports], "total": totals.to_dict()}
        text = json.dumps(data, ensure_ascii=False, indent=1) + "\n"
        if str(as_json) == "-":
            sys.stdout.write(text)
        else:
            _write(text, as_json)
    if plot is not None:
        _plots(_plot_paths(plot, reports), quiet)
    if html is not None:
        _write(render_html(reports, totals), html)


def _plots(paths: list[tuple[EvalReport, Path]], quiet: bool) -> None:
    """One reused figure for every PNG (see ``evaluation.plot``), a line or bar per file."""
    # imported here: Pillow's import is ~70 ms of every CLI start, and only --plot uses it
    from ..evaluation.plot import plot_writer

    with eval_progress(quiet, len(paths)) as bar, plot_writer() as writer:
        bar.plots()
        for number, (report, path) in enumerate(paths, 1):
            writer.write(report, path)
            bar.plot_done(number, len(paths), path)


@summarizer_options(COMMON)
def eval_command(
    paths: PathsArg,
    context_length: ContextLengthOpt = None,
    threshold: ThresholdOpt = None,
    max_tokens: MaxTokensOpt = None,
    choice: SummarizerChoice = DEFAULT_CHOICE,
    as_json: Annotated[
        Path | None, typer.Option("--json", help="Write every figure as JSON here ('-': stdout).")
    ] = None,
    plot: Annotated[
        Path | None, typer.Option("--plot", help="PNG per session: context, retention, receipts.")
    ] = None,
    html: Annotated[
        Path | None, typer.Option("--html", help="One self-contained HTML page of it all.")
    ] = None,
    cache_read_price: Annotated[
        float, typer.Option("--cache-read-price", help="Cache read price per input token.")
    ] = 0.1,
    cache_write_price: Annotated[
        float, typer.Option("--cache-write-price", help="Cache write price per input token.")
    ] = 1.25,
    config_file: ConfigOpt = None,
) -> None:
    """Replay transcripts with compaction and show what it kept and what it cost."""
    try:
        run = _settings(context_length, threshold, max_tokens, choice, config_file,
                        CachePrices(read=cache_read_price, write=cache_write_price))  # fmt: skip
        _check_outputs(as_json, plot, html)
        quiet = as_json is not None and str(as_json) == "-"
        reports = _evaluate_all(run, expand(paths), quiet)
        totals = EvalTotals.of(reports)
        if not quiet:
            render_eval(Console(file=sys.stdout, highlight=False), reports, totals)
        _outputs(reports, totals, as_json, plot, html, quiet)
    except WindowkeeperError as exc:
        raise fail(str(exc)) from None


def _check_outputs(as_json: Path | None, plot: Path | None, html: Path | None) -> None:
    """Before a long run: every output's folder exists."""
    for destination in (as_json, plot, html):
        if destination is None or str(destination) == "-":
            continue
        if not destination.parent.is_dir():
            raise ConfigError(f"{destination}: cannot write: no folder {destination.parent}")


def _settings(
    context_length: int | None,
    threshold: float | None,
    max_tokens: int | None,
    choice: SummarizerChoice,
    config_file: Path | None,
    prices: CachePrices,
) -> _Run:
    """The options checked and merged with the config file (command line first)."""
    if prices.read < 0 or prices.write < 0:
        raise ConfigError("--cache-read-price and --cache-write-price must be >= 0")
    if max_tokens is not None and max_tokens < 0:
        raise ConfigError(f"--max-tokens must be >= 0, got {max_tokens}")
    if context_length is not None and context_length <= 0:
        raise ConfigError(f"--context-length must be a positive integer, got {context_length}")
    settings = load_settings(config_file)
    config = settings.compression_config()
    if threshold is not None:
        config = replace(config, threshold=threshold)
    reserve = max_tokens if max_tokens is not None else settings.model.max_tokens
    return _Run(settings, config, context_length, reserve, choice, prices)
