"""``windowkeeper sessions diff ID`` and ``sessions undo ID`` (issue 26).

``diff`` names every message a compaction replaced, the archive handles that hold it and
the handoff it wrote; ``undo`` takes the newest compaction back from the archive.
Registered on :data:`~windowkeeper.cli.sessions.sessions_app`; errors are one line.
"""

from __future__ import annotations

from typing import Annotated

import typer

from ..store import compaction_diff
from ..summary.redact import redact
from .sessions import RevealOpt, SessionArg, StoreOpt, opened, preview, sessions_app

__all__ = ["diff", "undo"]


@sessions_app.command("diff")
def diff(
    session_id: SessionArg,
    store: StoreOpt = None,
    compaction: Annotated[
        int | None,
        typer.Option(
            "--compaction", min=1, help="Which compaction (1 = the first; default: the newest)."
        ),
    ] = None,
    reveal: RevealOpt = False,
) -> None:
    """What a compaction replaced: each message, its archive handles, and the handoff.

    Secrets are masked unless --reveal."""
    with opened(store) as opened_store:
        shown = compaction_diff(opened_store, session_id, compaction)
    record = shown.record
    state = " (undone)" if record.undone_at is not None else ""
    typer.echo(f"compaction {shown.number} of session {session_id}, generation "
               f"{record.generation}{state}: {len(shown.replaced)} messages replaced by "
               f"{len(shown.written)}")  # fmt: skip
    for item in shown.replaced:
        role = str(item.message.get("role", "?"))
        handles = ",".join(item.handles) or "kept"
        typer.echo(f"- {item.seq:>6} {role:<9} [{handles}] {preview(item.message, reveal)}")
    if shown.handoff is not None:
        typer.echo("handoff:")
        typer.echo(shown.handoff if reveal else redact(shown.handoff))
    else:
        typer.echo("no handoff (tool output pruned only); written:")
        for message in shown.written:
            typer.echo(f"+ {preview(message, reveal)}")


@sessions_app.command("undo")
def undo(session_id: SessionArg, store: StoreOpt = None) -> None:
    """Take back the session's newest compaction.

    The history from before it (and what was appended since) becomes active again, with
    its guard state; automatic compaction then waits until the history no longer fits."""
    with opened(store) as opened_store:
        outcome = opened_store.undo(session_id)
    if not outcome.undone:
        typer.echo(f"session {session_id} was started by a rotation; the history from "
                   f"before it is session {outcome.session_id} "
                   f"(windowkeeper sessions export {outcome.session_id})")  # fmt: skip
        return
    typer.echo(f"undid compaction of generation {outcome.generation} in session "
               f"{session_id}: {outcome.restored} messages restored; automatic compaction "
               "waits until the history no longer fits the window")  # fmt: skip
