"""The gateway's upstream (httpx) through an HTTP proxy named by the environment, as the
README promises: a CONNECT tunnel to an https upstream, absolute-form requests to an http
one, credentials, a loopback upstream never proxied; a real proxy and real servers on
loopback (the proxy maps the upstream's name to 127.0.0.1)."""

from __future__ import annotations

import asyncio
import shutil
import ssl
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from windowkeeper.core.errors import ConfigError
from windowkeeper.gateway.settings import GatewaySettings
from windowkeeper.gateway.upstream import Upstream, UpstreamUnreachable, proxy_for

pytestmark = pytest.mark.anyio
NAME = "upstream.test"
PROXY_VARS = ("http_proxy", "https_proxy", "all_proxy", "no_proxy")


@pytest.fixture(autouse=True)
def clean_proxy_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROXY_VARS:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)


class ForwardProxy:
    """A minimal HTTP proxy: CONNECT tunnels and absolute-form forwarding; ``refuse``
    answers every request with that status instead."""

    def __init__(self, refuse: int | None = None) -> None:
        self.seen: list[tuple[str, str, str | None]] = []  # method, target, authorization
        self.refuse = refuse

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, target, _ = lines[0].split(" ", 2)
        auth = next((v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:])
                     if k.lower() == "proxy-authorization"), None)  # fmt: skip
        self.seen.append((method, target, auth))
        if self.refuse is not None:
            writer.write(f"HTTP/1.1 {self.refuse} No\r\nContent-Length: 0\r\n\r\n".encode())
            await writer.drain()
            writer.close()
            return
        if method == "CONNECT":
            port = int(target.rsplit(":", 1)[1])
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        else:  # absolute form: http://name:port/path -> origin form to 127.0.0.1:port
            rest = target.split("://", 1)[1]
            authority, _, path = rest.partition("/")
            port = int(authority.rsplit(":", 1)[1])
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", port)
            kept = [ln for ln in lines[1:] if not ln.lower().startswith("proxy-authorization")]
            up_writer.write("\r\n".join([f"{method} /{path} HTTP/1.1", *kept]).encode("latin-1"))
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.IncompleteReadError):
        pass
    finally:
        writer.close()


async def _answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """The upstream: reads one request and answers it with its request line."""
    head = await reader.readuntil(b"\r\n\r\n")
    length = next((int(v) for k, _, v in (ln.partition(":") for ln in head.decode().split("\r\n"))
                   if k.lower() == "content-length"), 0)  # fmt: skip
    await reader.readexactly(length)
    body = head.split(b"\r\n", 1)[0]
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
    await writer.drain()
    writer.close()


@asynccontextmanager
async def served(handler: object, context: ssl.SSLContext | None = None) -> AsyncIterator[int]:
    server = await asyncio.start_server(handler, "127.0.0.1", 0, ssl=context)  # type: ignore[arg-type]
    async with server:
        yield server.sockets[0].getsockname()[1]


async def _post(base_url: str) -> tuple[int, bytes]:
    upstream = Upstream(GatewaySettings(upstream_base_url=base_url, timeout=5))
    try:
        reply = await upstream.call("openai", "POST", "/chat/completions", {}, b'{"a": 1}')
        return reply.status_code, reply.content
    finally:
        await upstream.aclose()


async def test_an_http_upstream_is_asked_in_absolute_form(monkeypatch: pytest.MonkeyPatch) -> None:
    proxy = ForwardProxy()
    async with served(_answer) as upstream, served(proxy.handle) as port:
        monkeypatch.setenv("HTTP_PROXY", f"http://user:p%40ss@127.0.0.1:{port}")
        status, body = await _post(f"http://{NAME}:{upstream}/v1")
    assert (status, body) == (200, b"POST /v1/chat/completions HTTP/1.1")
    basic = "Basic dXNlcjpwQHNz"  # base64 of user:p@ss
    assert proxy.seen == [("POST", f"http://{NAME}:{upstream}/v1/chat/completions", basic)]


@pytest.fixture
def certificate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ssl.SSLContext:
    """A self-signed certificate for NAME, trusted by new client contexts (SSL_CERT_FILE)."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed: the https-through-a-proxy test needs a certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-keyout", str(key), "-out", str(cert), "-subj", f"/CN={NAME}",
         "-addext", f"subjectAltName=DNS:{NAME}"],
        check=True, capture_output=True,
    )  # fmt: skip
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    return context


async def test_an_https_upstream_is_reached_through_a_tunnel(
    monkeypatch: pytest.MonkeyPatch, certificate: ssl.SSLContext
) -> None:
    proxy = ForwardProxy()
    async with served(_answer, certificate) as upstream, served(proxy.handle) as port:
        monkeypatch.setenv("HTTPS_PROXY", f"127.0.0.1:{port}")
        status, body = await _post(f"https://{NAME}:{upstream}/v1")
    assert (status, body) == (200, b"POST /v1/chat/completions HTTP/1.1")
    assert proxy.seen == [("CONNECT", f"{NAME}:{upstream}", None)]


async def test_a_refused_tunnel_is_a_transport_error(monkeypatch: pytest.MonkeyPatch) -> None:
    proxy = ForwardProxy(refuse=407)
    async with served(proxy.handle) as port:
        monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{port}")
        with pytest.raises(UpstreamUnreachable, match="cannot reach the upstream") as refused:
            await _post(f"https://{NAME}/v1")
    assert refused.value.status_code == 502 and "407" in str(refused.value)


def test_which_upstreams_use_the_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "proxy.corp:3128")
    monkeypatch.setenv("NO_PROXY", "internal.corp, .svc.local,api.example.com:8443")
    assert proxy_for("https://api.openai.com/v1") == "http://proxy.corp:3128"
    assert proxy_for("http://api.openai.com/v1") is None  # no HTTP_PROXY set
    for direct in ("https://internal.corp", "https://a.internal.corp", "https://b.svc.local",
                   "https://api.example.com:8443", "https://127.0.0.1:9/v1",
                   "https://localhost/v1", "https://[::1]:8/v1"):  # fmt: skip
        assert proxy_for(direct) is None, direct
    monkeypatch.setenv("ALL_PROXY", "http://all.corp:1")
    assert proxy_for("http://api.openai.com/v1") == "http://all.corp:1"


async def test_a_loopback_upstream_is_never_proxied(monkeypatch: pytest.MonkeyPatch) -> None:
    proxy = ForwardProxy(refuse=403)
    async with served(_answer) as upstream, served(proxy.handle) as port:
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
            monkeypatch.setenv(name, f"http://127.0.0.1:{port}")
        status, body = await _post(f"http://127.0.0.1:{upstream}/v1")
    assert (status, body) == (200, b"POST /v1/chat/completions HTTP/1.1")
    assert proxy.seen == []


def test_a_proxy_we_cannot_use_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ALL_PROXY", "gopher://127.0.0.1:1080")
    with pytest.raises(ConfigError, match="only http:// proxies are supported"):
        Upstream(GatewaySettings(upstream_base_url="https://api.openai.com/v1"))
