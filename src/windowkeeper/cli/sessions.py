"""``windowkeeper sessions …``: list, show, search, recall, export and import stored sessions.

Every command takes ``--store URL`` (``memory://``, ``sqlite:///rel.db``, ``sqlite:////abs.db``,
``postgresql://…``); the default is ``$WINDOWKEEPER_STORE``, else SQLite in the user's
data directory. Errors are one ``error:`` line with exit code 2 (bad input, unknown
session, unusable store), never a traceback.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer

from ..adapters.formats import Format, detect_format, parse_conversation, read_text
from ..core.errors import ConfigError, WindowkeeperError
from ..core.messages import Conversation, Message, dump_jsonl, message_text, to_json, tool_calls
from ..core.report import CompressionResult
from ..engine.compressor import ContextCompressor
from ..store import (
    SessionRecord,
    SessionStore,
    Snapshot,
    StoreCheck,
    StoreDamageError,
    StoreMissingError,
    open_store,
)
from ..store.session import compress_stored, find_archived
from ..summary.redact import redact
from .common import repaired

__all__ = ["compress_session", "sessions_app"]

EXIT_INVALID = 2
PREVIEW_CHARS = 160

sessions_app = typer.Typer(
    name="sessions",
    help="Inspect, search, export and import stored sessions.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
    rich_markup_mode=None,
)

StoreOpt = Annotated[
    str | None,
    typer.Option(
        "--store",
        metavar="URL",
        help="Store URL: memory://, sqlite:///wk.db (relative to the working directory), "
        "sqlite:////abs/wk.db or postgresql://… (default: $WINDOWKEEPER_STORE, else the "
        "user data directory).",
    ),
]
SessionArg = Annotated[str, typer.Argument(metavar="ID", help="Session id.")]
RevealOpt = Annotated[
    bool,
    typer.Option(
        "--reveal", help="Show secrets (API keys, passwords, tokens) instead of masking them."
    ),
]
FormatOpt = Annotated[
    Format,
    typer.Option(
        "--format",
        help="Input shape: auto (detected), jsonl, json, openai or anthropic (request "
        "bodies), claude-code (a ~/.claude/projects session), codex (a rollout file).",
    ),
]


@contextmanager
def opened(
    url: str | None, *, create: bool = False, read_only: bool = False
) -> Iterator[SessionStore]:
    """The store, closed afterwards; our errors become one line and exit code 2.

    Only commands that write (``import``) create a store that does not exist yet;
    commands that only read pass ``read_only`` and open the database read-only.
    """
    try:
        with open_store(url, create=create, read_only=read_only) as store:
            verified(store)
            yield store
    except WindowkeeperError as exc:
        typer.echo(f"error: {' '.join(str(exc).split())}", err=True)
        raise typer.Exit(EXIT_INVALID) from None


def verified(store: SessionStore) -> SessionStore:
    """``store`` after the backend's quick structural check (SQLite: ``quick_check``,
    ~0.15 s for 200 MB): a damaged file is one error line, before anything reads or
    writes it, instead of a command that succeeds on what it happened not to touch."""
    result = store.check(quick=True)
    if not result.ok:
        raise StoreDamageError(result.detail)
    return store


def _missing(url: str | None) -> StoreMissingError | None:
    """The missing-store error of a read-only command's store, if the file is absent."""
    try:
        open_store(url, read_only=True).close()
    except StoreMissingError as exc:
        return exc
    except WindowkeeperError:
        return None  # reported by the command itself, in its own words
    return None


@dataclass(frozen=True)
class StoredSource:
    """``--store URL --session ID``: a stored session used in place of an input file."""

    store_url: str | None
    session_id: str


@dataclass(frozen=True)
class Input:
    """What a command read: the conversation, the shape it came in, and the text (``None``
    for a stored session) so a command can write the same shape back."""

    conversation: Conversation
    format: Format
    text: str | None = None


def read_input(source: str | None, stored: StoredSource | None, fmt: Format = Format.AUTO) -> Input:
    """The conversation from a file (``-`` for stdin) in the shape ``fmt`` names, or from
    a stored session's active messages; exactly one of the two must be given."""
    if (source is None) == (stored is None):
        raise ConfigError("give either an input file IN or --session ID (with --store URL)")
    if stored is None:
        assert source is not None
        text = read_text(source)
        fmt = detect_format(text) if fmt is Format.AUTO and text.strip() else fmt
        return Input(parse_conversation(text, fmt), fmt, text)
    with open_store(stored.store_url, read_only=True) as store:
        messages = verified(store).load(stored.session_id).messages
        return Input(Conversation(messages), Format.JSONL)


def read_conversation(
    source: str | None, stored: StoredSource | None, fmt: Format = Format.AUTO
) -> Conversation:
    """:func:`read_input` for commands that need only the conversation."""
    return read_input(source, stored, fmt).conversation


def compress_session(
    store_url: str | None,
    session_id: str,
    compressor: ContextCompressor,
    *,
    force: bool = False,
    focus_topic: str | None = None,
    rotate: bool = False,
) -> CompressionResult:
    """``compress --store URL --session ID``: compact a stored session in the store.

    Raises :class:`~windowkeeper.core.errors.WindowkeeperError` (e.g. an unknown session)
    for the caller's error handling.
    """
    with open_store(store_url, create=False) as store:
        return compress_stored(
            verified(store), session_id, compressor,
            force=force, focus_topic=focus_topic, rotate=rotate,
        )  # fmt: skip


def _when(timestamp: float | None) -> str:
    if timestamp is None:
        return "-"
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d %H:%M:%S")


def _status(record: SessionRecord) -> str:
    return f"ended ({record.end_reason})" if record.ended_at is not None else "active"


def preview(message: Message, reveal: bool = False) -> str:
    """One line of a message for the listings (redacted unless ``reveal``)."""
    text = " ".join(message_text(message).split())
    text = text if reveal else redact(text)
    calls = [str(c.get("function", {}).get("name", "tool")) for c in tool_calls(message)]
    if calls:
        text = (text + " " if text else "") + "→ " + ", ".join(calls)
    return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"


def _record_dict(record: SessionRecord) -> dict[str, Any]:
    data = asdict(record)
    data.pop("guard_state")
    return data


@sessions_app.command("list")
def list_sessions(
    store: StoreOpt = None,
    limit: Annotated[int, typer.Option("--limit", min=1, help="Sessions shown.")] = 50,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON array on stdout.")] = False,
) -> None:
    """Sessions, most recently updated first."""
    missing = _missing(store)
    if missing is not None:
        typer.echo(f"no sessions ({missing})")
        return
    with opened(store, read_only=True) as opened_store:
        records = opened_store.list_sessions(limit=limit)
    if as_json:
        typer.echo(json.dumps([_record_dict(r) for r in records], indent=2))
        return
    if not records:
        typer.echo("no sessions")
        return
    for r in records:
        parent = f" parent={r.parent_id}" if r.parent_id else ""
        title = f" {r.title}" if r.title else ""
        typer.echo(
            f"{r.id}  {_when(r.updated_at)}  {r.active_messages} msgs  "
            f"{r.compactions} compactions  {_status(r)}{parent}{title}"
        )


@sessions_app.command("show")
def show(
    session_id: SessionArg,
    store: StoreOpt = None,
    archived: Annotated[
        bool, typer.Option("--archived", help="Also list archived rows and archive handles.")
    ] = False,
    reveal: RevealOpt = False,
) -> None:
    """A session's record and its messages, one preview line each.

    Secrets are masked unless --reveal."""
    with opened(store, read_only=True) as opened_store:
        snapshot = opened_store.load(session_id, include_archived=archived)
        everyone = opened_store.list_sessions(limit=100_000)
        entries = opened_store.archived(session_id) if archived else []
    children = [record.id for record in everyone if record.parent_id == session_id]
    r = snapshot.session
    typer.echo(f"session {r.id}  {_status(r)}")
    typer.echo(f"created {_when(r.created_at)}  updated {_when(r.updated_at)}")
    typer.echo(
        f"{r.active_messages} active messages, {r.compactions} compactions, "
        f"generation {r.generation}"
    )
    if r.parent_id:
        typer.echo(f"parent {r.parent_id}")
    for child in children:
        typer.echo(f"child {child}")
    if r.previous_summary:
        typer.echo(f"previous summary: {len(r.previous_summary)} chars")
    for row in snapshot.rows:
        mark = "" if row.active else " [archived]"
        role = row.message.get("role", "?")
        typer.echo(f"{row.seq:>6} {role:<9}{mark} {preview(row.message, reveal)}")
    for entry in entries:
        text = " ".join((entry.text if reveal else redact(entry.text)).split())[:PREVIEW_CHARS]
        typer.echo(f"archive {entry.handle} {entry.kind:<14} {text}")


@sessions_app.command("search")
def search(
    query: Annotated[str, typer.Argument(help="Words to find in archived content.")],
    store: StoreOpt = None,
    session: Annotated[
        str | None, typer.Option("--session", metavar="ID", help="Only this session's archive.")
    ] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, help="Maximum hits.")] = 10,
    reveal: RevealOpt = False,
) -> None:
    """Full-text search over archived tool outputs and summarized messages.

    Secrets in the snippets are masked unless --reveal."""
    missing = _missing(store) if session is None else None
    if missing is not None:
        typer.echo(f"no archived item matches {query!r} ({missing})")
        return
    with opened(store, read_only=True) as opened_store:
        hits = opened_store.search_archive(query, session_id=session, limit=limit, reveal=reveal)
    if not hits:
        typer.echo(f"no archived item matches {query!r}")
        return
    for hit in hits:
        typer.echo(f"{hit.session_id}  {hit.handle}  {hit.kind}  {hit.snippet}")


@sessions_app.command("recall")
def recall(
    handle: Annotated[str, typer.Argument(metavar="HANDLE", help="Archive handle (wk…).")],
    store: StoreOpt = None,
    session: Annotated[
        str | None,
        typer.Option("--session", metavar="ID", help="Look only in this session's lineage."),
    ] = None,
    reveal: RevealOpt = False,
) -> None:
    """Print an archived original: a pruned tool output or a summarized message.

    Secrets are masked unless --reveal."""
    with opened(store, read_only=True) as opened_store:
        entry = find_archived(opened_store, handle.strip(), session)
    if entry is None:
        where = f"session {session!r}" if session else "the store"
        typer.echo(f"error: no archived item with handle {handle!r} in {where}", err=True)
        raise typer.Exit(EXIT_INVALID)
    typer.echo(entry.text if reveal else redact(entry.text))


@sessions_app.command("export")
def export(
    session_id: SessionArg,
    store: StoreOpt = None,
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="Write here instead of stdout.")
    ] = None,
    archived: Annotated[
        bool,
        typer.Option(
            "--archived",
            help="One JSON object with the session, all rows (active and archived) and the "
            "archive, instead of JSONL of the active messages.",
        ),
    ] = False,
) -> None:
    """The active messages as JSONL (re-importable), or everything as JSON."""
    with opened(store, read_only=True) as opened_store:
        snapshot = opened_store.load(session_id, include_archived=archived)
        if archived:
            text = to_json(_full_export(opened_store, snapshot)) + "\n"
        else:
            text = dump_jsonl(snapshot.messages)
    if output is None:
        typer.echo(text, nl=False)
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        typer.echo(f"error: cannot write {output}: {exc.strerror}", err=True)
        raise typer.Exit(EXIT_INVALID) from None


def _full_export(store: SessionStore, snapshot: Snapshot) -> dict[str, Any]:
    return {
        "session": _record_dict(snapshot.session),
        "messages": snapshot.messages,
        "rows": [asdict(row) for row in snapshot.rows],
        "archive": [asdict(entry) for entry in store.archived(snapshot.session.id)],
    }


@sessions_app.command("import")
def import_session(
    source: Annotated[str, typer.Argument(metavar="FILE", help="JSONL/JSON file, or '-'.")],
    store: StoreOpt = None,
    title: Annotated[str | None, typer.Option("--title", help="Session title.")] = None,
    fmt: FormatOpt = Format.AUTO,
) -> None:
    """Create a session from a conversation file and print its id.

    The file may be JSONL, JSON, a request body, or a Claude Code / Codex transcript.
    Broken tool pairing or role order is repaired (with a warning), as for ``compress``:
    the store holds what a provider accepts."""
    with opened(store, create=True) as opened_store:
        conversation = read_conversation(source, None, fmt)
        name = title if title is not None else ("stdin" if source == "-" else Path(source).name)
        record = opened_store.create_session(repaired(conversation.messages), title=name)
    typer.echo(record.id)


@sessions_app.command("check")
def check(store: StoreOpt = None) -> None:
    """Run the store's integrity check and decode every stored value; one line.

    Exit code 0 when the store is whole, 2 when it is damaged or cannot be opened.
    """
    try:
        with open_store(store, read_only=True) as opened_store:
            result = opened_store.check()
    except StoreDamageError as exc:
        result = StoreCheck(False, exc.reason)
    except WindowkeeperError as exc:  # not damage: no store there, or it cannot be opened
        typer.echo(f"error: {' '.join(str(exc).split())}", err=True)
        raise typer.Exit(EXIT_INVALID) from None
    if not result.ok:
        typer.echo(f"error: the store is damaged: {' '.join(result.detail.split())}", err=True)
        raise typer.Exit(EXIT_INVALID)
    typer.echo(f"ok: {result.detail}")
