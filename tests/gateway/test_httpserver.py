"""The gateway's own HTTP/1.1 protocol (gateway/httpserver.py) under a real uvicorn server
on loopback, spoken to with raw sockets and read back with h11 (an independent parser):
framing of requests and responses, keep-alive, pipelining, 100-continue, refusals of
ambiguous or malformed requests, timeouts, and hostile bytes."""

from __future__ import annotations

import asyncio
import hashlib
import json
import socket
import time
from collections.abc import Iterator
from typing import Any

import h11
import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from serving import running

DISCONNECTS: list[str] = []


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """An echo app with a route per behaviour under test."""
    path = scope["path"]
    if path == "/noread":
        return await _answer(send, 200, b"not read")
    if path == "/boom":
        raise ValueError("a bug before the response")
    if path in ("/stream", "/late-boom", "/short", "/bad-header", "/wait"):
        return await _special(path, receive, send)
    if path == "/slow-reader":
        await asyncio.sleep(2.5)  # longer than the keep-alive timeout, before any read
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    report = {"method": scope["method"], "path": path, "raw_path": scope["raw_path"].decode(),
              "query": scope["query_string"].decode(), "length": len(body),
              "sha": hashlib.sha256(body).hexdigest(), "version": scope["http_version"],
              "headers": [[k.decode(), v.decode("latin-1")] for k, v in scope["headers"]],
              }  # fmt: skip
    await _answer(send, 200, json.dumps(report).encode())


async def _answer(send: Any, status: int, body: bytes) -> None:
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _special(path: str, receive: Any, send: Any) -> None:
    if path == "/bad-header":
        headers = [(b"x-evil", b"a\r\nset-cookie: x=1")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        return
    length = [(b"content-length", b"10")] if path == "/short" else []
    await send({"type": "http.response.start", "status": 200, "headers": length})
    if path == "/wait":
        await send({"type": "http.response.body", "body": b"first", "more_body": True})
        while (await receive())["type"] != "http.disconnect":
            pass
        DISCONNECTS.append(path)
        return
    for part in (b"one,", b"two,", b"three"):
        await send({"type": "http.response.body", "body": part, "more_body": True})
        if path == "/late-boom":
            raise ValueError("a bug in the middle of a response")
    await send({"type": "http.response.body", "body": b"" if path == "/stream" else b"!"})


@pytest.fixture(scope="module")
def port() -> Iterator[int]:
    with running(app, timeout_keep_alive=1) as base:
        yield int(base.rsplit(":", 1)[1])


def talk(port: int, data: bytes, wait: float = 3.0) -> tuple[bytes, bool]:
    """Send ``data``, read until the server closes or ``wait`` passes: (bytes, closed)."""
    with socket.create_connection(("127.0.0.1", port), timeout=wait) as sock:
        sock.sendall(data)
        received = b""
        try:
            while chunk := sock.recv(65536):
                received += chunk
        except TimeoutError:
            return received, False
        return received, True


def responses(
    data: bytes, methods: tuple[bytes, ...] = ()
) -> list[tuple[int, dict[str, str], bytes]]:
    """The complete responses in ``data``, parsed by h11 as a client would (the i-th
    answering a request of ``methods[i]``, else GET)."""
    out: list[tuple[int, dict[str, str], bytes]] = []
    if not data:
        return out  # (h11 would read empty data as the end of the stream)
    conn = h11.Connection(h11.CLIENT)
    conn.receive_data(data)
    while True:
        method = methods[len(out)] if len(out) < len(methods) else b"GET"
        conn.send(h11.Request(method=method, target="/", headers=[("host", "x")]))
        conn.send(h11.EndOfMessage())
        event = conn.next_event()
        if event is h11.NEED_DATA or isinstance(event, h11.ConnectionClosed):
            return out
        while isinstance(event, h11.InformationalResponse):
            event = conn.next_event()
        assert isinstance(event, h11.Response)
        body = b""
        while not isinstance(part := conn.next_event(), h11.EndOfMessage):
            assert isinstance(part, h11.Data), part
            body += part.data
        headers = {k.decode(): v.decode() for k, v in event.headers}
        out.append((event.status_code, headers, body))
        if conn.our_state is h11.MUST_CLOSE or conn.their_state is h11.MUST_CLOSE:
            return out
        conn.start_next_cycle()


def post(path: str, body: bytes, *extra: bytes) -> bytes:
    head = [b"POST " + path.encode() + b" HTTP/1.1", b"Host: x",
            b"Content-Length: %d" % len(body), *extra]  # fmt: skip
    return b"\r\n".join(head) + b"\r\n\r\n" + body


def test_content_length_bodies_on_one_kept_alive_connection(port: int) -> None:
    data, closed = talk(port, post("/a?x=1", b"hello") + post("/b%20c", b"world!"), wait=0.5)
    (s1, h1, b1), (s2, _, b2) = responses(data)
    assert not closed and s1 == s2 == 200 and "connection" not in h1
    first, second = json.loads(b1), json.loads(b2)
    assert (first["path"], first["query"], first["length"]) == ("/a", "x=1", 5)
    assert (second["path"], second["raw_path"], second["length"]) == ("/b c", "/b%20c", 6)
    assert first["sha"] == hashlib.sha256(b"hello").hexdigest()


def test_chunked_request_body_with_extensions_and_trailers(port: int) -> None:
    head = b"POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    body = b"5;name=value\r\nhello\r\n1\r\n \r\n6\r\nworld!\r\n0\r\nx-trailer: 1\r\n\r\n"
    data, _ = talk(port, head + body + post("/next", b""), wait=0.5)
    (s1, _, b1), (s2, _, b2) = responses(data)
    assert s1 == s2 == 200
    assert json.loads(b1)["sha"] == hashlib.sha256(b"hello world!").hexdigest()
    assert json.loads(b2)["path"] == "/next"


def test_a_large_body_arrives_whole_through_pauses() -> None:
    body = bytes(range(256)) * (6 * 1024 * 1024 // 256)  # 6 MiB: several pauses at 1 MiB
    with running(app) as base:
        reply = httpx.post(base + "/big", content=body, timeout=30).json()
        streamed = httpx.post(base + "/big", content=iter([body[:100], body[100:]]), timeout=30)
    assert reply["length"] == len(body) and reply["sha"] == hashlib.sha256(body).hexdigest()
    assert streamed.json()["sha"] == reply["sha"]  # an iterator body goes out chunked


def test_expect_100_continue_is_answered_before_the_body_is_sent(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=3) as sock:
        sock.sendall(b"POST /e HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n"
                     b"Expect: 100-continue\r\n\r\n")  # fmt: skip
        assert sock.recv(65536) == b"HTTP/1.1 100 Continue\r\n\r\n"
        sock.sendall(b"abc")
        data = sock.recv(65536)
    assert json.loads(responses(data)[0][2])["length"] == 3


@pytest.mark.parametrize(
    ("request_bytes", "closed"),
    [
        (b"GET /h HTTP/1.0\r\n\r\n", True),
        (b"GET /h HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", True),
        (b"\r\n\r\nGET /h HTTP/1.1\r\nHost: x\r\n\r\n", False),  # blank lines first: ignored
        (b"GET http://example.com/h?q=1 HTTP/1.1\r\nHost: example.com\r\n\r\n", False),
    ],
)
def test_connection_reuse_follows_the_request(
    port: int, request_bytes: bytes, closed: bool
) -> None:
    data, was_closed = talk(port, request_bytes, wait=0.5)
    ((status, headers, body),) = responses(data)
    assert status == 200 and json.loads(body)["path"] == "/h" and was_closed is closed
    assert (headers.get("connection") == "close") is closed


def test_streamed_responses_are_chunked_or_close_delimited(port: int) -> None:
    data, closed = talk(port, b"GET /stream HTTP/1.1\r\nHost: x\r\n\r\n", wait=0.5)
    ((status, headers, body),) = responses(data)
    assert (status, headers["transfer-encoding"], closed) == (200, "chunked", False)
    assert body == b"one,two,three"
    data, closed = talk(port, b"GET /stream HTTP/1.0\r\n\r\n")
    assert closed and data.endswith(b"\r\n\r\none,two,three") and b"transfer-encoding" not in data


def test_head_gets_headers_and_no_body(port: int) -> None:
    data, _ = talk(port, b"HEAD /h HTTP/1.1\r\nHost: x\r\n\r\n" + post("/after", b""), wait=0.5)
    ((status, headers, body), (_, _, after)) = responses(data, methods=(b"HEAD",))
    assert status == 200 and int(headers["content-length"]) > 0 and body == b""
    assert json.loads(after)["path"] == "/after"  # the next response starts right after


@pytest.mark.parametrize(
    ("path", "expected"),
    [("/boom", 500), ("/bad-header", 500)],
)
def test_app_failures_before_the_response_become_500(port: int, path: str, expected: int) -> None:
    data, closed = talk(port, f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    ((status, _, body),) = responses(data)
    assert (status, body, closed) == (expected, b"Internal Server Error", True)
    assert b"set-cookie" not in data and "Traceback" not in data.decode()


@pytest.mark.parametrize("path", ["/late-boom", "/short"])
def test_a_broken_response_closes_the_connection(port: int, path: str) -> None:
    data, closed = talk(port, f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    assert closed and data.startswith(b"HTTP/1.1 200 OK\r\n")


def test_an_unread_body_is_never_taken_for_the_next_request(port: int) -> None:
    smuggled = b"GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n"
    data, closed = talk(port, post("/noread", smuggled))
    assert closed and [r[2] for r in responses(data)] == [b"not read"]
    assert b"smuggled" not in data


def test_the_app_hears_the_client_hang_up(port: int) -> None:
    DISCONNECTS.clear()
    with socket.create_connection(("127.0.0.1", port), timeout=3) as sock:
        sock.sendall(b"GET /wait HTTP/1.1\r\nHost: x\r\n\r\n")
        assert b"first" in sock.recv(65536)
    deadline = time.monotonic() + 5
    while not DISCONNECTS and time.monotonic() < deadline:
        time.sleep(0.01)
    assert DISCONNECTS == ["/wait"]


@pytest.mark.parametrize(
    ("request_bytes", "status"),
    [
        (b"GET /h\r\n\r\n", 400),
        (b"GET  /h HTTP/1.1\r\n\r\n", 400),
        (b"GET /h HTTP/2.0\r\n\r\n", 505),
        (b"G(T /h HTTP/1.1\r\n\r\n", 400),
        (b"GET h HTTP/1.1\r\n\r\n", 400),
        (b"GET /h HTTP/1.1\r\nno colon\r\n\r\n", 400),
        (b"GET /h HTTP/1.1\r\nHost : x\r\n\r\n", 400),
        (b"GET /h HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n", 400),
        (b"GET /h HTTP/1.1\r\nHost: x\r\nX: a\x01b\r\n\r\n", 400),
        (b"GET /h HTTP/1.1\r\n\r\n", 400),  # no Host
        (b"GET /h HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n", 400),
        (b"GET /h HTTP/1.1\r\nX: a\nb: c\r\n\r\n", 400),
        (b"GET /%ff HTTP/1.1\r\n\r\n", 400),
        (
            b"POST /h HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n"
            b"\r\n",
            400,
        ),
        (b"POST /h HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", 400),
        (b"POST /h HTTP/1.1\r\nHost: x\r\nContent-Length: +3\r\n\r\nabc", 400),
        (b"POST /h HTTP/1.1\r\nHost: x\r\nContent-Length: 3 \x0b\r\n\r\nabc", 400),
        (b"POST /h HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999\r\n\r\n", 400),
        (b"POST /h HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501),
        (b"POST /h HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400),
        (b"POST /h HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX\r\n", 400),
        (b"POST /h HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
        (b"GET /h HTTP/1.1\r\nX: " + b"a" * 70_000 + b"\r\n\r\n", 431),
        (b"GET /h HTTP/1.1\r\nX: " + b"a" * 70_000, 431),
    ],
)
def test_malformed_or_ambiguous_requests_are_refused(port: int, request_bytes: bytes, status: int):
    data, closed = talk(port, request_bytes)
    ((got, headers, body),) = responses(data)
    assert (got, headers["connection"], closed) == (status, "close", True)
    assert b"Traceback" not in body


def test_repeated_equal_lengths_are_one_length(port: int) -> None:
    data, _ = talk(
        port, b"POST /h HTTP/1.1\r\nHost: x\r\nContent-Length: 3, 3\r\n\r\nabc", wait=0.5
    )
    assert json.loads(responses(data)[0][2])["length"] == 3


def test_idle_and_unfinished_connections_time_out(port: int) -> None:
    for opening in (b"", b"GET /h HTTP/1.1\r\nHost: x\r\n"):  # idle; a head that never ends
        started = time.monotonic()
        data, closed = talk(port, opening, wait=5)
        assert closed and data == b"" and time.monotonic() - started < 4


def test_a_stalled_request_body_is_answered_408_and_closed(port: int) -> None:
    started = time.monotonic()
    data, closed = talk(port, post("/h", b"x" * 100)[:-90], wait=5)  # 10 of 100 bytes
    assert closed and time.monotonic() - started < 4
    [(status, headers, body)] = responses(data, (b"POST",))
    assert status == 408 and headers["connection"] == "close"
    assert b"stopped arriving" in body


def test_a_slow_but_steady_body_is_not_cut(port: int) -> None:
    """Pauses shorter than the timeout (1 s here) add up to more than it."""
    body = b"0123456789" * 10
    request = post("/h", body)
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        start = len(request) - len(body)
        sock.sendall(request[:start])
        for at in range(start, len(request), 20):
            time.sleep(0.45)
            sock.sendall(request[at : at + 20])
        received = sock.recv(65536)
    assert json.loads(responses(received, (b"POST",))[0][2])["length"] == len(body)


def test_a_body_the_app_reads_late_is_not_taken_for_a_stall(port: int) -> None:
    """Reading pauses while the app has not read (over HIGH_WATER buffered): the app is
    the one waiting, so the client's silence does not count."""
    body = b"y" * (3 * 1024 * 1024)
    base = f"http://127.0.0.1:{port}"
    reply = httpx.post(base + "/slow-reader", content=body, timeout=30).json()
    assert reply["length"] == len(body)


def test_over_the_concurrency_limit_the_answer_is_503() -> None:
    with running(app, limit_concurrency=1) as base:
        assert httpx.get(base + "/h").status_code == 503


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    noise=st.one_of(
        st.binary(max_size=300),
        st.lists(st.sampled_from([b"GET", b"POST", b" ", b"/x", b"HTTP/1.1", b"\r\n", b":",
                                  b"Content-Length", b"Transfer-Encoding", b"chunked", b"5",
                                  b"-1", b"\n", b"\r", b"\x00", b"Host: x"]),
                 max_size=30).map(b"".join),
    )
)  # fmt: skip
def test_hostile_bytes_get_an_answer_or_none_and_the_server_lives_on(
    port: int, noise: bytes
) -> None:
    data, _ = talk(port, noise + b"\r\n\r\n", wait=0.3)
    for status, _, _ in responses(data):
        assert 200 <= status < 600
    data, _ = talk(port, b"GET /alive HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert json.loads(responses(data)[0][2])["path"] == "/alive"
