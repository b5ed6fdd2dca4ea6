"""``windowkeeper mcp --store URL``: the archive's ``recall`` and ``search`` as an MCP
server over stdio (needs the ``mcp`` extra).

Everything comes from the arguments: an MCP client starts the server with only a few
environment variables. Nothing but the protocol is written to stdout; a bad store or a
missing extra is one ``error:`` line on stderr and exit code 2.
"""

from __future__ import annotations

from typing import Annotated

import typer

from ..core.errors import WindowkeeperError
from ..store import open_store
from ..store.recall import DEFAULT_MAX_CHARS
from .sessions import StoreOpt

EXIT_INVALID = 2


def mcp_command(
    store: StoreOpt = None,
    session: Annotated[
        str | None,
        typer.Option(
            "--session", metavar="ID", help="Only this session (and its ancestors); else all."
        ),
    ] = None,
    max_chars: Annotated[
        int, typer.Option("--max-chars", min=500, help="Longest answer of one tool call.")
    ] = DEFAULT_MAX_CHARS,
) -> None:
    """Serve the session archive to MCP clients over stdio: tools recall and search."""
    try:
        from ..integrations.mcp import serve_stdio
    except ImportError:
        typer.echo(
            "error: windowkeeper mcp needs the mcp extra: pip install 'windowkeeper[mcp]'",
            err=True,
        )
        raise typer.Exit(EXIT_INVALID) from None
    try:
        opened = open_store(store, read_only=True)  # a wrong path is an error, not a store
        if session is not None:
            opened.get_session(session)  # an unknown session is an error now, not per call
    except WindowkeeperError as exc:
        typer.echo(f"error: {' '.join(str(exc).split())}", err=True)
        raise typer.Exit(EXIT_INVALID) from None
    with opened:
        serve_stdio(opened, session_id=session, max_chars=max_chars)
