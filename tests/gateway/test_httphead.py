"""Request heads and chunked bodies of the gateway's HTTP/1.1 server (gateway/httphead.py):
the framing decided, and hostile input refused with BadRequest only (hypothesis)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from windowkeeper.gateway.httphead import BadRequest, ChunkedReader, parse_head


def test_a_head_is_read_into_its_parts() -> None:
    head = parse_head(
        b"POST /v1/chat%2Fx?a=1&b=%20 HTTP/1.1\r\nHost: gw\r\nContent-Length: 12\r\n"
        b"Connection: keep-alive, Upgrade\r\nExpect: 100-Continue\r\nX-Obs: caf\xc3\xa9"
    )
    assert (head.method, head.raw_path, head.path, head.query) == (
        "POST", b"/v1/chat%2Fx", "/v1/chat/x", b"a=1&b=%20"
    )  # fmt: skip
    assert (head.version, head.length, head.keep_alive, head.expects_continue) == (
        "1.1", 12, True, True
    )  # fmt: skip
    assert head.headers[0] == (b"host", b"gw") and head.headers[-1] == (b"x-obs", b"caf\xc3\xa9")


@pytest.mark.parametrize(
    ("block", "length", "keep_alive"),
    [
        (b"GET / HTTP/1.1\r\nHost: h", 0, True),
        (b"GET / HTTP/1.0", 0, False),
        (b"GET / HTTP/1.1\r\nHost: h\r\nConnection: Close", 0, False),
        (b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: Chunked", None, True),
        (b"POST / HTTP/1.1\r\nHost: h\r\ncontent-length: 7, 7\r\nContent-Length: 7", 7, True),
    ],
)
def test_framing(block: bytes, length: int | None, keep_alive: bool) -> None:
    head = parse_head(block)
    assert (head.length, head.keep_alive) == (length, keep_alive)


def test_no_continue_without_a_body() -> None:
    assert not parse_head(b"GET / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue").expects_continue


def encode(pieces: list[bytes], trailers: bytes) -> bytes:
    out = b"".join(b"%x;ext=1\r\n%s\r\n" % (len(p), p) for p in pieces if p)
    return out + b"0\r\n" + trailers + b"\r\n"


@given(
    pieces=st.lists(st.binary(max_size=40), max_size=6),
    trailers=st.sampled_from([b"", b"x-sum: 1\r\n", b"a: 1\r\nb: 2\r\n"]),
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=8),
    after=st.binary(max_size=20),
)
def test_chunked_bodies_decode_in_any_fragments_and_leave_what_follows(
    pieces: list[bytes], trailers: bytes, cuts: list[int], after: bytes
) -> None:
    wire = encode(pieces, trailers) + after
    reader, buffer, got = ChunkedReader(), bytearray(), b""
    for start, end in zip([0, *sorted(cuts)], [*sorted(cuts), len(wire)], strict=True):
        buffer += wire[start:end]
        got += b"".join(reader.feed(buffer))
        if reader.done:
            break
    assert reader.done and got == b"".join(pieces)
    assert bytes(buffer) + wire[end:] == after


@given(st.binary(max_size=200))
def test_hostile_heads_are_refused_with_bad_request_only(block: bytes) -> None:
    try:
        head = parse_head(block)
    except BadRequest as bad:
        assert 400 <= bad.status < 600 and bad.reason
        return
    assert head.length is None or head.length >= 0


@given(st.binary(max_size=200))
def test_hostile_chunked_bodies_are_refused_with_bad_request_only(data: bytes) -> None:
    buffer = bytearray(data)
    try:
        ChunkedReader().feed(buffer)
    except BadRequest as bad:
        assert bad.status in (400, 431)
    assert len(buffer) <= len(data)
