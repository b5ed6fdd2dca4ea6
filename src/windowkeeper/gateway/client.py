"""A lean HTTP/1.1 client for the upstream: keep-alive pool, streamed bodies, timeouts.

The gateway's request path forwards bodies of hundreds of KiB many times a second; a
general-purpose client spends more CPU per request than the gateway's own work (measured
in docs/benchmarks.md). This one does only what forwarding needs: one base URL (http or
https), ``Content-Length`` request bodies, responses with ``Content-Length``, chunked or
close-delimited bodies, idle connections reused, an HTTP proxy from the environment
(``HTTPS_PROXY`` / ``HTTP_PROXY`` / ``ALL_PROXY``, minus ``NO_PROXY``: a ``CONNECT``
tunnel to an https upstream, absolute-form requests to an http one; loopback upstreams
never go through it). No redirects, no decompression (the gateway never asks for an
encoding).

What must hold: a response body is read to its end or its connection is closed, never
returned half-read to the pool; a reused connection that the server closed while idle is
retried once on a fresh one (the request cannot have been seen); every wait is bounded
by the timeout; transport failures surface as :class:`TransportError` only.
"""

from __future__ import annotations

import asyncio
import base64
import ipaddress
import ssl
import urllib.request
from collections.abc import AsyncIterator, Sequence
from contextlib import suppress
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

__all__ = ["ConnectTimeout", "Pool", "ReadTimeout", "Response", "TransportError"]

_MAX_HEAD = 64 * 1024
_CHUNK = 64 * 1024


class TransportError(Exception):
    """The upstream could not be reached or broke the exchange."""


class ConnectTimeout(TransportError):
    """No connection within the connect timeout."""


class ReadTimeout(TransportError):
    """The upstream stopped sending for longer than the timeout."""


@dataclass(frozen=True)
class Origin:
    scheme: str
    host: str
    port: int
    prefix: str

    @classmethod
    def parse(cls, base_url: str) -> Origin:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {base_url!r}")
        port = parts.port or (443 if parts.scheme == "https" else 80)
        return cls(parts.scheme, parts.hostname, port, parts.path.rstrip("/"))

    @property
    def host_header(self) -> str:
        default = 443 if self.scheme == "https" else 80
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == default else f"{host}:{self.port}"


@dataclass(frozen=True)
class Proxy:
    """An HTTP proxy (``http://[user:password@]host:port``) the upstream is reached through."""

    host: str
    port: int
    authorization: str | None

    @classmethod
    def parse(cls, url: str) -> Proxy:
        parts = urlsplit(url if "://" in url else f"http://{url}")
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(
                f"only http:// proxies are supported, got {url!r} (unset the proxy variable "
                "or list the upstream's host in NO_PROXY)"
            )
        authorization = None
        if parts.username is not None:
            pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
            authorization = "Basic " + base64.b64encode(pair.encode()).decode("ascii")
        return cls(parts.hostname, parts.port or 80, authorization)

    @classmethod
    def for_origin(cls, origin: Origin) -> Proxy | None:
        """The proxy the environment names for ``origin``, if any (``NO_PROXY`` applies;
        a loopback host is always reached directly)."""
        if _is_loopback(origin.host):
            return None
        proxies = urllib.request.getproxies_environment()
        url = proxies.get(origin.scheme) or proxies.get("all")
        if not url or _bypassed(origin, proxies.get("no", "")):
            return None
        return cls.parse(url)


def _bypassed(origin: Origin, no_proxy: str) -> bool:
    """``NO_PROXY`` as curl reads it: ``*``, or hosts and domains (``example.com`` and
    ``.example.com`` both cover its subdomains), each optionally with ``:port``."""
    host = origin.host.lower()
    for entry in (e.strip().lower() for e in no_proxy.split(",")):
        if entry == "*":
            return True
        # "host:port" splits; a bare IPv6 address (several colons) has no port.
        name, _, port = entry.partition(":") if entry.count(":") == 1 else (entry, "", "")
        name = name.strip("[]").lstrip(".")
        matches = bool(name) and (host == name or host.endswith("." + name))
        if matches and (not port or port == str(origin.port)):
            return True
    return False


def _is_loopback(host: str) -> bool:
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class _Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.used = False

    def close(self) -> None:
        with suppress(Exception):
            self.writer.close()


class Response:
    """An upstream response whose body is read on demand (call :meth:`aclose` when done)."""

    def __init__(
        self,
        pool: Pool,
        conn: _Connection,
        status: int,
        headers: list[tuple[str, str]],
        keep_alive: bool,
    ) -> None:
        self._pool = pool
        self._conn: _Connection | None = conn
        self.status = status
        self.headers = headers
        self._keep_alive = keep_alive
        self._length: int | None = None
        self._chunked = False
        for name, value in headers:
            low = name.lower()
            if low == "content-length" and value.strip().isdigit():
                self._length = int(value)
            elif low == "transfer-encoding" and "chunked" in value.lower():
                self._chunked = True
        if not self._chunked and self._length is None:
            self._keep_alive = False  # the body ends when the server closes

    def header(self, name: str, default: str = "") -> str:
        low = name.lower()
        return next((v for k, v in self.headers if k.lower() == low), default)

    async def read(self) -> bytes:
        """The whole body."""
        return b"".join([chunk async for chunk in self.iter_bytes()])

    async def iter_bytes(self) -> AsyncIterator[bytes]:
        """The body as it arrives; the connection goes back to the pool at its end."""
        conn = self._conn
        if conn is None:
            return
        complete = False
        try:
            if self._chunked:
                async for piece in self._chunks(conn.reader):
                    yield piece
            elif self._length is not None:
                left = self._length
                while left:
                    piece = await self._pool.bounded(conn.reader.read(min(left, _CHUNK)))
                    if not piece:
                        raise TransportError("the upstream closed the connection mid-body")
                    left -= len(piece)
                    yield piece
            else:
                while piece := await self._pool.bounded(conn.reader.read(_CHUNK)):
                    yield piece
            complete = True
        finally:
            self._release(complete)

    async def _chunks(self, reader: asyncio.StreamReader) -> AsyncIterator[bytes]:
        while True:
            line = await self._pool.bounded(reader.readuntil(b"\r\n"))
            size = int(line.split(b";", 1)[0].strip() or b"0", 16)
            if size == 0:
                while (await self._pool.bounded(reader.readuntil(b"\r\n"))) != b"\r\n":
                    pass  # trailers
                return
            piece = await self._pool.bounded(reader.readexactly(size + 2))
            yield piece[:-2]

    def _release(self, complete: bool) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            self._pool.release(conn, reusable=complete and self._keep_alive)

    async def aclose(self) -> None:
        """Close without reading the rest (the connection is not reused)."""
        self._release(False)


class Pool:
    """Connections to one origin; ``timeout`` bounds every read, ``connect`` the dial."""

    def __init__(
        self, base_url: str, *, timeout: float, connect_timeout: float, max_idle: int = 64
    ) -> None:
        self.origin = Origin.parse(base_url)
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.max_idle = max_idle
        self._idle: list[_Connection] = []
        self._ssl = _ssl_context() if self.origin.scheme == "https" else None
        self.proxy = Proxy.for_origin(self.origin)
        # Through a proxy an http upstream is asked in absolute form (no tunnel).
        forwarded = self.proxy is not None and self._ssl is None
        self._target = f"http://{self.origin.host_header}" if forwarded else ""
        self._closed = False

    def path(self, suffix: str) -> str:
        return self.origin.prefix + suffix

    async def bounded(self, awaitable: asyncio.Future[bytes] | object) -> bytes:
        try:
            async with asyncio.timeout(self.timeout):
                return await awaitable  # type: ignore[misc, no-any-return]
        except TimeoutError:
            raise ReadTimeout("the upstream did not answer in time") from None
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError) as exc:
            raise TransportError("the upstream closed the connection mid-response") from exc
        except (OSError, ValueError) as exc:
            raise TransportError(f"{type(exc).__name__}: {exc}") from exc

    async def request(
        self, method: str, path: str, headers: Sequence[tuple[str, str]], body: bytes = b""
    ) -> Response:
        """Send a request; the response's head is read, its body is not."""
        for attempt in (0, 1):
            conn = await self._connection(fresh=attempt > 0)
            reused = conn.used
            try:
                return await self._exchange(conn, method, path, headers, body)
            except TransportError:
                conn.close()
                if not reused or attempt:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    async def _exchange(
        self,
        conn: _Connection,
        method: str,
        path: str,
        headers: Sequence[tuple[str, str]],
        body: bytes,
    ) -> Response:
        lines = [f"{method} {self._target}{path} HTTP/1.1", f"Host: {self.origin.host_header}"]
        if self._target and self.proxy is not None and self.proxy.authorization:
            lines.append(f"Proxy-Authorization: {self.proxy.authorization}")
        lines += [f"{name}: {value}" for name, value in headers]
        lines.append(f"Content-Length: {len(body)}")
        conn.used = True
        try:
            conn.writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
        except (OSError, UnicodeEncodeError) as exc:
            raise TransportError(f"{type(exc).__name__}: {exc}") from exc
        while True:
            head = await self.bounded(conn.reader.readuntil(b"\r\n\r\n"))
            status, headers_out, keep_alive = _parse_head(head)
            if status >= 200 or status == 101:
                return Response(self, conn, status, headers_out, keep_alive)

    async def _connection(self, *, fresh: bool) -> _Connection:
        if self._closed:
            raise TransportError("the upstream client is closed")
        while self._idle and not fresh:
            conn = self._idle.pop()
            if not conn.reader.at_eof() and not conn.writer.is_closing():
                return conn
            conn.close()
        try:
            async with asyncio.timeout(self.connect_timeout):
                return await self._dial()
        except TimeoutError:
            raise ConnectTimeout("connecting to the upstream timed out") from None
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError) as exc:
            raise TransportError(f"{type(exc).__name__}: {exc}") from exc

    async def _dial(self) -> _Connection:
        origin, proxy = self.origin, self.proxy
        if proxy is None:
            reader, writer = await asyncio.open_connection(
                origin.host, origin.port, ssl=self._ssl, limit=_MAX_HEAD
            )
            return _Connection(reader, writer)
        reader, writer = await asyncio.open_connection(proxy.host, proxy.port, limit=_MAX_HEAD)
        conn = _Connection(reader, writer)
        if self._ssl is None:
            return conn  # an http upstream: requests in absolute form through the proxy
        try:
            await _tunnel(conn, origin, proxy)
            await writer.start_tls(self._ssl, server_hostname=origin.host)
        except BaseException:
            conn.close()
            raise
        return conn

    def release(self, conn: _Connection, *, reusable: bool) -> None:
        if reusable and not self._closed and len(self._idle) < self.max_idle:
            self._idle.append(conn)
        else:
            conn.close()

    async def aclose(self) -> None:
        self._closed = True
        idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()
            with suppress(Exception):
                await conn.writer.wait_closed()


async def _tunnel(conn: _Connection, origin: Origin, proxy: Proxy) -> None:
    """Ask the proxy for a tunnel to ``origin`` (``CONNECT``); TransportError unless 2xx."""
    host = f"[{origin.host}]" if ":" in origin.host else origin.host
    authority = f"{host}:{origin.port}"
    lines = [f"CONNECT {authority} HTTP/1.1", f"Host: {authority}"]
    if proxy.authorization:
        lines.append(f"Proxy-Authorization: {proxy.authorization}")
    conn.writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
    status, _, _ = _parse_head(await conn.reader.readuntil(b"\r\n\r\n"))
    if not 200 <= status < 300:
        raise TransportError(f"the proxy {proxy.host}:{proxy.port} refused the tunnel ({status})")


def _parse_head(head: bytes) -> tuple[int, list[tuple[str, str]], bool]:
    lines = head.decode("latin-1").split("\r\n")
    version, _, rest = lines[0].partition(" ")
    code = rest.partition(" ")[0]
    if not version.startswith("HTTP/") or not code.isdigit():
        raise TransportError("the upstream did not answer with HTTP")
    headers = []
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(":")
            headers.append((name.strip(), value.strip()))
    connection = ",".join(v for k, v in headers if k.lower() == "connection").lower()
    keep_alive = "close" not in connection and version != "HTTP/1.0"
    return int(code), headers, keep_alive


def _ssl_context() -> ssl.SSLContext:
    context = ssl.create_default_context()
    try:  # the CA bundle httpx ships with, when present; else the system's
        import certifi

        context.load_verify_locations(certifi.where())
    except (ImportError, OSError):
        pass
    return context
