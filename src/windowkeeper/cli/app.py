"""windowkeeper command line: compress, inspect and demo long agent transcripts.

Usage::

    windowkeeper compress IN|--session ID [--store URL] [-o OUT] [--context-length N]
                 [--max-tokens M] [--threshold F] [--if-needed] [--focus TEXT] [--tools FILE]
                 [--report-json FILE] [--summarizer extractive|llm --summary-model M ...]
                 [--exact-tokens]
    windowkeeper inspect IN [--context-length N] [--max-tokens M] [--threshold F]
                 [--tools FILE] [--top K] [--json] [--exact-tokens]
    windowkeeper replay IN|--session ID [--context-length N] [--threshold F]
                 [--summarizer extractive|llm ...] [--plot OUT.png] [--json]
    windowkeeper sessions list | show ID | search QUERY | recall HANDLE | export ID
                 | import FILE [--format F]  [--store URL]
    windowkeeper mcp --store URL [--session ID]
    windowkeeper config show [--config FILE] [--json]
    windowkeeper serve --upstream URL [--host H] [--port P] [--context-length N] [--store URL]
    windowkeeper demo [--json]

``IN`` is a path or ``-`` for standard input, holding JSONL (one OpenAI chat message a
line), a JSON array of messages, an OpenAI or Anthropic request body (its ``tools`` are
used unless ``--tools`` is given), or a Claude Code / Codex transcript; the shape is
detected, or named with ``--format``. ``compress`` writes the compacted messages in the
input's shape (stdout unless ``-o``) and one summary line to stderr. ``inspect`` shows
where the tokens go and what a compaction would keep, summarize and prune. ``demo`` runs
both offline on a bundled synthetic coding-agent session (no API key, no network).

Exit codes: 0 success or nothing to do; 1 an internal error (a bug: one ``error:`` line,
never a traceback); 2 invalid input, options or a damaged store (one ``error:`` line
naming the line/index and the defect); 3 compaction aborted (nothing was dropped); 4 a
stored session's compaction skipped because another live process holds its compression
lease (the line names the holder and how long it has held it); 130 interrupted.

The keys of ``inspect --json`` are documented on :meth:`Inspection.to_dict`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer

from ..adapters.bodies import render_like
from ..adapters.formats import Format
from ..core.config import usable_window
from ..core.messages import Message, dump_jsonl
from ..core.report import CompressionResult
from ..core.version import __version__
from ..engine.inspection import inspect_conversation
from . import undo as _undo  # noqa: F401  (registers `sessions diff` / `sessions undo`)
from .common import (
    EXIT_BUSY,
    EXIT_INTERRUPTED,
    EXIT_INVALID,
    EXIT_OK,
    ConfigOpt,
    ContextLengthOpt,
    MaxTokensOpt,
    ThresholdOpt,
    collected_warnings,
    exit_code_for,
    fail,
    report_dict,
    stdout_console,
    summary_line,
    tolerant_output,
    unexpected_error,
    user_errors,
    write_text,
)
from .config import config_app
from .demo import demo_command
from .eval import eval_command
from .load import ExactTokensOpt, Loaded, load
from .mcp import mcp_command
from .render import render_inspection
from .replay import replay_command
from .serve import serve_command
from .sessions import (
    FormatOpt,
    StoredSource,
    StoreOpt,
    compress_session,
    sessions_app,
)
from .summarizer import DEFAULT_CHOICE, SummarizerChoice, summarizer_options

app = typer.Typer(
    name="windowkeeper",
    help="Keep long-running tool-using LLM agents inside their context window.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
    rich_markup_mode=None,
)

InputArg = Annotated[str, typer.Argument(metavar="IN", help="Conversation file, or '-' for stdin.")]
OptionalInputArg = Annotated[
    str | None,
    typer.Argument(metavar="[IN]", help="Conversation file, or '-' for stdin (or --session)."),
]
SessionOpt = Annotated[
    str | None,
    typer.Option("--session", metavar="ID", help="Compact this stored session (with --store)."),
]
ToolsOpt = Annotated[
    Path | None, typer.Option("--tools", help="Tool schemas: JSON array or request body.")
]


# --- compress ------------------------------------------------------------------------


OutputOpt = Annotated[
    Path | None, typer.Option("-o", "--output", help="Write JSONL here instead of stdout.")
]
IfNeededOpt = Annotated[
    bool, typer.Option("--if-needed", help="Only compress at or above the threshold.")
]
FocusOpt = Annotated[
    str | None, typer.Option("--focus", metavar="TOPIC", help="Topic to keep in more detail.")
]
ReportJsonOpt = Annotated[
    Path | None, typer.Option("--report-json", help="Write the compaction report here.")
]
RotateOpt = Annotated[
    bool, typer.Option("--rotate", help="Stored session: end it and continue in a child.")
]


@app.command()
@summarizer_options()
def compress(
    context_length: ContextLengthOpt = None,
    source: OptionalInputArg = None,
    output: OutputOpt = None,
    max_tokens: MaxTokensOpt = None,
    threshold: ThresholdOpt = None,
    if_needed: IfNeededOpt = False,
    focus: FocusOpt = None,
    tools_file: ToolsOpt = None,
    report_json: ReportJsonOpt = None,
    choice: SummarizerChoice = DEFAULT_CHOICE,
    store: StoreOpt = None,
    session: SessionOpt = None,
    rotate: RotateOpt = False,
    config_file: ConfigOpt = None,
    exact_tokens: ExactTokensOpt = False,
    fmt: FormatOpt = Format.AUTO,
) -> None:
    """Compact a conversation: prune old tool output, summarize the middle, keep the tail.

    The output has the input's shape: JSONL, a JSON array, or the same OpenAI or
    Anthropic request body with only its messages replaced; a Claude Code or Codex transcript is
    written as JSONL. With --session the stored session is compacted in the store (in
    place, or with --rotate by ending it and continuing in a child) instead of reading IN.
    """
    stored = StoredSource(store, session) if session is not None else None
    with user_errors():
        loaded = load(
            source, context_length=context_length, max_tokens=max_tokens,
            threshold=threshold, tools_file=tools_file, choice=choice, stored=stored,
            config_file=config_file, exact_tokens=exact_tokens, fmt=fmt,
        )  # fmt: skip
        if if_needed and _below_threshold(loaded, output, stored):
            return
        result = _run_compress(loaded, focus, stored, rotate)
        _finish(loaded, result, output, stored, report_json)


def _finish(
    loaded: Loaded,
    result: CompressionResult,
    output: Path | None,
    stored: StoredSource | None,
    report_json: Path | None,
) -> None:
    """The report to ``--report-json``; then the exit code's error, or the messages."""
    if report_json is not None:
        report = report_dict(result.report, loaded.compressor)
        write_text(json.dumps(report, indent=2) + "\n", report_json)
    code = exit_code_for(result.report)
    if code == EXIT_BUSY:
        raise fail(f"{result.report.detail}; nothing was written: retry when it is done", code)
    if code != EXIT_OK:
        raise fail(result.report.detail or "compaction aborted, nothing was dropped", code)
    _warn_over_window(loaded, result.messages)
    _emit(loaded, result.messages, output, stored, "compacted in the store")


def _emit(
    loaded: Loaded,
    messages: list[Message],
    output: Path | None,
    stored: StoredSource | None,
    done: str,
) -> None:
    """The messages to ``output`` (stdout without it); for a stored session without
    ``-o``, one line instead: the store holds them, a terminal wants no session dump."""
    if stored is None or output is not None:
        write_text(_rendered(loaded, messages), output)
        return
    typer.echo(
        f"session {stored.session_id}: {done}, {len(messages):,} active messages "
        f"(-o FILE writes them, as does `windowkeeper sessions export {stored.session_id}`)"
    )


def _rendered(loaded: Loaded, messages: list[Message]) -> str:
    """The messages in the shape the input had (JSONL for a stored session)."""
    if loaded.source is None:
        return dump_jsonl(messages)
    return render_like(loaded.source.format, loaded.source.text, messages)


def _warn_over_window(loaded: Loaded, messages: list[Message]) -> None:
    """Say so when even the compacted request cannot be sent to the model."""
    window = usable_window(loaded.context_length, loaded.max_tokens)
    tokens = loaded.request_tokens(messages)
    if tokens > window:
        typer.echo(
            f"warning: the output (~{tokens:,} tokens) is still over the {window:,}-token "
            "window: what must stay verbatim (system prompt, tool schemas, newest turns) "
            "and the handoff exceed it. "
            "Use a larger --context-length, or shorten the newest tool results (the agent "
            "loop's recovery and the gateway do this automatically).",
            err=True,
        )


def _below_threshold(loaded: Loaded, output: Path | None, stored: StoredSource | None) -> bool:
    """``--if-needed`` under the trigger: write the input unchanged and say so."""
    tokens = loaded.request_tokens(loaded.messages)
    if tokens >= loaded.compressor.threshold_tokens:
        return False
    _emit(loaded, loaded.messages, output, stored, "unchanged (below the threshold)")
    typer.echo(
        f"below the threshold ({tokens:,} < {loaded.compressor.threshold_tokens:,} tokens):"
        " written unchanged",
        err=True,
    )
    for note in loaded.notes:
        typer.echo(note, err=True)
    return True


def _run_compress(
    loaded: Loaded, focus: str | None, stored: StoredSource | None, rotate: bool
) -> CompressionResult:
    with collected_warnings() as warnings:
        # force: a command-line compaction is a manual one, like /compress in an agent.
        if stored is None:
            result = loaded.compressor.compress(loaded.messages, force=True, focus_topic=focus)
        else:
            result = compress_session(
                stored.store_url, stored.session_id, loaded.compressor,
                force=True, focus_topic=focus, rotate=rotate,
            )  # fmt: skip
    if exit_code_for(result.report) != EXIT_OK:
        return result  # the caller says why in its one error line
    typer.echo(summary_line(result.report), err=True)
    for note in loaded.notes:
        typer.echo(note, err=True)
    for warning in (*warnings, *result.report.warnings):
        typer.echo(f"warning: {warning}", err=True)
    return result


# --- inspect -------------------------------------------------------------------------


@app.command()
def inspect(
    source: InputArg,
    context_length: ContextLengthOpt = None,
    max_tokens: MaxTokensOpt = None,
    threshold: ThresholdOpt = None,
    tools_file: ToolsOpt = None,
    top: Annotated[int, typer.Option("--top", help="Tools listed by name.")] = 10,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object on stdout.")] = False,
    config_file: ConfigOpt = None,
    exact_tokens: ExactTokensOpt = False,
    fmt: FormatOpt = Format.AUTO,
) -> None:
    """Show where the tokens go and what a compaction would keep, summarize and prune."""
    with user_errors():
        loaded = load(
            source,
            context_length=context_length,
            max_tokens=max_tokens,
            threshold=threshold,
            tools_file=tools_file,
            config_file=config_file,
            exact_tokens=exact_tokens,
            fmt=fmt,
        )
        inspection = inspect_conversation(
            loaded.messages,
            loaded.tools,
            loaded.compressor,
            context_length=loaded.context_length,
            max_tokens=loaded.max_tokens,
            threshold=loaded.config.threshold,
            image_tokens=loaded.config.image_tokens,
            count=loaded.compressor.token_counter,
        )
    if as_json:
        typer.echo(json.dumps(inspection.to_dict(), indent=2))
    else:
        render_inspection(stdout_console(), inspection, top)
    for note in loaded.notes:
        typer.echo(note, err=True)


app.command("replay")(replay_command)
app.command("eval")(eval_command)
app.add_typer(config_app, name="config")
app.add_typer(sessions_app, name="sessions")  # with `diff` and `undo` (cli/undo.py)
app.command("serve")(serve_command)
app.command("mcp")(mcp_command)


app.command("demo")(demo_command)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"windowkeeper {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Show the version."),
    ] = False,
) -> None:
    """Keep long-running tool-using LLM agents inside their context window."""


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point; returns the exit code (usage errors are one line, exit 2)."""
    tolerant_output()
    try:
        code = app(args=argv, prog_name="windowkeeper", standalone_mode=False)
    except typer.TyperException as exc:
        # Click-level usage errors (unknown option, missing --context-length, not an int).
        # Bare `windowkeeper` has already printed the help; its error has no message.
        message = " ".join(exc.format_message().split())
        if message:
            typer.echo(f"error: {message}", err=True)
        return getattr(exc, "exit_code", EXIT_INVALID) or EXIT_INVALID
    except typer.Abort:
        typer.echo("aborted", err=True)
        return EXIT_INTERRUPTED
    except typer.Exit as exc:
        return exc.exit_code
    # The last line of defence: whatever escaped is one line, never a traceback.
    except (Exception, KeyboardInterrupt) as exc:
        return unexpected_error(exc)
    return code if isinstance(code, int) else EXIT_OK
