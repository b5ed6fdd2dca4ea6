"""The gateway's request flow: parse, session and branch, substitution, triggers, upstream.

One model request, whatever its protocol: the body is parsed once; the session's branch
is chosen and its compacted prefix substituted under the session's lock; the manager's
preflight runs (design §2); the lock is released for the upstream call; recovery
(:meth:`ContextManager.recover`) and settling (:meth:`ContextManager.after_response`,
the new prefix, persistence) retake it. A request the gateway did not change goes
upstream as the client's own bytes.

What must hold: the lock never spans an upstream call; CPU work that may be long
(compaction, conversion of a long unseen history) and every store access run in a worker
thread; errors reach the client in its protocol's shape; no message text is ever logged.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import anyio.to_thread

from ..core.errors import CompressionExhaustedError, InvalidMessagesError, StoreError, UpstreamError
from ..loop.estimates import prompt_tokens_of
from ..summary.feasibility import resolve_context_length, window_from_listing
from .auth import Caller
from .core import GatewayCore
from .exchange import Exchange
from .forward import count_tokens, passthrough
from .protocols import Parsed, Protocol
from .replies import Answer, StreamAnswer, error_answer
from .sessions import SESSION_HEADER, GatewaySession, public_id, session_key
from .upstream import UpstreamHTTPError, UpstreamUnreachable

log = logging.getLogger("windowkeeper.gateway")


class Gateway(GatewayCore):
    """The transparent gateway (design §8); the ASGI layer calls :meth:`handle`."""

    # --- model requests ------------------------------------------------------------------

    async def handle(
        self,
        protocol: Protocol,
        raw: bytes,
        headers: Mapping[str, str],
        caller: Caller,
        query: str = "",
    ) -> Answer | StreamAnswer:
        """Answer one model request (a complete answer or a stream)."""
        parsed = self._parse(protocol, raw, query, caller)
        if isinstance(parsed, Answer):
            return parsed
        if parsed.continues is not None:
            self.passthrough += 1
            self.metrics.passthrough.labels(parsed.continues).inc()
            return await passthrough(self, protocol, parsed, headers, caller)
        exchange = Exchange(self, protocol, parsed, headers, caller)
        window = await self.window_of(protocol, parsed.model, headers)
        if window is None:
            return error_answer(
                protocol, 400, unknown_window(parsed.model), "context_length_unknown"
            )
        texts = protocol.first_texts(parsed)
        key = session_key(caller.scope, protocol.name, texts, headers.get(SESSION_HEADER))
        session = self.sessions.get(key) or self.sessions.add(
            GatewaySession(
                key,
                protocol,
                self.settings,
                self.clock,
                self.metrics.on_event,
                self.metrics.on_prepared,
                self.workers,
            )
        )
        self.metrics.sessions.set(len(self.sessions))
        self.collector.begin()
        try:
            return await exchange.run(session, window)
        finally:
            self.sessions.account(session)
            self.collector.end()

    async def count_tokens(
        self,
        protocol: Protocol,
        raw: bytes,
        headers: Mapping[str, str],
        caller: Caller,
        query: str = "",
    ) -> Answer:
        """``/v1/messages/count_tokens``: what the messages would cost as the gateway would
        send them (the compacted prefix substituted; nothing stored, nothing compacted)."""
        parsed = self._parse(protocol, raw, query, caller)
        if isinstance(parsed, Answer):
            return parsed
        key = session_key(
            caller.scope, protocol.name, protocol.first_texts(parsed), headers.get(SESSION_HEADER)
        )
        return await count_tokens(self, protocol, parsed, headers, caller, self.sessions.get(key))

    def _parse(self, protocol: Protocol, raw: bytes, query: str, caller: Caller) -> Parsed | Answer:
        """The parsed request, or the client's error answer (bad body, no such upstream)."""
        try:
            body = self.bodies.parse(raw, protocol.history_key, caller.scope, protocol.name)
            parsed = protocol.parse(raw, body)
        except (InvalidMessagesError, RecursionError) as exc:
            self.metrics.count_request(protocol.name, "invalid")
            reason = exc if isinstance(exc, InvalidMessagesError) else "JSON nested too deeply"
            return error_answer(protocol, 400, f"windowkeeper gateway: {reason}")
        if not self.upstream.serves(protocol.target):
            return error_answer(protocol, 404, _not_served(protocol))
        parsed.query = query
        return parsed

    # --- models, windows, status ---------------------------------------------------------

    async def models(
        self, protocol: Protocol, headers: Mapping[str, str], caller: Caller
    ) -> Answer:
        try:
            reply = await self.upstream.call(
                protocol.target,
                "GET",
                "/models" if protocol.target == "openai" else "/v1/models",
                headers,
                drop=caller.drop,
            )
        except UpstreamHTTPError as exc:
            return Answer(exc.status_code, exc.headers, exc.content)
        except UpstreamUnreachable as exc:
            return error_answer(protocol, exc.status_code, str(exc))
        return Answer(reply.status_code, reply.headers, reply.content)

    async def window_of(
        self, protocol: Protocol, model: str, headers: Mapping[str, str]
    ) -> int | None:
        """Configured → the upstream's ``/models`` → installed metadata → None."""
        configured = self.settings.configured_context_length(model)
        if configured is not None:
            return configured
        known = self.windows.get(model)
        if known is not None:
            return known
        found: int | None = None
        if self.settings.models_lookup and protocol.target == "openai":
            try:
                reply = await self.upstream.call("openai", "GET", "/models", headers)
            except UpstreamError as exc:
                log.info("no window for %s from the upstream's /models: %s", model, exc)
            else:
                found = window_from_listing(model, reply.json())
        if found is None:
            found = await anyio.to_thread.run_sync(resolve_context_length, model)
        if found is not None:
            self.windows[model] = found
        return found

    async def status(self, session_id: str, caller: Caller) -> dict[str, Any] | None:
        """A session's counts and thresholds (never message text), only for its own caller.

        One id may name a session of each protocol (a client that speaks chat, Responses
        and Messages under one ``X-Windowkeeper-Session``): all of them are under
        ``protocols``, and the first (chat, responses, messages) is also the top level."""
        found: dict[str, dict[str, Any]] = {}
        for name in _PROTOCOL_NAMES:
            one = await self._protocol_status(f"{caller.scope}:{name}:{session_id}")
            if one is not None:
                found[name] = one
        if not found:
            return None
        return {**next(iter(found.values())), "protocols": found}

    async def _protocol_status(self, key: str) -> dict[str, Any] | None:
        session = self.sessions.get(key)
        if session is not None:
            return {**session.status(), "loaded": True}
        if self.persistence is None:
            return None
        return await anyio.to_thread.run_sync(self.persistence.status, key)

    def health(self) -> dict[str, Any]:
        return {
            "status": "ok",
            "sessions": len(self.sessions),
            "passthrough_requests": self.passthrough,
        }

    def usage_tokens(self, usage: Mapping[str, Any]) -> int:
        return prompt_tokens_of(usage)


_PROTOCOL_NAMES = ("chat", "responses", "messages")


def _not_served(protocol: Protocol) -> str:
    option = "--anthropic-upstream" if protocol.target == "anthropic" else "--upstream"
    return (
        f"windowkeeper gateway: this gateway has no {protocol.target} upstream; start it "
        f"with {option} URL to serve {protocol.path}"
    )


def unknown_window(model: str) -> str:
    return (
        f"windowkeeper gateway: the context window of model {model!r} is unknown (not "
        "configured, not stated by the upstream's /models listing). Configure it: "
        f"`windowkeeper serve --context-length N` for every model, `--model-context "
        f"{model}=N` for this one, or model.context_length in the config file."
    )


__all__ = ["CompressionExhaustedError", "Gateway", "StoreError", "public_id", "unknown_window"]
