"""One model request's exchange with the upstream (see :mod:`.service` for the flow).

What must hold: the session lock is held only while choosing the branch, substituting,
running the preflight, recovering and settling — never across an upstream call; a body
the gateway did not change goes upstream as the client's bytes; every path settles the
turn or abandons it, once.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, Mapping
from typing import TYPE_CHECKING, Any

import anyio.to_thread

from ..core.errors import CompressionExhaustedError, InvalidMessagesError, UpstreamError
from ..core.messages import Message
from ..core.report import Receipt
from ..loop.estimates import prompt_tokens_of
from .auth import Caller
from .protocols import Parsed, Protocol, StreamFilter, StreamTap, dumps
from .protocols.base import recall_calls_in, request_bytes
from .protocols.sse import EventSplitter
from .recall import RECALL_TOOL, archive_in_memory, recall_answers, recall_schema, tool_for
from .replies import (
    Answer,
    StreamAnswer,
    error_answer,
    failure_answer,
    receipt_headers,
    stream_error,
)
from .selection import select, selects_off_loop
from .sessions import GatewaySession, Prepared, public_id
from .upstream import (
    Opened,
    UpstreamHTTPError,
    UpstreamUnreachable,
)
from .upstream import (
    decode as _decode,
)

if TYPE_CHECKING:
    from ..store import RecallTool
    from .core import GatewayCore

Failure = UpstreamError | CompressionExhaustedError


class Exchange:
    def __init__(
        self,
        gateway: GatewayCore,
        protocol: Protocol,
        parsed: Parsed,
        headers: Mapping[str, str],
        caller: Caller,
    ) -> None:
        self.gateway = gateway
        self.protocol = protocol
        self.parsed = parsed
        self.headers = headers
        self.caller = caller
        self.prepared: Prepared | None = None
        self.request: list[Message] = []
        self.extra: list[Message] = []
        self.recall: RecallTool | None = None
        self.outcome = "ok"
        self._reply_headers: list[tuple[str, str]] = []
        self._estimated: tuple[list[Message], int] | None = None
        self.receipt: Receipt | None = None
        """Of the compaction this request's preflight ran (none when it reused one)."""

    # --- the flow ------------------------------------------------------------------------

    async def run(self, session: GatewaySession, window: int) -> Answer | StreamAnswer:
        gateway = self.gateway
        async with session.lock:
            session.requests += 1
            try:
                heavy = gateway.persistence is not None or selects_off_loop(session, self.parsed)
                prepared = await gateway.run(heavy, select, gateway, session, self.parsed, window)
            except InvalidMessagesError as exc:
                self._count("invalid")
                return error_answer(self.protocol, 400, f"windowkeeper gateway: {exc}")
            self.prepared = prepared
            branch = prepared.branch
            manager = branch.manager
            heavy = self._estimate(prepared.working) >= manager.threshold
            before = manager.last_receipt
            self.request = await gateway.run(heavy, manager.preflight, prepared.working)
            if manager.last_receipt is not before:
                self.receipt = manager.last_receipt
            # A compaction stands for the client's history whatever the upstream answers:
            # installed (and archived) now, concurrent requests of the branch reuse it and
            # the model may recall what it archived in this very request.
            if branch.settle(prepared, self.request):
                await self._keep(prepared)
            if gateway.settings.recall_rounds:
                self.recall = tool_for(prepared.branch, gateway.store)
        if self.parsed.stream:
            return await self._stream()
        return await self._complete()

    async def _complete(self) -> Answer:
        opened = await self._send()
        read = opened if isinstance(opened, Answer) else await self._read(opened)
        if isinstance(read, Answer):
            await self._settle(None)
            return read
        reply, content = read
        usage = self.protocol.usage(reply)
        if self.recall is not None and isinstance(reply, dict):
            answered = await self._recall_rounds(reply, content)
            if isinstance(answered, Answer):
                await self._settle(usage)
                return answered
            content = answered
        await self._settle(usage)
        self._count(self.outcome)
        return Answer(200, [*self._reply_headers, *self._own_headers()], content)

    async def _read(self, response: Opened) -> Answer | tuple[object, bytes]:
        try:
            content = await self.gateway.upstream.read(self.protocol.target, response)
        except UpstreamUnreachable as exc:
            return self._failure(exc)
        self._reply_headers = response.headers
        return _decode(content), content

    async def _stream(self) -> Answer | StreamAnswer:
        opened = await self._send()
        if isinstance(opened, Answer):
            await self._settle(None)
            return opened
        response = opened
        tap = self.protocol.tap(self.parsed)
        rounds = self.protocol.stream_filter(RECALL_TOOL) if self.recall is not None else None
        usage: dict[str, Any] = {}
        events = self._relay(response, tap, rounds, usage)

        async def on_close() -> None:
            await events.aclose()
            await response.aclose()
            await self._settle(usage or tap.usage)
            self._count(self.outcome)

        headers = [*response.headers, *self._own_headers()]
        return StreamAnswer(response.status_code, headers, events, on_close)

    # --- upstream ------------------------------------------------------------------------

    async def _send(self) -> Answer | Opened:
        """Send the request, recovering from overflows: the open response (status < 400),
        or the client's error answer."""
        gateway, protocol = self.gateway, self.protocol
        attempt = 0
        while True:
            payload = self.body(self.request)
            started = time.perf_counter()
            try:
                response = await gateway.upstream.open(
                    protocol.target,
                    "POST",
                    self.parsed.upstream_path(),
                    self.headers,
                    payload,
                    self.caller.drop,
                )
                self._observe(started)
                return response
            except UpstreamHTTPError as exc:
                self._observe(started)
                attempt += 1
                recovered = await self._recover(exc, attempt)
                if recovered is not None:
                    return recovered
            except UpstreamUnreachable as exc:
                return self._failure(exc)

    async def _recover(self, error: UpstreamHTTPError, attempt: int) -> Answer | None:
        prepared = self.prepared
        assert prepared is not None
        session = prepared.branch.session
        async with session.lock:
            try:
                self.request = await self.gateway.run(
                    True, prepared.branch.manager.recover, error, self.request, attempt
                )
            except (UpstreamError, CompressionExhaustedError) as failure:
                prepared.collect()
                return self._failure(failure)
            prepared.branch.settle(prepared, self.request)
        return None

    def body(self, request: list[Message]) -> bytes:
        """The upstream body for ``request``: the client's bytes when nothing changed, the
        cached prefix plus the client's own units after substitution, else a conversion."""
        prepared, protocol, parsed = self.prepared, self.protocol, self.parsed
        assert prepared is not None
        # Design §1: strict providers get valid pairing, whatever the client sent (an
        # orphan result, a call without its result); a repaired request is converted.
        request = prepared.branch.clean.sanitized(request)
        extra = [recall_schema(protocol)] if self.recall is not None else []
        made = prepared.made
        if self.extra:
            system, units = protocol.wire([*request, *self.extra], made)
        elif request is prepared.client:
            if not extra and not prepared.private:
                return protocol.passthrough(parsed)
            system, units = (
                protocol.wire(request, made) if prepared.private else (parsed.system, parsed.units)
            )
        elif request is prepared.start and prepared.substituted:
            system, units = prepared.prefix_wire
            units = [*units, *parsed.units[prepared.client_units :]]
        else:
            system, units = protocol.wire(request, made)
        return request_bytes(protocol.body_with(parsed, system, units, extra))

    # --- recall --------------------------------------------------------------------------

    async def _recall_rounds(self, reply: dict[str, Any], content: bytes) -> bytes | Answer:
        """Answer the model's recall calls until it answers without them (bounded)."""
        protocol, gateway = self.protocol, self.gateway
        assert self.recall is not None
        for round_ in range(gateway.settings.recall_rounds + 1):
            turn = protocol.reply_turn(reply)
            calls = recall_calls_in(turn.get("tool_calls") or [], RECALL_TOOL) if turn else []
            if not calls or turn is None:
                return content
            others = len(turn.get("tool_calls") or []) > len(calls)
            if others or round_ == gateway.settings.recall_rounds:
                return dumps(protocol.without_calls(reply, RECALL_TOOL))
            answers = await anyio.to_thread.run_sync(recall_answers, self.recall, turn, calls)
            gateway.metrics.recall_calls.inc(len(calls))
            self.extra += answers
            opened = await self._send()
            read = opened if isinstance(opened, Answer) else await self._read(opened)
            if isinstance(read, Answer):
                return read
            reply_value, content = read
            if not isinstance(reply_value, dict):
                return content
            reply = reply_value
        return content

    async def _relay(
        self,
        response: Opened,
        tap: StreamTap,
        rounds: StreamFilter | None,
        usage: dict[str, Any],
    ) -> AsyncGenerator[bytes, None]:
        """The client's stream: the upstream's events (through the recall filter, over
        as many rounds as the model calls recall), usage captured from the first."""
        gateway, protocol = self.gateway, self.protocol
        for round_ in range(gateway.settings.recall_rounds + 1):
            try:
                async for out in self._events(response, tap, rounds):
                    yield out
            except UpstreamUnreachable as exc:
                self.outcome = "upstream_error"
                gateway.metrics.error("stream_cut")
                yield stream_error(protocol, str(exc))
                return
            if round_ == 0:
                usage.update(tap.usage)
            if rounds is None:
                return
            calls, turn = rounds.calls(), rounds.turn()
            last = round_ == gateway.settings.recall_rounds
            if not calls or turn is None or rounds.other_calls() or last:
                yield rounds.finish()
                return
            assert self.recall is not None
            self.extra += await anyio.to_thread.run_sync(recall_answers, self.recall, turn, calls)
            gateway.metrics.recall_calls.inc(len(calls))
            rounds.next_round()
            opened = await self._send()
            if isinstance(opened, Answer):
                yield stream_error(protocol, opened.body.decode("utf-8", "replace"))
                return
            response = opened

    async def _events(
        self, response: Opened, tap: StreamTap, rounds: StreamFilter | None
    ) -> AsyncGenerator[bytes, None]:
        """One upstream stream's events for the client (the response is closed after)."""
        splitter = EventSplitter()
        try:
            async for chunk in self.gateway.upstream.iter_stream(self.protocol.target, response):
                for event in splitter.feed(chunk):
                    if tap.keep(event):
                        out = rounds.feed(event) if rounds is not None else event
                        if out:
                            yield out
            rest = splitter.flush()
            if rest:
                yield rest
        finally:
            await response.aclose()

    # --- settling ------------------------------------------------------------------------

    async def _settle(self, usage: Mapping[str, Any] | None) -> None:
        """End the turn: the post-response trigger with the usage (``None``: the request
        failed, only what it compacted is kept), the new prefix, the archive, the store."""
        prepared = self.prepared
        if prepared is None:
            return
        branch, gateway = prepared.branch, self.gateway
        async with branch.session.lock:
            if usage is not None:
                manager = branch.manager
                heavy = prompt_tokens_of(usage) >= manager.threshold
                final = await gateway.run(heavy, manager.after_response, dict(usage), self.request)
                branch.settle(prepared, final)
                branch.account(final, self._estimate(final))
            if usage is not None or prepared.installed is not None:
                await self._keep(prepared)

    async def _keep(self, prepared: Prepared) -> None:
        """Store the request's client messages and compactions (or archive them in memory
        without a store); under the session's lock."""
        persistence = self.gateway.persistence
        if persistence is not None:
            await anyio.to_thread.run_sync(persistence.save, prepared.branch, prepared)
        else:
            archive_in_memory(prepared.branch, prepared)

    # --- answers -------------------------------------------------------------------------

    def _own_headers(self) -> list[tuple[str, str]]:
        prepared = self.prepared
        if prepared is None:
            return []
        changed = self.request is not prepared.client
        estimate = self._estimate(self.request) if self.request else 0
        return [
            ("x-windowkeeper-session", public_id(prepared.branch.session.key)),
            ("x-windowkeeper-compacted", "true" if changed else "false"),
            ("x-windowkeeper-prompt-tokens-estimate", str(estimate)),
            *receipt_headers(self.receipt),
        ]

    def _estimate(self, messages: list[Message]) -> int:
        """The manager's estimate of ``messages``, once per list object."""
        known = self._estimated
        if known is not None and known[0] is messages:
            return known[1]
        assert self.prepared is not None
        checked = self.protocol.validated(self.prepared.made)
        value = self.prepared.branch.manager.estimate(messages, checked)
        self._estimated = (messages, value)
        return value

    def _failure(self, exc: Failure) -> Answer:
        """The client's view of a failed turn (upstream errors pass through unchanged)."""
        answer, outcome = failure_answer(self.protocol, exc, self._own_headers())
        self.gateway.metrics.error(type(exc).__name__)
        self._count(outcome)
        return answer

    def _observe(self, started: float) -> None:
        metrics = self.gateway.metrics
        metrics.observe_upstream(self.protocol.name, time.perf_counter() - started)

    def _count(self, outcome: str) -> None:
        self.gateway.metrics.count_request(self.protocol.name, outcome)
