"""HTTP/1.1 request heads and chunked bodies, for the gateway's own server (httpserver.py).

Strict by design: wherever two HTTP implementations could read one request differently
(a proxy in front of the gateway and the gateway itself), the request is refused with a
4xx, never guessed: ``Content-Length`` together with ``Transfer-Encoding``, two different
lengths, a sign or a space in a length, whitespace before a header's colon, obs-fold
continuation lines, control characters in a value, a transfer coding other than
``chunked``, a chunk size that is not plain hex (RFC 9112 §6.1, §6.3, §11.2).

What must hold: :func:`parse_head` either returns a :class:`Head` whose body framing is
unambiguous or raises :class:`BadRequest`; :class:`ChunkedReader` consumes exactly the
bytes of one chunked body (size lines, data, trailers) and leaves a pipelined next request
in the buffer untouched.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote

__all__ = ["BadRequest", "ChunkedReader", "Head", "parse_head"]

_TOKEN = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_TARGET = re.compile(rb"[\x21-\x7e]+")
_BAD_VALUE = re.compile(rb"[\x00-\x08\x0a-\x1f\x7f]")
_HEX = re.compile(rb"[0-9A-Fa-f]{1,15}")
_VERSIONS = {b"HTTP/1.1": "1.1", b"HTTP/1.0": "1.0"}
_MAX_CHUNK_LINE = 4096
_MAX_TRAILERS = 16 * 1024


class BadRequest(Exception):
    """The request cannot be served; ``status`` is the 4xx/5xx to answer before closing."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Head:
    """A request line and its headers, with the body framing decided."""

    method: str
    raw_path: bytes
    path: str
    query: bytes
    version: str
    headers: list[tuple[bytes, bytes]]  # names lowercased, values as sent (trimmed)
    length: int | None  # the body's length; None: chunked
    keep_alive: bool
    expects_continue: bool


def parse_head(block: bytes) -> Head:
    """The head ``block`` (request line and header lines, without the final blank line)."""
    line, _, rest = block.partition(b"\r\n")
    method, target, version = _request_line(line)
    headers = _header_lines(rest) if rest else []
    raw_path, _, query = _origin_form(target).partition(b"?")
    try:
        path = unquote(raw_path.decode("ascii"), errors="strict")
    except UnicodeDecodeError:
        raise BadRequest(400, "the request target is not valid percent-encoded UTF-8") from None
    connection = _tokens(headers, b"connection")
    keep_alive = b"close" not in connection and version == "1.1"
    expect = b"".join(v for n, v in headers if n == b"expect").lower()
    length = _framing(headers, version)
    hosts = sum(1 for n, _ in headers if n == b"host")
    if hosts > 1 or (hosts == 0 and version == "1.1"):
        raise BadRequest(400, "an HTTP/1.1 request needs exactly one Host header")
    return Head(
        method=method, raw_path=raw_path, path=path, query=query, version=version,
        headers=headers, length=length, keep_alive=keep_alive,
        expects_continue=expect == b"100-continue" and version == "1.1" and length != 0,
    )  # fmt: skip


def _request_line(line: bytes) -> tuple[str, bytes, str]:
    parts = line.split(b" ")
    if len(parts) != 3 or not _TOKEN.fullmatch(parts[0]) or not _TARGET.fullmatch(parts[1]):
        raise BadRequest(400, "malformed request line")
    version = _VERSIONS.get(parts[2])
    if version is None:
        status = 505 if parts[2].startswith(b"HTTP/") else 400
        raise BadRequest(status, "only HTTP/1.1 and HTTP/1.0 are served")
    return parts[0].decode("ascii"), parts[1], version


def _header_lines(block: bytes) -> list[tuple[bytes, bytes]]:
    headers = []
    for line in block.split(b"\r\n"):
        name, colon, value = line.partition(b":")
        if not colon or not _TOKEN.fullmatch(name):
            raise BadRequest(400, "malformed header line (obs-fold, or no name before ':')")
        value = value.strip(b" \t")
        if _BAD_VALUE.search(value):
            raise BadRequest(400, "control character in a header value")
        headers.append((name.lower(), value))
    return headers


def _origin_form(target: bytes) -> bytes:
    """The path and query of ``target`` (absolute-form reduced to them, RFC 9112 §3.2.2)."""
    if target.startswith(b"/"):
        return target
    for scheme in (b"http://", b"https://"):
        if target[: len(scheme)].lower() == scheme:
            slash = target.find(b"/", len(scheme))
            return target[slash:] if slash >= 0 else b"/"
    if target == b"*":
        return target
    raise BadRequest(400, "the request target is neither a path nor an absolute URL")


def _tokens(headers: list[tuple[bytes, bytes]], name: bytes) -> set[bytes]:
    return {t.strip().lower() for n, v in headers if n == name for t in v.split(b",")}


def _framing(headers: list[tuple[bytes, bytes]], version: str) -> int | None:
    """The body length, or None for chunked; refuses every ambiguous combination."""
    codings = [v for n, v in headers if n == b"transfer-encoding"]
    lengths = {t.strip() for n, v in headers if n == b"content-length" for t in v.split(b",")}
    if codings:
        if lengths or version == "1.0":
            raise BadRequest(400, "Transfer-Encoding with Content-Length, or in HTTP/1.0")
        if [c.strip().lower() for c in b",".join(codings).split(b",")] != [b"chunked"]:
            raise BadRequest(501, "only the chunked transfer coding is accepted")
        return None
    if not lengths:
        return 0
    if len(lengths) > 1 or not all(c in b"0123456789" for c in next(iter(lengths))):
        raise BadRequest(400, "invalid or conflicting Content-Length")
    value = next(iter(lengths))
    if not value or len(value) > 15:
        raise BadRequest(400, "invalid Content-Length")
    return int(value)


class ChunkedReader:
    """Decodes one chunked body from the front of a buffer, a feed at a time."""

    def __init__(self) -> None:
        self.remaining = 0  # data bytes left in the current chunk (then its CRLF)
        self.in_data = False
        self.trailers = False
        self.trailer_bytes = 0
        self.done = False

    def feed(self, buffer: bytearray) -> list[bytes]:
        """The data decodable now, consumed from ``buffer`` (an incomplete line stays)."""
        pieces: list[bytes] = []
        while not self.done:
            if self.in_data:
                if not self._data(buffer, pieces):
                    break
            elif not self._line(buffer):
                break
        return pieces

    def _data(self, buffer: bytearray, pieces: list[bytes]) -> bool:
        if self.remaining:
            take = bytes(buffer[: self.remaining])
            del buffer[: len(take)]
            self.remaining -= len(take)
            if take:
                pieces.append(take)
            if self.remaining:
                return False
        if len(buffer) < 2:
            return False
        if buffer[:2] != b"\r\n":
            raise BadRequest(400, "chunk data not followed by CRLF")
        del buffer[:2]
        self.in_data = False
        return True

    def _line(self, buffer: bytearray) -> bool:
        end = buffer.find(b"\r\n")
        if end < 0:
            if len(buffer) > _MAX_CHUNK_LINE:
                raise BadRequest(400, "chunk size line too long")
            return False
        line = bytes(buffer[:end])
        del buffer[: end + 2]
        if self.trailers:
            self.trailer_bytes += end + 2
            if self.trailer_bytes > _MAX_TRAILERS:
                raise BadRequest(431, "chunked trailers too large")
            self.done = not line
            return True
        size = line.partition(b";")[0].rstrip(b" \t")
        if not _HEX.fullmatch(size):
            raise BadRequest(400, "invalid chunk size")
        self.remaining = int(size, 16)
        self.in_data = self.remaining > 0
        self.trailers = self.remaining == 0
        return True
