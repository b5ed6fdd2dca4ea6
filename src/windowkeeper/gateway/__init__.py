"""The transparent OpenAI-compatible gateway (SPEC §9): point an agent's base URL here.

Each request carries the client's full history; the gateway keeps, per session, the
compacted prefix that stands for the messages it already compacted, substitutes it, runs
the context manager's triggers (hygiene at 85% of the window, ≥ 5,000 messages, overflow
recovery) and forwards the request upstream. Needs the ``gateway`` extra (FastAPI,
uvicorn)::

    from windowkeeper.gateway import GatewaySettings, create_app
    app = create_app(GatewaySettings(upstream_base_url="http://127.0.0.1:8000/v1"))
"""

from __future__ import annotations

import time
from collections.abc import Callable

import httpx
from fastapi import FastAPI

from ..store import SessionStore
from .app import build_app
from .service import Gateway
from .settings import GatewaySettings, gateway_settings

__all__ = ["Gateway", "GatewaySettings", "create_app", "gateway_settings"]


def create_app(
    settings: GatewaySettings,
    *,
    upstream_transport: httpx.AsyncBaseTransport | None = None,
    store: SessionStore | None = None,
    clock: Callable[[], float] = time.time,
) -> FastAPI:
    """The gateway as an ASGI app.

    Args:
        settings: upstream, windows, thresholds.
        upstream_transport: the httpx transport to the upstream (default: the network).
        store: persist sessions there (client messages, compactions, guard state);
            without one, sessions live in memory (LRU-bounded). The caller closes it.
        clock: wall-clock seconds for cooldowns and events.
    """
    gateway = Gateway(settings, upstream_transport=upstream_transport, store=store, clock=clock)
    return build_app(gateway)
