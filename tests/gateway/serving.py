"""A gateway under a real uvicorn server on loopback (a background thread), for the tests
that use the official SDKs as the agents."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn

from windowkeeper.gateway import GatewaySettings, create_app
from windowkeeper.store import SessionStore
from windowkeeper.testing import unused_port
from windowkeeper.testing.loopback import LoopbackUpstream

MODEL = "test-model"


def loopback_settings(upstream: LoopbackUpstream, **overrides: Any) -> GatewaySettings:
    values: dict[str, Any] = {
        "upstream_base_url": upstream.base_url,
        "anthropic_base_url": upstream.anthropic_url,
        "context_lengths": {MODEL: 1_000_000},
        "timeout": 10.0,
    }
    values.update(overrides)
    return GatewaySettings(**values)


@contextmanager
def serving(
    settings: GatewaySettings, store: SessionStore | None = None, **config: Any
) -> Iterator[str]:
    """The gateway's base URL (``http://127.0.0.1:PORT``) while uvicorn serves it (on
    uvicorn's httptools protocol, as ``windowkeeper serve`` runs it)."""
    with running(create_app(settings, store=store), lifespan="on", **config) as base:
        yield base


@contextmanager
def running(app: Any, **config: Any) -> Iterator[str]:
    """Any ASGI ``app`` under uvicorn with httptools (``config`` overrides)."""
    port = unused_port()
    options = {"host": "127.0.0.1", "port": port, "log_level": "warning", "http": "httptools",
               "lifespan": "off", **config}  # fmt: skip
    server = uvicorn.Server(uvicorn.Config(app, **options))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the server did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=20)
