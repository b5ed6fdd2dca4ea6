"""What every part of a request's flow shares: settings, upstreams, sessions, store, metrics."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

import anyio.to_thread

from ..loop.background import Workers
from ..store import SessionStore
from .bodies import BodyParser
from .collector import NoCollector
from .metrics import Metrics
from .persist import SessionPersistence
from .settings import GatewaySettings
from .table import SessionTable
from .upstream import Upstream

T = TypeVar("T")


class GatewayCore:
    """The gateway's shared state (:class:`~windowkeeper.gateway.service.Gateway` adds the
    request entry points)."""

    def __init__(
        self,
        settings: GatewaySettings,
        *,
        store: SessionStore | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        self.upstream = Upstream(settings)
        self.sessions = SessionTable(settings.max_sessions, settings.max_session_bytes)
        self.store = store
        self.persistence = SessionPersistence(store) if store is not None else None
        self.clock = clock
        self.metrics = Metrics()
        self.workers = Workers(settings.compression.background_workers)
        """The gateway's background compactions, across its sessions (bounded)."""
        self.passthrough = 0
        self.bodies = BodyParser()
        """Request bodies parsed incrementally (an agent re-sends its history)."""
        self.windows: dict[str, int] = {}
        """Windows found for models (the upstream's listing, installed metadata)."""
        self.collector: NoCollector = NoCollector()
        """What the garbage collector sees of the sessions (``serve`` freezes them)."""

    async def aclose(self) -> None:
        await self.upstream.aclose()

    async def run(self, heavy: bool, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)``, in a worker thread when it may take long or touches the store
        (``heavy``: a store waiting on a lock must not stall every other session)."""
        if heavy:
            return await anyio.to_thread.run_sync(fn, *args)
        return fn(*args)
