"""HTTP routes of the gateway: thin adapters from Starlette requests to :class:`Gateway`.

No business logic here: every route hands the raw body and headers to the gateway and
returns its response. The interactive docs are off (the gateway is not an API to browse,
and the schema would describe only the proxy's envelope).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse

from .service import Gateway
from .upstream import error_body


def build_app(gateway: Gateway) -> FastAPI:
    """The FastAPI app around ``gateway``; its lifespan closes the upstream client."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await gateway.aclose()

    app = FastAPI(
        title="windowkeeper gateway",
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
        lifespan=lifespan,
    )
    app.state.gateway = gateway

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request) -> Response:
        return await gateway.chat(await request.body(), request.headers)

    @app.get("/v1/models")
    async def models(request: Request) -> Response:
        return await gateway.models(request.headers)

    @app.get("/healthz")
    async def healthz() -> dict[str, Any]:
        return {"status": "ok", "sessions": len(gateway.sessions)}

    @app.get("/v1/windowkeeper/sessions/{session_id}")
    async def session_status(session_id: str) -> Response:
        status = await gateway.status(session_id)
        if status is None:
            body = error_body(f"no session {session_id!r}", "not_found_error", "not_found")
            return JSONResponse(body, 404)
        return JSONResponse(status)

    return app
