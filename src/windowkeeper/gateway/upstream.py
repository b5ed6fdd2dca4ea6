"""Forwarding to the upstream OpenAI-compatible API (the only module that speaks httpx).

What must hold: upstream 4xx/5xx answers reach the caller as :class:`UpstreamHTTPError`
with their status, body and content type intact (the route passes them through);
transport failures become :class:`UpstreamUnreachable` (502, or 504 for a timeout) with an
OpenAI-style error body; hop-by-hop headers are never forwarded in either direction, and
``X-Windowkeeper-*`` headers stay between the client and the gateway.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from ..core.errors import UpstreamError
from ..core.messages import to_json
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


def error_body(message: str, kind: str, code: str | None = None) -> dict[str, Any]:
    """An OpenAI-style error object (clients and SDKs parse ``error.message``)."""
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


class UpstreamHTTPError(UpstreamError):
    """The upstream answered with an error status; passed through to the client unless it
    is a context overflow (``status_code`` and ``body`` are what the overflow classifier
    reads)."""

    def __init__(
        self, status_code: int, content: bytes, headers: Mapping[str, str], media_type: str
    ) -> None:
        self.status_code = status_code
        self.content = content
        self.headers = dict(headers)
        self.media_type = media_type
        self.body = _decode(content)
        super().__init__(f"the upstream answered HTTP {status_code}")


class UpstreamUnreachable(UpstreamError):
    """The upstream could not be reached or did not answer in time."""

    def __init__(self, status_code: int, message: str) -> None:
        self.status_code = status_code
        super().__init__(message)

    def body(self) -> dict[str, Any]:
        return error_body(str(self), "upstream_error", "bad_gateway")


@dataclass(frozen=True)
class Reply:
    """A complete upstream answer (status < 400)."""

    status_code: int
    content: bytes
    headers: dict[str, str]
    media_type: str

    def json(self) -> object:
        return _decode(self.content)


def _decode(content: bytes) -> object:
    try:
        return json.loads(content) if content else None
    except ValueError:
        return content.decode("utf-8", "replace")


def forward_request_headers(headers: Mapping[str, str], api_key: str | None) -> dict[str, str]:
    """The client's headers minus hop-by-hop and gateway ones; the configured key (when
    set) replaces the client's ``Authorization``."""
    named = _connection_named(headers)
    out = {
        k: v
        for k, v in headers.items()
        if (low := k.lower()) not in _REQUEST_DROP
        and low not in named
        and not low.startswith(OWN_HEADER_PREFIX)
    }
    if api_key:
        out = {k: v for k, v in out.items() if k.lower() != "authorization"}
        out["Authorization"] = f"Bearer {api_key}"
    return out


def _connection_named(headers: Mapping[str, str]) -> set[str]:
    """Headers the ``Connection`` header declares hop-by-hop (RFC 9110 §7.6.1)."""
    values = (v for k, v in headers.items() if k.lower() == "connection")
    return {name.strip().lower() for value in values for name in value.split(",")}


def forward_response_headers(headers: Mapping[str, str]) -> dict[str, str]:
    named = _connection_named(headers)
    return {
        k: v
        for k, v in headers.items()
        if (low := k.lower()) not in _RESPONSE_DROP and low not in named
    }


class Upstream:
    """One pooled async client to the upstream; ``transport`` is injectable (tests, proxies)."""

    def __init__(
        self, settings: GatewaySettings, transport: httpx.AsyncBaseTransport | None = None
    ) -> None:
        self.base_url = settings.upstream_base_url
        self.api_key = settings.upstream_api_key
        timeout = httpx.Timeout(settings.timeout, connect=min(settings.timeout, 10.0))
        self._client = httpx.AsyncClient(
            base_url=self.base_url, transport=transport, timeout=timeout
        )

    async def aclose(self) -> None:
        await self._client.aclose()

    def _headers(self, client_headers: Mapping[str, str]) -> dict[str, str]:
        headers = forward_request_headers(client_headers, self.api_key)
        headers["Content-Type"] = "application/json"
        return headers

    async def chat(self, body: Mapping[str, Any], headers: Mapping[str, str]) -> Reply:
        """POST ``/chat/completions`` and read the whole answer."""
        payload = to_json(body).encode()
        try:
            response = await self._client.post(
                "/chat/completions", content=payload, headers=self._headers(headers)
            )
        except httpx.HTTPError as exc:
            raise self._unreachable(exc) from exc
        return _reply_or_raise(response)

    async def models(self, headers: Mapping[str, str]) -> Reply:
        """GET ``/models`` (errors raised as :class:`UpstreamHTTPError` to pass through)."""
        forwarded = forward_request_headers(headers, self.api_key)
        try:
            response = await self._client.get("/models", headers=forwarded)
        except httpx.HTTPError as exc:
            raise self._unreachable(exc) from exc
        return _reply_or_raise(response)

    async def open_stream(
        self, body: Mapping[str, Any], headers: Mapping[str, str]
    ) -> httpx.Response:
        """POST a streaming request and return the open response once its status is known.

        An error status is read whole and raised (before any byte reached the client, so
        the caller may still recover and retry); the caller closes a returned response.
        """
        payload = to_json(body).encode()
        request = self._client.build_request(
            "POST", "/chat/completions", content=payload, headers=self._headers(headers)
        )
        try:
            response = await self._client.send(request, stream=True)
        except httpx.HTTPError as exc:
            raise self._unreachable(exc) from exc
        if response.status_code < 400:
            return response
        try:
            content = await response.aread()
        except httpx.HTTPError as exc:
            raise self._unreachable(exc) from exc
        finally:
            await response.aclose()
        raise UpstreamHTTPError(
            response.status_code, content, forward_response_headers(response.headers),
            _media_type(response),
        )  # fmt: skip

    async def iter_stream(self, response: httpx.Response) -> AsyncIterator[bytes]:
        """The decoded body of an open stream; a transport failure mid-stream is raised as
        :class:`UpstreamUnreachable` (the status is already sent: the caller reports it
        in-band)."""
        try:
            async for chunk in response.aiter_bytes():
                yield chunk
        except httpx.HTTPError as exc:
            raise self._unreachable(exc) from exc

    def _unreachable(self, exc: httpx.HTTPError) -> UpstreamUnreachable:
        # The exception type names the failure; its text may carry the URL, which is ours.
        if isinstance(exc, httpx.TimeoutException):
            return UpstreamUnreachable(
                504, f"windowkeeper gateway: the upstream {self.base_url} timed out "
                f"({type(exc).__name__})",
            )  # fmt: skip
        return UpstreamUnreachable(
            502, f"windowkeeper gateway: cannot reach the upstream {self.base_url} "
            f"({type(exc).__name__}: {exc})",
        )  # fmt: skip


def _media_type(response: httpx.Response) -> str:
    return str(response.headers.get("content-type", "application/json"))


def _reply_or_raise(response: httpx.Response) -> Reply:
    headers = forward_response_headers(response.headers)
    if response.status_code >= 400:
        raise UpstreamHTTPError(
            response.status_code, response.content, headers, _media_type(response)
        )
    return Reply(response.status_code, response.content, headers, _media_type(response))
