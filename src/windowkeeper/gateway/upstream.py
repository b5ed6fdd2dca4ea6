"""Forwarding to the upstreams: OpenAI-style (``/v1`` base) and Anthropic (base without ``/v1``).

What must hold: upstream 4xx/5xx answers reach the caller as :class:`UpstreamHTTPError`
with their status, body and content type intact (the gateway passes them through);
transport failures become :class:`UpstreamUnreachable` (502, or 504 for a timeout);
hop-by-hop headers are never forwarded in either direction; ``X-Windowkeeper-*``
headers stay between the client and the gateway; the configured upstream key replaces
the client's credential and never appears in an error, a log line or a response.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass

import httpx

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
_REQUEST_DROP = HOP_BY_HOP | {"host", "content-length", "content-type", "accept-encoding"}
_RESPONSE_DROP = HOP_BY_HOP | {"content-length", "content-encoding", "date", "server"}
OWN_HEADER_PREFIX = "x-windowkeeper-"
_CONNECT_TIMEOUT = 10.0


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


class Upstream:
    """One keep-alive :class:`httpx.AsyncClient` per configured upstream.

    What must hold: the body is sent as the given bytes and the answer relayed as received
    (``accept-encoding: identity``, raw bytes, no decompression, no redirects); every wait
    is bounded (``timeout`` per read, at most ``_CONNECT_TIMEOUT`` to connect); proxies
    come from the standard environment (``HTTPS_PROXY`` / ``HTTP_PROXY`` / ``ALL_PROXY``
    minus ``NO_PROXY``, httpx's ``trust_env``) except for a loopback upstream, which is
    never reached through one."""

    def __init__(self, settings: GatewaySettings) -> None:
        self._clients: dict[Target, httpx.AsyncClient] = {}
        self._bases: dict[Target, str] = {}
        self._keys: dict[Target, str | None] = {
            "openai": settings.upstream_api_key,
            "anthropic": settings.anthropic_api_key,
        }
        timeout = httpx.Timeout(settings.timeout, connect=min(settings.timeout, _CONNECT_TIMEOUT))
        bases: dict[Target, str | None] = {
            "openai": settings.upstream_base_url,
            "anthropic": settings.anthropic_base_url,
        }
        for target, base in bases.items():
            if base:
                self._bases[target] = base.rstrip("/")
                self._clients[target] = _client(base, timeout)

    def serves(self, target: Target) -> bool:
        return target in self._clients

    def base_url(self, target: Target) -> str:
        return self._bases[target]

    async def aclose(self) -> None:
        for client in self._clients.values():
            await client.aclose()

    async def open(
        self,
        target: Target,
        method: str,
        path: str,
        headers: Mapping[str, str],
        payload: bytes = b"",
        drop: frozenset[str] = frozenset(),
    ) -> httpx.Response:
        """Send a request; an error status is read whole and raised (before any byte went
        to the client, so the caller may still recover and retry). The caller reads or
        closes a returned response."""
        client = self._clients[target]
        forwarded = forward_request_headers(headers, target, self._keys[target], drop)
        url = self._bases[target] + path
        try:
            request = client.build_request(method, url, headers=forwarded, content=payload)
            response = await client.send(request, stream=True)
            if response.status_code < 400:
                return response
            content = await _drained(response)
        except httpx.TransportError as exc:
            raise self._unreachable(target, exc) from exc
        media = response.headers.get("content-type", "application/json")
        raise UpstreamHTTPError(response.status_code, content, response_headers(response), media)

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
        response = await self.open(target, method, path, headers, payload, drop)
        content = await self.read(target, response)
        return Reply(response.status_code, content, response_headers(response))

    async def read(self, target: Target, response: httpx.Response) -> bytes:
        """The rest of an open response's body (the response is closed after)."""
        try:
            return await _drained(response)
        except httpx.TransportError as exc:
            raise self._unreachable(target, exc) from exc

    async def iter_stream(self, target: Target, response: httpx.Response) -> AsyncIterator[bytes]:
        """The body of an open stream; a transport failure mid-stream is raised as
        :class:`UpstreamUnreachable` (the status is already sent: report it in-band)."""
        try:
            async for chunk in response.aiter_raw():
                yield chunk
        except httpx.TransportError as exc:
            raise self._unreachable(target, exc) from exc
        finally:
            await response.aclose()

    def _unreachable(self, target: Target, exc: httpx.TransportError) -> UpstreamUnreachable:
        base = self.base_url(target)
        if isinstance(exc, httpx.TimeoutException):
            return UpstreamUnreachable(
                504, f"windowkeeper gateway: the upstream {base} timed out ({type(exc).__name__})"
            )
        reason = str(exc) or type(exc).__name__
        return UpstreamUnreachable(
            502, f"windowkeeper gateway: cannot reach the upstream {base} ({reason})"
        )


def _client(base: str, timeout: httpx.Timeout) -> httpx.AsyncClient:
    """The client for one upstream (see :class:`Upstream` for what must hold)."""
    host = httpx.URL(base).host
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=64)
    try:
        return httpx.AsyncClient(
            timeout=timeout, limits=limits, trust_env=not loopback,
            headers={"accept-encoding": "identity"},
        )  # fmt: skip
    except (ValueError, ImportError) as exc:  # a proxy variable httpx cannot use (socks)
        raise ConfigError(f"cannot use the proxy from the environment: {exc}") from exc


async def _drained(response: httpx.Response) -> bytes:
    """The rest of the raw body; the connection goes back to the pool (or is closed)."""
    try:
        return b"".join([chunk async for chunk in response.aiter_raw()])
    finally:
        await response.aclose()


def response_headers(response: httpx.Response) -> list[tuple[str, str]]:
    """The upstream's response headers for the client (every value of a repeated one)."""
    return forward_response_headers(response.headers.multi_items())


def error_headers(exc: UpstreamHTTPError) -> list[tuple[str, str]]:
    """The upstream's error headers for the client (content type included)."""
    return [(k, v) for k, v in exc.headers if k.lower() != "content-type"] + [
        ("content-type", exc.media_type)
    ]
