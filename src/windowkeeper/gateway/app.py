"""The admin endpoints (FastAPI) behind the lean model path of :mod:`.asgi`.

``/healthz`` and ``/metrics`` need no key (they carry no session data);
``/v1/windowkeeper/sessions/{id}`` shows a session's counts, and ``POST …/{id}/undo`` takes
back its newest compaction (:mod:`.undo`), for the caller that owns it only (the lean
layer authenticated the caller). The interactive docs are off.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse

from .asgi import GatewayApp, state_caller
from .metrics import CONTENT_TYPE
from .protocols import CHAT
from .service import Gateway
from .undo import undo_session


def build_app(gateway: Gateway) -> GatewayApp:
    """The gateway's ASGI app; its lifespan closes the upstream pools."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await gateway.aclose()

    admin = FastAPI(
        title="windowkeeper gateway", docs_url=None, redoc_url=None, openapi_url=None,
        lifespan=lifespan,
    )  # fmt: skip
    admin.state.gateway = gateway

    @admin.get("/healthz")
    async def healthz() -> dict[str, Any]:
        return gateway.health()

    @admin.get("/metrics")
    async def metrics() -> Response:
        gateway.metrics.sessions.set(len(gateway.sessions))
        return Response(gateway.metrics.render(), media_type=CONTENT_TYPE)

    @admin.get("/v1/windowkeeper/sessions/{session_id}")
    async def session_status(session_id: str, request: Request) -> Response:
        status = await gateway.status(session_id, state_caller(request.state))
        if status is None:
            body = CHAT.error_body(404, f"no session {session_id!r}", "not_found")
            return JSONResponse(body, 404)
        return JSONResponse(status)

    @admin.post("/v1/windowkeeper/sessions/{session_id}/undo")
    async def session_undo(session_id: str, request: Request) -> Response:
        answer = await undo_session(gateway, session_id, state_caller(request.state))
        return JSONResponse(answer.body, answer.status)

    return GatewayApp(gateway, admin)
