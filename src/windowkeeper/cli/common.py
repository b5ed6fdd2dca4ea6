"""Shared command-line plumbing: one-line errors, held-back warnings, report lines."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from ..compaction.sanitize import sanitize_tool_pairs, system_first
from ..core.errors import ConfigError, WindowkeeperError
from ..core.exact_tokens import local_counter
from ..core.messages import Message
from ..core.report import CompressionReport, Outcome, Reason
from ..core.settings import Settings
from ..core.tokens import TextCounter
from ..engine.compressor import ContextCompressor
from ..summary.feasibility import resolve_context_length

# Options shared by compress, inspect and replay (one definition, one help text).
ContextLengthOpt = Annotated[
    int | None,
    typer.Option("--context-length", help="Model context window in tokens (else from the config)."),
]
ConfigOpt = Annotated[
    Path | None, typer.Option("--config", help="YAML config file (else the default places).")
]
MaxTokensOpt = Annotated[
    int | None, typer.Option("--max-tokens", help="Output tokens reserved from the window.")
]
ThresholdOpt = Annotated[
    float | None,
    typer.Option("--threshold", help="Trigger as a fraction of the effective window [0.5]."),
]

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_INVALID = 2
EXIT_ABORTED = 3
EXIT_BUSY = 4
EXIT_INTERRUPTED = 130


def stderr_console() -> Console:
    # Created per use so redirected/captured streams (tests, pipes) are honoured.
    return Console(file=sys.stderr, highlight=False, soft_wrap=True)


def stdout_console() -> Console:
    return Console(file=sys.stdout, highlight=False)


def fail(message: str, code: int = EXIT_INVALID) -> typer.Exit:
    """Print one ``error:`` line (newlines folded) and return the exit to raise."""
    typer.echo(f"error: {' '.join(message.split())}", err=True)
    return typer.Exit(code)


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn our own errors into one ``error:`` line and exit code 2 (never a traceback)."""
    try:
        yield
    except WindowkeeperError as exc:
        raise fail(str(exc)) from None


def tolerant_output() -> None:
    """Text we print may hold lone surrogates (JSON that had them is read as it is): they
    are written as ``\\udXXX`` escapes, which JSON reads back as the same character,
    instead of failing the command with an encoding error on a UTF-8 pipe."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            with suppress(ValueError, OSError):  # a stream that cannot change: left as is
                reconfigure(errors="backslashreplace")


def unexpected_error(exc: BaseException) -> int:
    """The last line of defence: any exception a command let through becomes one line.

    Our own errors keep their words and exit 2; anything else is a bug of ours, said so
    in one line with its type (exit 1). Never a traceback.
    """
    if isinstance(exc, KeyboardInterrupt):
        typer.echo("interrupted", err=True)
        return EXIT_INTERRUPTED
    if isinstance(exc, BrokenPipeError):
        # The reader went away (`| head`): nothing left to say, and no one to say it to.
        _silence_stdout()
        return EXIT_INTERNAL
    if isinstance(exc, WindowkeeperError):
        typer.echo(f"error: {' '.join(str(exc).split())}", err=True)
        return EXIT_INVALID
    if isinstance(exc, RecursionError | MemoryError):
        typer.echo(
            f"error: the input is too large or too deeply nested to process "
            f"({type(exc).__name__}); shorten it, or report the command line as a bug",
            err=True,
        )
        return EXIT_INVALID
    detail = " ".join(str(exc).split())[:200]
    typer.echo(
        f"error: internal error ({type(exc).__name__}{': ' + detail if detail else ''}); "
        "this is a windowkeeper bug: please report it with the command line",
        err=True,
    )
    return EXIT_INTERNAL


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@contextmanager
def collected_warnings() -> Iterator[list[str]]:
    """Hold back library warnings so the CLI decides how (and whether) to show them.

    An abort already explains its cause in its one error line; a compaction prints them
    after its summary line.
    """
    logger = logging.getLogger("windowkeeper")
    handler = _Collect()
    logger.addHandler(handler)
    propagate, logger.propagate = logger.propagate, False
    try:
        yield handler.lines
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate


def exit_code_for(report: CompressionReport) -> int:
    """Process exit code of a compaction: 3 when it aborted, 4 when another live process
    holds the stored session's compression lease, else 0 (a no-op is success)."""
    if report.outcome is Outcome.ABORTED:
        return EXIT_ABORTED
    if report.reason is Reason.CONCURRENT_COMPACTION:
        return EXIT_BUSY
    return EXIT_OK


def summary_line(report: CompressionReport) -> str:
    """One human line, e.g. ``compressed 343 → 41 messages, 121,840 → 18,230 tokens ...``."""
    if not report.compressed:
        return report.detail or f"not compressed ({report.outcome.value})"
    line = (
        f"compressed {report.before_messages} → {report.after_messages} messages, "
        f"{report.before_tokens:,} → {report.after_tokens:,} tokens "
        f"({report.savings_ratio:.0%} saved) in {report.elapsed_ms:,.0f} ms"
    )
    extras = [f"{report.pruned} tool outputs pruned"] if report.pruned else []
    if report.fallback_used:
        extras.append("extractive fallback used")
    return f"{line}; {', '.join(extras)}" if extras else line


def report_dict(report: CompressionReport, compressor: ContextCompressor) -> dict[str, Any]:
    """The ``--report-json`` object: the report plus the window figures it was judged by."""
    data = report.to_dict()
    data["threshold_tokens"] = compressor.threshold_tokens
    data["context_length"] = compressor.context_length
    return data


def write_text(text: str, destination: Path | None) -> None:
    """Write to ``destination``, or stdout when it is ``None``."""
    if destination is None:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    try:
        destination.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{destination}: cannot write: {exc.strerror}") from exc


def resolve_window(given: int | None, settings: Settings, model: str | None) -> int:
    """``--context-length``, else ``model.context_length`` from the config, else the
    model's window from installed metadata (LiteLLM, when installed), else an error."""
    if given is not None:
        if given <= 0:
            raise ConfigError(f"--context-length must be a positive integer, got {given}")
        return given
    if settings.model.context_length is not None:
        return settings.model.context_length
    known = resolve_context_length(model) if model else None
    if known is not None:
        return known
    named = f"of model {model!r} " if model else ""
    raise ConfigError(
        f"the context window {named}is unknown: pass --context-length N "
        "or set model.context_length in the config file"
    )


def exact_counter(model: str | None) -> TextCounter | None:
    counter = local_counter(model)
    if counter is None:
        typer.echo(
            "warning: no exact tokenizer available locally for "
            f"{model or 'the default encoding'} (install the 'tokenizers' extra and cache "
            "its encoding); using token estimates",
            err=True,
        )
    return counter


def repaired(messages: list[Message]) -> list[Message]:
    """Input whose tool pairing or role alternation is broken is repaired (with a
    warning), never rejected."""
    hoisted, moved = system_first(messages)
    if moved:
        typer.echo(
            f"warning: {moved} system messages after the start of the input moved to the "
            "start (instructions are read there)",
            err=True,
        )
    with collected_warnings():  # the line below says it once, in the CLI's words
        result = sanitize_tool_pairs(hoisted)
    if result.repairs.total:
        typer.echo(
            f"warning: repaired tool pairing in the input: {result.repairs.removed_results} "
            f"orphan results removed, {result.repairs.stubbed_calls} calls given a stub "
            f"result, {result.repairs.moved_results} results moved next to their call, "
            f"{result.repairs.merged_turns} adjacent same-role turns merged, "
            f"{result.repairs.repeated_calls} repeated calls removed",
            err=True,
        )
    return result.messages
