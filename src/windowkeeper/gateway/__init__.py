"""The transparent gateway (design §8): point an agent's base URL here.

It speaks OpenAI Chat Completions (``/v1/chat/completions``), OpenAI Responses
(``/v1/responses``) and Anthropic Messages (``/v1/messages``), each forwarded to an
upstream of the same protocol. Each request carries the client's full history; the
gateway keeps, per session and branch, the compacted prefix that stands for the messages
it already compacted, substitutes it, runs the context manager's triggers (hygiene at
85% of the window, ≥ 5,000 messages, overflow recovery), answers the model's ``recall``
calls itself and forwards the rest. Needs the ``gateway`` extra::

    from windowkeeper.gateway import GatewaySettings, create_app
    app = create_app(GatewaySettings(upstream_base_url="http://127.0.0.1:8000/v1"))
"""

from __future__ import annotations

import time
from collections.abc import Callable

from ..store import SessionStore
from .app import build_app
from .asgi import GatewayApp
from .service import Gateway
from .settings import GatewaySettings, gateway_settings

__all__ = ["Gateway", "GatewayApp", "GatewaySettings", "create_app", "gateway_settings"]


def create_app(
    settings: GatewaySettings,
    *,
    store: SessionStore | None = None,
    clock: Callable[[], float] = time.time,
) -> GatewayApp:
    """The gateway as an ASGI app.

    Args:
        settings: upstreams, keys, windows, thresholds.
        store: persist sessions there (client messages, compactions, guard state, learned
            windows); several gateways may share one SQLite file or PostgreSQL database.
            Without one, sessions live in memory (LRU-bounded). The caller closes it.
        clock: wall-clock seconds for cooldowns and events.
    """
    return build_app(Gateway(settings, store=store, clock=clock))
