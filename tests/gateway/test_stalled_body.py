"""A request body that stops arriving is answered 408 (issue 23, design §8), against the
gateway under a real uvicorn on loopback: uvicorn itself times out only idle keep-alive
connections, so without the gateway's own timeout a client could hold a request open
forever with half a body. What must not count against the client: slow but steady
bytes, and time in which the gateway is not reading (uvicorn then stops reading too)."""

from __future__ import annotations

import asyncio
import json
import socket
from typing import Any

import httpx
import pytest
from serving import MODEL, loopback_settings, running

from windowkeeper.gateway import create_app
from windowkeeper.testing.loopback import LoopbackUpstream, Reply

TIMEOUT = 1.0
"""The body timeout of these tests (seconds); the socket waits are far longer."""


def _request(path: str, body: bytes, extra: str = "") -> tuple[bytes, bytes]:
    head = (f"POST {path} HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n{extra}\r\n").encode()  # fmt: skip
    return head, body


def _read_all(sock: socket.socket) -> bytes:
    """Everything until the server closes (a socket timeout fails the test)."""
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


def _split(response: bytes) -> tuple[int, dict[str, str], bytes]:
    head, _, body = response.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.lower().split(": ", 1) for line in lines[1:])
    return int(lines[0].split()[1]), headers, body


def _chat(text: str) -> bytes:
    return json.dumps({"model": MODEL, "messages": [{"role": "user", "content": text}]}).encode()


@pytest.mark.parametrize("http", ["httptools", "h11"])
@pytest.mark.parametrize(
    ("path", "extra"),
    [("/v1/chat/completions", ""), ("/v1/messages", "anthropic-version: 2023-06-01\r\n")],
)
def test_a_body_that_stops_after_10_of_100_bytes_gets_408_and_a_close(
    loopback: LoopbackUpstream, http: str, path: str, extra: str
) -> None:
    settings = loopback_settings(loopback, body_timeout=TIMEOUT)
    head, body = _request(path, b"x" * 100, extra)
    with running(create_app(settings), http=http, lifespan="on") as base:
        port = int(base.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=15) as sock:
            sock.sendall(head + body[:10])
            status, headers, reply = _split(_read_all(sock))  # the server closes
    assert status == 408 and headers["connection"] == "close"
    error = json.loads(reply)
    if path == "/v1/messages":
        assert error["type"] == "error"
        message = error["error"]["message"]
    else:
        message = error["error"]["message"]
        assert error["error"]["code"] == "request_timeout"
    assert "stopped arriving" in message and "body_timeout_seconds" in message
    assert "Traceback" not in reply.decode()
    assert loopback.model_requests() == []


def test_a_slow_but_steady_body_arrives_whole(loopback: LoopbackUpstream) -> None:
    """Pauses shorter than the timeout add up to more than it (20 bytes every 0.45 s)."""
    loopback.script(Reply.turn("whole"))
    text = "0123456789" * 8
    head, body = _request("/v1/chat/completions", _chat(text), "Connection: close\r\n")
    settings = loopback_settings(loopback, body_timeout=TIMEOUT)
    with running(create_app(settings), lifespan="on") as base:
        port = int(base.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=15) as sock:
            sock.sendall(head)
            pieces = [body[at : at + 20] for at in range(0, len(body), 20)]
            for piece in pieces[:-1]:
                sock.sendall(piece)
                sock.settimeout(0.45)  # wait between pieces, and see no early answer
                with pytest.raises(TimeoutError):
                    sock.recv(1)
            sock.settimeout(15)
            sock.sendall(pieces[-1])
            status, _, reply = _split(_read_all(sock))
    assert (len(pieces) - 1) * 0.45 > 2 * TIMEOUT
    assert status == 200, reply
    assert json.loads(reply)["choices"][0]["message"]["content"] == "whole"
    [sent] = loopback.model_requests()
    assert sent.body["messages"] == [{"role": "user", "content": text}]


def _late(app: Any, seconds: float) -> Any:
    """``app`` that starts ``seconds`` late (busy elsewhere, its request's body unread)."""

    async def wrapped(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            await asyncio.sleep(seconds)
        await app(scope, receive, send)

    return wrapped


def test_a_large_body_the_app_reads_late_arrives_whole(loopback: LoopbackUpstream) -> None:
    """2 MiB (uvicorn buffers 64 KiB, then stops reading): the gateway starts reading
    2.5 s late, longer than the timeout; the client is not the slow one."""
    loopback.script(Reply.turn("late but whole"))
    text = "y" * (2 * 1024 * 1024)
    settings = loopback_settings(loopback, body_timeout=TIMEOUT)
    with running(_late(create_app(settings), 2.5), lifespan="on") as base:
        reply = httpx.post(base + "/v1/chat/completions", content=_chat(text), timeout=60)
    assert reply.status_code == 200, reply.text
    [sent] = loopback.model_requests()
    assert sent.body["messages"][0]["content"] == text
