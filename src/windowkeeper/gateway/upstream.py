"""Forwarding to the upstreams: OpenAI-style (``/v1`` base) and Anthropic (base without ``/v1``).

What must hold: upstream 4xx/5xx answers reach the caller as :class:`UpstreamHTTPError`
with their status, body and content type intact (the gateway passes them through);
transport failures become :class:`UpstreamUnreachable` (502, or 504 for a timeout);
hop-by-hop headers are never forwarded in either direction; ``X-Windowkeeper-*``
headers stay between the client and the gateway; the configured upstream key replaces
the client's credential and never appears in an error, a log line or a response.
"""

from __future__ import annotations

import io
import ipaddress
import json
import ssl
import urllib.request
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

import aiohttp

from ..core.errors import ConfigError, UpstreamError
from .protocols.base import Target
from .settings import GatewaySettings

# RFC 9110 §7.6.1 hop-by-hop headers, plus those the gateway recomputes itself.
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)
# ``expect``: the gateway holds the whole body already (a forwarded 100-continue would
# make the client library wait for an interim answer some upstreams never send).
_REQUEST_DROP = HOP_BY_HOP | {"host", "content-length", "content-type", "accept-encoding", "expect"}
_RESPONSE_DROP = HOP_BY_HOP | {"content-length", "content-encoding", "date", "server"}
OWN_HEADER_PREFIX = "x-windowkeeper-"
_CONNECT_TIMEOUT = 10.0
_ONE_WRITE = 1 << 20


class UpstreamHTTPError(UpstreamError):
    """The upstream answered with an error status (``status_code`` and ``body`` are what
    the overflow classifier reads)."""

    def __init__(
        self, status_code: int, content: bytes, headers: list[tuple[str, str]], media_type: str
    ) -> None:
        self.status_code = status_code
        self.content = content
        self.headers = headers
        self.media_type = media_type
        self.body = decode(content)
        super().__init__(f"the upstream answered HTTP {status_code}")


class UpstreamUnreachable(UpstreamError):
    """The upstream could not be reached or did not answer in time."""

    def __init__(self, status_code: int, message: str) -> None:
        self.status_code = status_code
        super().__init__(message)


@dataclass(frozen=True)
class Reply:
    """A complete upstream answer (status < 400)."""

    status_code: int
    content: bytes
    headers: list[tuple[str, str]]

    def json(self) -> object:
        return decode(self.content)


def decode(content: bytes) -> object:
    try:
        return json.loads(content) if content else None
    except ValueError:
        return content.decode("utf-8", "replace")


def _connection_named(headers: Mapping[str, str] | list[tuple[str, str]]) -> set[str]:
    """Headers the ``Connection`` header declares hop-by-hop (RFC 9110 §7.6.1)."""
    pairs = headers.items() if isinstance(headers, Mapping) else headers
    values = (v for k, v in pairs if k.lower() == "connection")
    return {name.strip().lower() for value in values for name in value.split(",")}


def forward_request_headers(
    headers: Mapping[str, str], target: Target, api_key: str | None, drop: frozenset[str]
) -> list[tuple[str, str]]:
    """The client's headers (lower-case names) minus hop-by-hop, gateway and ``drop``
    ones; a configured key replaces the client's credential for ``target``."""
    named = _connection_named(headers)
    credentials = {"authorization", "x-api-key"} if api_key else set()
    out = [
        (k, v)
        for k, v in headers.items()
        if k not in _REQUEST_DROP
        and k not in named
        and k not in drop
        and k not in credentials
        and not k.startswith(OWN_HEADER_PREFIX)
    ]
    if api_key:
        out.append(
            ("x-api-key", api_key)
            if target == "anthropic"
            else ("authorization", f"Bearer {api_key}")
        )
    out.append(("content-type", "application/json"))
    return out


def forward_response_headers(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    named = _connection_named(headers)
    return [
        (k, v) for k, v in headers if (low := k.lower()) not in _RESPONSE_DROP and low not in named
    ]


class Opened:
    """An upstream response whose body is still to be read (:meth:`Upstream.read`,
    :meth:`Upstream.iter_stream`) or dropped (:meth:`aclose`, idempotent)."""

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self.status_code = response.status
        self.headers = forward_response_headers(list(response.headers.items()))
        self.content_type = response.headers.get("content-type", "application/json")
        self._response = response

    async def aclose(self) -> None:
        """Give the connection back (a body read to its end) or close it (one that was not)."""
        self._response.release()


class Upstream:
    """One keep-alive :class:`aiohttp.ClientSession` per configured upstream.

    What must hold: the body is sent as the given bytes and the answer relayed as received
    (``accept-encoding: identity``, raw bytes, no decompression, no redirects); every wait
    is bounded (``timeout`` per read, at most ``_CONNECT_TIMEOUT`` to connect); proxies
    come from the standard environment (:func:`proxy_for`); certificates are verified
    against the system's store as ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` name it when the
    session is made (aiohttp's own context is fixed at import). Sessions are made on first
    use (aiohttp wants a running loop)."""

    def __init__(self, settings: GatewaySettings) -> None:
        self._sessions: dict[Target, aiohttp.ClientSession] = {}
        self._bases: dict[Target, str] = {}
        self._keys: dict[Target, str | None] = {
            "openai": settings.upstream_api_key,
            "anthropic": settings.anthropic_api_key,
        }
        connect = min(settings.timeout, _CONNECT_TIMEOUT)
        self._timeout = aiohttp.ClientTimeout(sock_connect=connect, sock_read=settings.timeout)
        bases: dict[Target, str | None] = {
            "openai": settings.upstream_base_url,
            "anthropic": settings.anthropic_base_url,
        }
        self._bases = {target: base.rstrip("/") for target, base in bases.items() if base}
        self._proxies = {target: proxy_for(base) for target, base in self._bases.items()}

    def serves(self, target: Target) -> bool:
        return target in self._bases

    def base_url(self, target: Target) -> str:
        return self._bases[target]

    async def aclose(self) -> None:
        sessions, self._sessions = self._sessions, {}
        for session in sessions.values():
            await session.close()

    def _session(self, target: Target) -> aiohttp.ClientSession:
        session = self._sessions.get(target)
        if session is None or session.closed:
            session = aiohttp.ClientSession(
                timeout=self._timeout, auto_decompress=False,
                connector=aiohttp.TCPConnector(limit=0, ssl=ssl.create_default_context()),
                skip_auto_headers=("user-agent",),
            )  # fmt: skip
            self._sessions[target] = session
        return session

    async def open(
        self,
        target: Target,
        method: str,
        path: str,
        headers: Mapping[str, str],
        payload: bytes = b"",
        drop: frozenset[str] = frozenset(),
    ) -> Opened:
        """Send a request; an error status is read whole and raised (before any byte went
        to the client, so the caller may still recover and retry). The caller reads or
        closes a returned response."""
        forwarded = forward_request_headers(headers, target, self._keys[target], drop)
        forwarded.append(("accept-encoding", "identity"))
        url = self._bases[target] + path
        try:
            response = await self._session(target).request(
                method, url, headers=forwarded, data=_body(payload), allow_redirects=False,
                proxy=self._proxies[target],
            )  # fmt: skip
            opened = Opened(response)
            if response.status < 400:
                return opened
            content = await self.read(target, opened)
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise self._unreachable(target, exc) from exc
        raise UpstreamHTTPError(opened.status_code, content, opened.headers, opened.content_type)

    async def call(
        self,
        target: Target,
        method: str,
        path: str,
        headers: Mapping[str, str],
        payload: bytes = b"",
        drop: frozenset[str] = frozenset(),
    ) -> Reply:
        """A whole exchange (see :meth:`open`)."""
        opened = await self.open(target, method, path, headers, payload, drop)
        content = await self.read(target, opened)
        return Reply(opened.status_code, content, opened.headers)

    async def read(self, target: Target, opened: Opened) -> bytes:
        """The rest of an open response's body (the response is released after)."""
        try:
            return await opened._response.read()
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise self._unreachable(target, exc) from exc
        finally:
            await opened.aclose()

    async def iter_stream(self, target: Target, opened: Opened) -> AsyncIterator[bytes]:
        """The body of an open stream; a transport failure mid-stream is raised as
        :class:`UpstreamUnreachable` (the status is already sent: report it in-band)."""
        try:
            async for chunk in opened._response.content.iter_any():
                yield chunk
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise self._unreachable(target, exc) from exc
        finally:
            await opened.aclose()

    def _unreachable(self, target: Target, exc: Exception) -> UpstreamUnreachable:
        base = self.base_url(target)
        if isinstance(exc, TimeoutError):  # aiohttp's timeouts are TimeoutErrors too
            return UpstreamUnreachable(
                504, f"windowkeeper gateway: the upstream {base} timed out ({type(exc).__name__})"
            )
        reason = str(exc) or type(exc).__name__
        return UpstreamUnreachable(
            502, f"windowkeeper gateway: cannot reach the upstream {base} ({reason})"
        )


def _body(payload: bytes) -> bytes | io.BytesIO:
    """aiohttp sends bytes over 1 MiB in one write and warns it may block the loop; a
    BytesIO goes in chunks (still with its ``Content-Length``)."""
    return payload if len(payload) <= _ONE_WRITE else io.BytesIO(payload)


def proxy_for(base: str) -> str | None:
    """The HTTP proxy the environment names for ``base`` as curl and httpx read it
    (``HTTPS_PROXY`` / ``HTTP_PROXY`` by the upstream's scheme, else ``ALL_PROXY``; a URL
    without a scheme is ``http://``), ``None`` for hosts ``NO_PROXY`` lists and for a
    loopback upstream."""
    parts = urlsplit(base)
    host = parts.hostname or ""
    proxies = urllib.request.getproxies_environment()
    proxy = proxies.get(parts.scheme) or proxies.get("all")
    if not proxy or _is_loopback(host):
        return None
    if _bypassed(parts.netloc, proxies) or _bypassed(host, proxies):
        return None
    proxy = proxy if "://" in proxy else f"http://{proxy}"
    if not proxy.startswith("http://"):
        raise ConfigError(f"the proxy {proxy.split('@')[-1]!r} from the environment cannot be "
                          "used: only http:// proxies are supported")  # fmt: skip
    return proxy


# NO_PROXY as urllib reads it (suffixes, ``*``, host:port); typeshed does not declare it.
_bypassed: Callable[[str, dict[str, str]], bool] = urllib.request.proxy_bypass_environment  # type: ignore[attr-defined]


def _is_loopback(host: str) -> bool:
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def error_headers(exc: UpstreamHTTPError) -> list[tuple[str, str]]:
    """The upstream's error headers for the client (content type included)."""
    return [(k, v) for k, v in exc.headers if k.lower() != "content-type"] + [
        ("content-type", exc.media_type)
    ]
