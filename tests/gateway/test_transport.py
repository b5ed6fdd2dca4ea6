"""The gateway's transport on the stack ``windowkeeper serve`` runs: uvicorn with httptools
(on asyncio and, where installed, uvloop) in front, httpx to the upstream. What the deleted
hand-written server and client guarded, now against the real parts: the same answers on
either event loop, upstream timeouts and hang-ups mapped to 504/502 in the protocol's
shape, a mid-stream cut reported in-band, a declared oversize body refused before it is
sent, a WebSocket attempt refused without harm."""

from __future__ import annotations

import importlib.util
import json
import socket
from typing import Any

import httpx
import pytest
from serving import MODEL, loopback_settings, serving

from windowkeeper.testing.loopback import LoopbackUpstream, Reply

LOOPS = [
    "asyncio",
    pytest.param(
        "uvloop",
        marks=pytest.mark.skipif(
            importlib.util.find_spec("uvloop") is None, reason="uvloop is not installed"
        ),
    ),
]
CHAT = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}
MESSAGES = {"model": MODEL, "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}
ANTHROPIC = {"anthropic-version": "2023-06-01"}


def _exchanges(base: str) -> list[Any]:
    """Plain, streamed and Messages answers, as a client sees them (ids left out)."""
    with httpx.Client(base_url=base, timeout=30) as client:
        plain = client.post("/v1/chat/completions", json=CHAT)
        streamed = client.post("/v1/chat/completions", json={**CHAT, "stream": True})
        messages = client.post("/v1/messages", json=MESSAGES, headers=ANTHROPIC)
    events = [json.loads(line[6:]) for line in streamed.text.splitlines()
              if line.startswith("data: {")]  # fmt: skip
    deltas = "".join(e["choices"][0]["delta"].get("content") or "" for e in events if e["choices"])
    return [
        (plain.status_code, plain.json()["choices"][0]["message"]["content"]),
        (streamed.status_code, streamed.headers["content-type"].split(";")[0], deltas),
        (messages.status_code, messages.json()["content"][0]["text"]),
    ]


@pytest.mark.parametrize("loop", LOOPS)
def test_either_event_loop_gives_the_same_answers(loopback: LoopbackUpstream, loop: str) -> None:
    loopback.script(Reply.turn("plain"), Reply.turn("streamed answer"), Reply.turn("claude"))
    with serving(loopback_settings(loopback), loop=loop) as base:
        seen = _exchanges(base)
    assert seen == [
        (200, "plain"),
        (200, "text/event-stream", "streamed answer"),
        (200, "claude"),
    ]
    sent = loopback.model_requests()
    assert [r.body["messages"] for r in sent] == [CHAT["messages"]] * 3


def _error_message(response: httpx.Response, status: int) -> str:
    assert response.status_code == status, response.text
    assert "Traceback" not in response.text
    message = response.json()["error"]["message"]
    assert isinstance(message, str)
    return message


def test_an_upstream_that_stalls_is_504(loopback: LoopbackUpstream) -> None:
    loopback.script(Reply.delay(3.0), Reply.delay(3.0, Reply.turn("late", chunks=1)))
    settings = loopback_settings(loopback, timeout=0.3)
    with serving(settings) as base, httpx.Client(base_url=base, timeout=30) as client:
        chat = client.post("/v1/chat/completions", json=CHAT)
        messages = client.post("/v1/messages", json=MESSAGES, headers=ANTHROPIC)
    assert "timed out (" in _error_message(chat, 504)
    assert messages.json()["type"] == "error"
    assert "timed out" in _error_message(messages, 504)


def test_an_upstream_that_hangs_up_or_is_gone_is_502(loopback: LoopbackUpstream) -> None:
    loopback.script(Reply.close())
    with socket.socket() as free:  # a port nothing listens on
        free.bind(("127.0.0.1", 0))
        gone = f"http://127.0.0.1:{free.getsockname()[1]}/v1"
    with serving(loopback_settings(loopback)) as base, httpx.Client(base_url=base) as client:
        hung_up = client.post("/v1/chat/completions", json=CHAT)
    with serving(loopback_settings(loopback, upstream_base_url=gone)) as base:
        refused = httpx.post(base + "/v1/chat/completions", json=CHAT)
    assert "cannot reach the upstream" in _error_message(hung_up, 502)
    assert "cannot reach the upstream" in _error_message(refused, 502)


def test_a_stream_cut_midway_ends_with_an_error_event(loopback: LoopbackUpstream) -> None:
    loopback.script(Reply.turn("one two three four", cut_after=1, chunks=4))
    with serving(loopback_settings(loopback)) as base:
        cut = httpx.post(base + "/v1/chat/completions", json={**CHAT, "stream": True})
    assert cut.status_code == 200
    last = json.loads(cut.text.strip().splitlines()[-1].removeprefix("data: "))
    assert last["error"]["code"] == "bad_gateway"
    assert "Traceback" not in cut.text


def test_a_declared_oversize_body_is_refused_before_it_is_sent(
    loopback: LoopbackUpstream,
) -> None:
    limit = 4096
    head = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json"
            f"\r\nContent-Length: {limit + 1}\r\n\r\n").encode()  # fmt: skip
    with serving(loopback_settings(loopback, max_body_bytes=limit)) as base:
        port = int(base.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
            conn.sendall(head)  # and not one byte of the body
            answer = _whole_answer(conn)
    status_line, _, rest = answer.partition(b"\r\n")
    assert status_line == b"HTTP/1.1 413 Request Entity Too Large"
    assert b"4,096-byte limit" in rest
    assert loopback.model_requests() == []


def _whole_answer(conn: socket.socket) -> bytes:
    """The status, headers and the ``content-length`` bytes of body (the server writes the
    head and the body separately: one ``recv`` may return before the body arrived)."""
    answer = b""
    while b"\r\n\r\n" not in answer or len(answer.partition(b"\r\n\r\n")[2]) < _length(answer):
        chunk = conn.recv(65536)
        if not chunk:
            break
        answer += chunk
    return answer


def _length(answer: bytes) -> int:
    for line in answer.partition(b"\r\n\r\n")[0].split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value.strip())
    return 0


@pytest.mark.parametrize("loop", LOOPS)
def test_a_websocket_attempt_is_refused_and_serving_goes_on(
    loopback: LoopbackUpstream, loop: str
) -> None:
    from websockets.exceptions import InvalidStatus
    from websockets.sync.client import connect

    loopback.script(Reply.turn("still here"))
    with serving(loopback_settings(loopback), loop=loop) as base:
        with pytest.raises(InvalidStatus) as refused:
            connect(base.replace("http://", "ws://") + "/v1/responses", open_timeout=10)
        after = httpx.post(base + "/v1/chat/completions", json=CHAT, timeout=30)
    # 426 is the refusal Codex falls back from at once (tests/e2e/test_codex.py).
    assert refused.value.response.status_code == 426
    assert after.json()["choices"][0]["message"]["content"] == "still here"
