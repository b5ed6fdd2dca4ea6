"""``windowkeeper mcp``: recall and search over the archive, through the SDK's stdio client.

A recorded session is driven turn by turn through a stored session: before every model
call the active messages are compacted in the store when they reach the trigger, and
every original a compaction archived is fetched back through a real ``windowkeeper mcp``
subprocess (the official ``mcp`` client over stdio), page by page, and compared with the
original message.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from driving import SESSION_PARAMS, Watch, load
from mcp import ClientSession, types
from mcp.client.stdio import StdioServerParameters, stdio_client

from windowkeeper.core.messages import message_text
from windowkeeper.core.report import ArchivedItem
from windowkeeper.engine.compressor import ContextCompressor
from windowkeeper.integrations.mcp import ArchiveTools
from windowkeeper.store import open_store
from windowkeeper.store.session import compact_session


@asynccontextmanager
async def mcp_client(*args: str) -> AsyncIterator[ClientSession]:
    # The whole environment: the stdio client forwards only HOME, PATH and a few more, and
    # PYTHONPATH must reach the server so that it runs the code under test.
    server = StdioServerParameters(
        command=sys.executable, args=["-m", "windowkeeper", "mcp", *args], env=dict(os.environ)
    )
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def text_of(result: Any) -> str:
    assert isinstance(result, types.CallToolResult) and not result.is_error, result
    return "".join(c.text for c in result.content if isinstance(c, types.TextContent))


async def recall_all(session: ClientSession, handle: str) -> str:
    """The whole original, following the continuation notes offset by offset."""
    parts, offset = [], 0
    while True:
        answer = text_of(await session.call_tool("recall", {"handle": handle, "offset": offset}))
        header, _, body = answer.partition("\n")
        assert header.startswith(f"[archived {handle}")
        more = re.search(r"call recall with (\{.*?\}) for the next part\]$", body)
        if more is None:
            parts.append(body)
            return "".join(parts)
        parts.append(body[: more.start()].rsplit("\n[truncated:", 1)[0])
        offset = json.loads(more.group(1))["offset"]


def drive(url: str, name: str) -> tuple[Watch, list[ArchivedItem], int, str]:
    """The session through a stored session, compacted in the store at the trigger."""
    session = load(name)
    compressor = ContextCompressor(context_length=session.context_length, tools=session.tools)
    watch = Watch(session.context_length, session.tools)
    archived: list[ArchivedItem] = []
    compactions = 0
    with open_store(url) as store:
        first = [{"role": "system", "content": session.system}] if session.system else []
        sid = store.create_session(first, title=name).id
        for turn in session.turns:
            store.append_messages(sid, [turn.user])
            for response in turn.responses:
                request = store.load(sid).messages
                if watch.estimate(request) >= compressor.threshold_tokens:
                    done = compact_session(store, sid, compressor)
                    if done.result.report.compressed:
                        compactions += 1
                        archived += done.result.archived
                    request = store.load(sid).messages
                watch.see(request)
                results = [
                    {"role": "tool", "tool_call_id": c["id"], "content": session.results[c["id"]]}
                    for c in response.get("tool_calls") or []
                ]
                store.append_messages(sid, [response, *results])
    return watch, archived, compactions, sid


@pytest.mark.parametrize("name", SESSION_PARAMS)
def test_a_long_session_is_compacted_in_the_store_and_recalled_over_mcp(
    tmp_path: Path, name: str
) -> None:
    url = f"sqlite:///{tmp_path / 'sessions.db'}"
    watch, archived, compactions, sid = drive(url, name)
    assert compactions >= 1 and archived
    assert len(watch.prefix_breaks()) == compactions  # each compaction persisted in the store
    tools = [t for t in archived if t.kind == "tool_output"]
    assert tools

    async def check() -> None:
        async with mcp_client("--store", url, "--max-chars", "2000") as session:
            listed = await session.list_tools()
            assert {t.name for t in listed.tools} == {"recall", "search"}
            for item in tools:
                original = message_text(item.message)
                assert original in await recall_all(session, item.handle)
            word = max(message_text(tools[0].message).split(), key=len)
            found = text_of(await session.call_tool("search", {"query": word, "limit": 20}))
            assert tools[0].handle in found or "more hit(s)" in found
            missing = await session.call_tool("recall", {"handle": "wk000000000000"})
            assert missing.is_error  # a failed call says so, not only in its words
            assert "no archived item" in "".join(
                c.text for c in missing.content if isinstance(c, types.TextContent)
            )

        async with mcp_client("--store", url, "--session", sid) as session:
            answer = text_of(await session.call_tool("recall", {"handle": tools[-1].handle}))
            assert answer.startswith(f"[archived {tools[-1].handle}")

    anyio.run(check)


def test_the_tools_scope_to_a_session_and_bound_their_answers(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'sessions.db'}"
    _, archived, _, sid = drive(url, "synthetic")
    with open_store(url) as store:
        other = store.create_session([{"role": "user", "content": "other"}]).id
        scoped = ArchiveTools(store, session_id=other, max_chars=500)
        assert "no archived item" in scoped.recall(archived[0].handle)
        everywhere = ArchiveTools(store, max_chars=500)
        answer = everywhere.recall(archived[0].handle)
        assert len(answer) <= 500 + 200 and answer.startswith("[archived ")
        assert (
            ArchiveTools(store, session_id=sid)
            .search("zzzz-no-such-word")
            .startswith("no archived")
        )


def test_mcp_command_errors_are_one_line(tmp_path: Path) -> None:
    import subprocess

    bad = subprocess.run(
        [sys.executable, "-m", "windowkeeper", "mcp", "--store", "nosuch://x"],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert bad.returncode == 2
    assert bad.stderr.startswith("error: unsupported store URL") and bad.stdout == ""
    url = f"sqlite:///{tmp_path / 's.db'}"
    missing = subprocess.run(
        [sys.executable, "-m", "windowkeeper", "mcp", "--store", url],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    # A wrong path is an error, and creates no store (it used to serve an empty one).
    assert missing.returncode == 2 and missing.stdout == ""
    assert (
        missing.stderr
        == f"error: no store at {tmp_path / 's.db'} (nothing has been stored there yet)\n"
    )
    assert list(tmp_path.iterdir()) == []
    open_store(url).close()
    unknown = subprocess.run(
        [sys.executable, "-m", "windowkeeper", "mcp", "--store", url, "--session", "nope"],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert unknown.returncode == 2 and "unknown session" in unknown.stderr


def test_sessions_recall_prints_the_archived_original(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from windowkeeper.cli import app as cli

    url = f"sqlite:///{tmp_path / 'sessions.db'}"
    _, archived, _, sid = drive(url, "synthetic")
    item = next(a for a in archived if a.kind == "tool_output")
    runner = CliRunner()
    printed = runner.invoke(cli.app, ["sessions", "recall", item.handle, "--store", url])
    assert printed.exit_code == 0, printed.output
    assert message_text(item.message) in printed.stdout
    scoped = runner.invoke(
        cli.app, ["sessions", "recall", item.handle, "--store", url, "--session", sid]
    )
    assert scoped.stdout == printed.stdout
    unknown = runner.invoke(cli.app, ["sessions", "recall", "wk000000000000", "--store", url])
    assert unknown.exit_code == 2 and unknown.stderr.startswith("error: no archived item")
