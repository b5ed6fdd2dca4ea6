"""``windowkeeper mcp`` on a hostile wire: every request with an id gets a JSON-RPC reply.

The table is sent to a real ``windowkeeper mcp`` subprocess after a normal handshake; the
property test runs :func:`triage` (the layer in front of the SDK) over arbitrary lines.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections import Counter
from importlib.metadata import version
from pathlib import Path
from typing import Any

import anyio
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from windowkeeper.integrations.mcpwire import INVALID_REQUEST, PARSE_ERROR, Verdict, triage
from windowkeeper.store import open_store

_INIT = {"jsonrpc": "2.0", "id": "init", "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"}}}  # fmt: skip
_INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}

# (line, the id a reply must carry, the error code it must have; None: no error code
# asked, a result is fine; "none": no reply at all, a notification).
Case = tuple[str, Any, Any]
_CALL = '{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":%s}'
MALFORMED: list[Case] = [
    ("hello", None, PARSE_ERROR),
    ("{", None, PARSE_ERROR),
    ('{"jsonrpc":"2.0","id":1,', None, PARSE_ERROR),
    ("[" * 5000 + "]" * 5000, None, PARSE_ERROR),
    ('{"jsonrpc":"2.0","id":2,"method":"ping"}garbage', None, PARSE_ERROR),
    ("\x00\x01", None, PARSE_ERROR),
    ("[]", None, INVALID_REQUEST),
    ('[{"jsonrpc":"2.0","id":3,"method":"ping"}]', None, INVALID_REQUEST),
    ("42", None, INVALID_REQUEST),
    ('"text"', None, INVALID_REQUEST),
    ("null", None, INVALID_REQUEST),
    ("{}", None, INVALID_REQUEST),
    ('{"jsonrpc":"2.0","id":5}', 5, INVALID_REQUEST),
    ('{"jsonrpc":"1.0","id":6,"method":"ping"}', 6, INVALID_REQUEST),
    ('{"id":7,"method":"ping"}', 7, INVALID_REQUEST),
    ('{"jsonrpc":"2.0","id":8,"method":42}', 8, INVALID_REQUEST),
    ('{"jsonrpc":"2.0","id":9,"method":null}', 9, INVALID_REQUEST),
    (_CALL % (10, '"x"'), 10, INVALID_REQUEST),
    (_CALL % (11, "[1,2]"), 11, INVALID_REQUEST),
    (_CALL % (12, "7"), 12, INVALID_REQUEST),
    ('{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}', None, INVALID_REQUEST),
    ('{"jsonrpc":"2.0","id":[1],"method":"ping"}', None, INVALID_REQUEST),
    ('{"jsonrpc":"2.0","id":"s14","method":"no/such"}', "s14", None),
    (_CALL % (15, "{}"), 15, None),
    (_CALL % (16, '{"name":"nosuch","arguments":{}}'), 16, None),
    (_CALL % (17, '{"name":"search","arguments":{"limit":"many"}}'), 17, None),
    (_CALL % (18, '{"name":"recall","arguments":{"handle":7}}'), 18, None),
    (_CALL % (19, '{"name":"search","arguments":{"query":"\\ud800"}}'), 19, None),
    (_CALL % (20, '{"name":"recall","arguments":{"handle":"\\udfff"}}'), 20, None),
    (
        _CALL % (21, '{"name":"search","arguments":' + '{"q":' * 3000 + "1" + "}" * 3000 + "}"),
        None,
        PARSE_ERROR,
    ),
    ('{"jsonrpc":"2.0","id":22,"method":"tools/list","params":{"cursor":5}}', 22, None),
    ('{"jsonrpc":"2.0","id":"\\ud800x","method":"ping"}', "?x", None),
    ('{"jsonrpc":"2.0","method":"notifications/initialized","params":"x"}', "none", None),
    ('{"jsonrpc":"2.0","method":"notifications/cancelled","params":{}}', "none", None),
    ("", "none", None),
    ('{"jsonrpc":"2.0","id":25,"method":"ping","params":null}', 25, None),
]


def _store(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'wk.db'}"
    with open_store(url) as store:
        store.create_session([{"role": "user", "content": "hi"}])
    return url


def _replies(url: str, lines: list[str], expected: int) -> list[dict[str, Any]]:
    """Send ``lines`` to a real server and read ``expected`` replies, stdin left open
    meanwhile (at end of input the server stops, and may cancel calls in flight)."""
    server = subprocess.Popen(
        [sys.executable, "-m", "windowkeeper", "mcp", "--store", url],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    watchdog = threading.Timer(120, server.kill)  # a missing reply fails, never hangs
    watchdog.start()
    try:
        assert server.stdin is not None and server.stdout is not None
        server.stdin.write("\n".join(lines) + "\n")
        server.stdin.flush()
        replies = []
        while len(replies) < expected and (line := server.stdout.readline()):
            replies.append(json.loads(line))
        server.stdin.close()
        extra = [json.loads(line) for line in server.stdout.read().splitlines()]
        server.wait(timeout=60)
    finally:
        watchdog.cancel()
        server.kill()
        for stream in (server.stdin, server.stdout):
            if stream is not None:
                stream.close()
    return replies + extra


def test_every_malformed_request_with_an_id_is_answered(tmp_path: Path) -> None:
    owed = [case for case in MALFORMED if case[1] != "none"]
    lines = [json.dumps(_INIT), json.dumps(_INITIALIZED)] + [line for line, _, _ in MALFORMED]
    replies = _replies(_store(tmp_path), lines, len(owed) + 1)
    assert len(MALFORMED) >= 30 and len(owed) == 33
    assert replies[0]["id"] == "init" and "result" in replies[0]
    got = replies[1:]
    # Replies come in the order calls finish: compare what was owed with what came, as
    # (id, error code) pairs; a case that asks for no code may be a result or any error.
    coded = Counter((repr(i), c) for _, i, c in owed if c is not None)
    assert Counter((repr(r["id"]), r.get("error", {}).get("code")) for r in got) >= coded
    assert Counter(repr(r["id"]) for r in got) == Counter(repr(i) for _, i, _ in owed)
    assert all("result" in r or r["error"]["message"] for r in got)


def test_tool_errors_set_is_error_and_the_server_reports_its_version(tmp_path: Path) -> None:
    url = _store(tmp_path)

    async def check() -> None:
        server = StdioServerParameters(  # the whole environment: PYTHONPATH included
            command=sys.executable,
            args=["-m", "windowkeeper", "mcp", "--store", url],
            env=dict(os.environ),
        )
        async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
            hello = await session.initialize()
            assert hello.server_info.name == "windowkeeper"
            assert hello.server_info.version == version("windowkeeper")
            failed = await session.call_tool("recall", {"handle": "wk000000000000"})
            assert failed.is_error
            found = await session.call_tool("search", {"query": "zzzz"})
            assert not found.is_error

    anyio.run(check)


_ids = st.one_of(st.integers(), st.text(max_size=8), st.none(), st.booleans(), st.floats())
_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                max_size=3),
    max_leaves=10,
)  # fmt: skip
_messages = st.fixed_dictionaries(
    {},
    optional={"jsonrpc": st.sampled_from(["2.0", "1.0", 2]), "id": _ids,
              "method": st.sampled_from(["ping", "tools/call", "initialize", 3]) | st.text(),
              "params": _values, "result": _values, "error": _values},
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(message=_messages)
def test_triage_owes_a_reply_to_every_request_with_an_id(message: dict[str, Any]) -> None:
    verdict = triage(json.dumps(message))
    if verdict.verdict is Verdict.FORWARD:  # the SDK answers a valid request itself
        assert json.loads(verdict.line) is not None
    elif verdict.verdict is Verdict.IGNORE:
        assert "id" not in message and "method" in message  # only notifications
    else:
        reply = json.loads(verdict.line)
        assert reply["error"]["code"] == INVALID_REQUEST
        usable = isinstance(message.get("id"), str | int) and not isinstance(
            message.get("id"), bool
        )
        assert reply["id"] == (message["id"] if usable else None)


@settings(max_examples=300, deadline=None)
@given(line=st.text(max_size=40))
def test_triage_answers_any_text(line: str) -> None:
    verdict = triage(line)
    if verdict.verdict is Verdict.REPLY:
        assert json.loads(verdict.line)["error"]["code"] in (PARSE_ERROR, INVALID_REQUEST)
    elif verdict.verdict is Verdict.IGNORE:
        assert not line.strip() or "method" in json.loads(line)
