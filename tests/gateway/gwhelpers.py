"""Helpers of the gateway tests: settings for a loopback upstream, an app client."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx

from windowkeeper.core.config import CompressionConfig
from windowkeeper.gateway import GatewaySettings, create_app
from windowkeeper.store import SessionStore
from windowkeeper.testing import OpenAITestServer

MODEL = "test-model"


def settings_for(server: OpenAITestServer, **overrides: Any) -> GatewaySettings:
    values: dict[str, Any] = {
        "upstream_base_url": server.base_url,
        "context_lengths": {MODEL: 1_000_000},
        "timeout": 10.0,
        # These tests follow the gateway through summary compactions: pruning alone
        # (which would be enough for their sessions) is given a target it cannot reach.
        "compression": CompressionConfig(prune_only_ratio=0.01),
    }
    values.update(overrides)
    return GatewaySettings(**values)


@asynccontextmanager
async def gateway(
    settings: GatewaySettings, store: SessionStore | None = None
) -> AsyncIterator[httpx.AsyncClient]:
    """A client of a fresh gateway app (lifespan started and shut down around it)."""
    app = create_app(settings, store=store)
    async with app.lifespan():
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as client:
            yield client


def chat_body(messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"model": MODEL, "messages": messages, **extra}
