"""Progress of ``windowkeeper eval`` on stderr: a rich bar on a terminal, a line per file
when stderr is piped (a log keeps one line per session evaluated and per PNG written),
nothing with ``--json -``."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ..evaluation import EvalReport


class EvalProgress:
    """Sessions (by messages replayed) and then plots (by files written)."""

    def __init__(self, bar: Progress | None, lines: bool, total: int) -> None:
        self.bar = bar
        self.lines = lines
        self.task = bar.add_task("eval", total=total) if bar else None
        self.done = 0

    def next_session(self, label: str) -> None:
        if self.bar is not None and self.task is not None:
            self.bar.update(self.task, description=f"eval {label}")

    def advance(self, done: int, total: int) -> None:
        """The evaluation's callback: ``done`` of ``total`` messages of this session."""
        if self.bar is not None and self.task is not None:
            self.bar.update(self.task, completed=self.done + done)
            if done == total:
                self.done += total

    def session_done(self, number: int, count: int, report: EvalReport) -> None:
        if self.lines:
            typer.echo(f"eval {number}/{count} {report.name}: {report.requests} requests, "
                       f"{len(report.compactions)} compactions", err=True)  # fmt: skip

    def plots(self) -> None:
        """The plot phase begins (the bar's total is the number of PNGs)."""
        if self.bar is not None and self.task is not None:
            self.bar.update(self.task, description="plot")

    def plot_done(self, number: int, count: int, path: Path) -> None:
        if self.bar is not None and self.task is not None:
            self.bar.update(self.task, completed=number, description=f"plot {path.name}")
        if self.lines:
            typer.echo(f"plot {number}/{count} {path}", err=True)


@contextmanager
def eval_progress(quiet: bool, total: int) -> Iterator[EvalProgress]:
    """A bar when stderr is a terminal, lines when it is not, nothing when ``quiet``."""
    if quiet or not sys.stderr.isatty():
        yield EvalProgress(None, not quiet, total)
        return
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn())  # fmt: skip
    with Progress(*columns, console=Console(file=sys.stderr), transient=True) as bar:
        yield EvalProgress(bar, False, total)
