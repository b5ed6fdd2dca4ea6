"""Per-session compacted prefixes: "client messages [0, L) are represented by list C".

Clients resend their whole history with every request. A session remembers the digest of
the client messages it compacted (``[0, L)``) and the compacted list ``C`` that stands for
them. A request whose first ``L`` messages have that digest is rewritten to
``C + client[L:]``; any other request (an edited history, another conversation with the
same fingerprint) starts over from the client's own list. After a request, a working list
that is not the object the turn started from is a new compaction of the whole client list,
so the new prefix covers every client message (``L = len(client)``).

What must hold: the substitution is all-or-nothing and keyed by content, never by position
alone; a session is only touched under its ``asyncio.Lock`` (the manager's state machine
and the prefix are not safe to interleave); nothing here logs message text.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..core.messages import Message, ToolSchema, content_text
from ..core.report import CompressionResult
from ..engine.compressor import ContextCompressor
from ..loop.events import Event
from ..loop.manager import ContextManager
from ..summary.llm.summarizer import LLMSummarizer
from .settings import GatewaySettings

log = logging.getLogger("windowkeeper.gateway")

SESSION_HEADER = "x-windowkeeper-session"
MAX_SESSION_ID = 200
MIN_HYGIENE_MESSAGES = 4


# --- fingerprints (pure) ------------------------------------------------------------------


# Sorted keys: a client that re-serializes with another key order is the same history.
# One encoder instance: json.dumps with options would build a new one per message.
_ENCODER = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


def _canonical(message: Message) -> bytes:
    return _ENCODER.encode(message).encode("utf-8", "surrogatepass")


def prefix_digests(messages: Sequence[Message], ends: Iterable[int]) -> dict[int, str]:
    """The digest of ``messages[:end]`` for every ``end`` (one pass over the list)."""
    wanted = sorted({end for end in ends if 0 <= end <= len(messages)})
    hasher = hashlib.blake2b(digest_size=16)
    out: dict[int, str] = {}
    index = 0
    for end in wanted:
        while index < end:
            hasher.update(_canonical(messages[index]))
            hasher.update(b"\x1e")  # record separator: [a, bc] and [ab, c] differ
            index += 1
        out[end] = hasher.hexdigest()
    return out


def session_key(messages: Sequence[Message], header: str | None) -> str:
    """The session id: the client's ``X-Windowkeeper-Session`` header, else a stable
    fingerprint of the first system prompt and the first user message."""
    if header and header.strip():
        return header.strip()[:MAX_SESSION_ID]
    system = next((m for m in messages if m.get("role") in ("system", "developer")), None)
    first = next((m for m in messages if m.get("role") == "user"), None)
    hasher = hashlib.blake2b(digest_size=12)
    for message in (system, first):
        text = content_text(message.get("content")) if message else ""
        hasher.update(text.encode("utf-8", "replace"))
        hasher.update(b"\x1e")
    return "fp-" + hasher.hexdigest()


@dataclass(frozen=True)
class Prefix:
    """Client messages ``[0, covered)`` (with ``digest``) are represented by ``messages``."""

    covered: int = 0
    digest: str = ""
    messages: tuple[Message, ...] = ()


def substitute(prefix: Prefix, client: list[Message], digest: str | None) -> list[Message] | None:
    """``C + client[L:]`` when ``digest`` (of ``client[:L]``) matches, the client's list
    itself without a prefix, ``None`` when the client's history no longer matches."""
    if prefix.covered == 0:
        return client
    if len(client) < prefix.covered or digest != prefix.digest:
        return None
    return [*prefix.messages, *client[prefix.covered :]]


# --- sessions -----------------------------------------------------------------------------


class _RecordingCompressor(ContextCompressor):
    """The built-in compressor, remembering this request's compactions (input, result)
    so their archived originals can be stored for recall."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.compacted: list[tuple[list[Message], CompressionResult]] = []

    def compress(
        self,
        messages: list[Message],
        *,
        force: bool = False,
        focus_topic: str | None = None,
        current_tokens: int | None = None,
    ) -> CompressionResult:
        result = super().compress(
            messages, force=force, focus_topic=focus_topic, current_tokens=current_tokens
        )
        if result.report.compressed:
            self.compacted.append((messages, result))
        return result


@dataclass
class Prepared:
    """One request after substitution: the client's list, the list the session stood for
    before this request (``start``), and what the turn starts from (``working``)."""

    client: list[Message]
    start: list[Message]
    working: list[Message]
    digests: dict[int, str]
    restarted: bool

    def digest(self, *ends: int) -> dict[int, str]:
        """Digests of ``client[:end]``, computed on first use (hashing a long history is
        the gateway's main per-request cost, so only what is needed is hashed)."""
        missing = [end for end in ends if end not in self.digests]
        if missing:
            self.digests.update(prefix_digests(self.client, missing))
        return self.digests


def _log_event(key: str, event: Event) -> None:
    # Event messages are built from figures only, never from conversation text.
    log.info("session %s: %s", key, event.message)


def new_manager(
    settings: GatewaySettings,
    key: str,
    window: int,
    model: str | None,
    clock: Callable[[], float],
) -> tuple[ContextManager, _RecordingCompressor]:
    """A manager around a fresh compressor that triggers at the hygiene threshold."""
    summarizer = (
        LLMSummarizer(replace(settings.summary, fallback_model=model or None))
        if settings.summary is not None
        else None
    )
    compressor = _RecordingCompressor(
        settings.compressor_config(),
        context_length=window,
        model=model,
        clock=clock,
        summarizer=summarizer,
        summary_context_length=settings.summary.context_length if settings.summary else None,
    )
    manager = ContextManager(
        compressor,
        clock=clock,
        max_attempts=settings.compression.max_attempts,
        on_event=lambda event: _log_event(key, event),
    )
    return manager, compressor


class GatewaySession:
    """The state of one session. Touch it only while holding ``lock``."""

    def __init__(
        self,
        key: str,
        settings: GatewaySettings,
        window: int,
        model: str | None,
        clock: Callable[[], float],
    ) -> None:
        self.key = key
        self.settings = settings
        self.clock = clock
        self.window = window
        self.manager, self.compressor = new_manager(settings, key, window, model, clock)
        self.prefix = Prefix()
        self.lock = asyncio.Lock()
        self.requests = self.compactions = self.restarts = 0
        self.client_messages = self.sent_messages = self.last_estimate = 0
        # Persistence bookkeeping (store-backed gateways only): the store session, how
        # many client messages it holds and their digest.
        self.store_id: str | None = None
        self.stored = 0
        self.stored_digest = ""
        self.loaded = False  # restored from the store (or found absent there)

    def use_model(self, model: str, window: int) -> None:
        """A model switch re-derives the thresholds (a limit learned from an overflow
        error is kept while the configured window stays the same)."""
        if window != self.window:
            self.window = window
            self.compressor.update_model(model=model, context_length=window)

    def prepare(self, client: list[Message], tools: list[ToolSchema] | None) -> Prepared:
        """Substitute the compacted prefix (or start over) and apply the message-count
        hygiene trigger; the token triggers belong to the manager's turn."""
        self.manager.tools = tools
        self.compressor.tools = list(tools) if tools else None
        self.compressor.compacted.clear()
        covered = self.prefix.covered
        digests = prefix_digests(client, (covered,)) if covered else {}
        start = substitute(self.prefix, client, digests.get(covered))
        restarted = start is None
        if start is None:
            self.restart()
            start = client
        working = start
        limit = self.compressor.config.hygiene_hard_message_limit
        if len(working) >= max(limit, MIN_HYGIENE_MESSAGES):
            working = self.manager.compress(working)  # SPEC §4: too many messages
        self.requests += 1
        self.client_messages = len(client)
        return Prepared(client, start, working, digests, restarted)

    def settle(self, prepared: Prepared, final: list[Message]) -> bool:
        """Record the turn's final working list; True when it is a new compaction, which
        then stands for every client message of this request."""
        self.sent_messages = len(final)
        self.last_estimate = self.manager.estimate(final)
        if final is prepared.start:
            return False
        client = prepared.client
        digest = prepared.digest(len(client))[len(client)]
        self.prefix = Prefix(len(client), digest, tuple(final))
        self.compactions += 1
        return True

    def restart(self) -> None:
        """The client's history no longer matches: forget the prefix and the manager's
        calibration (a fresh compressor, so no guard state leaks between conversations)."""
        self.prefix = Prefix()
        self.restarts += 1
        model = self.compressor.model
        self.manager, self.compressor = new_manager(
            self.settings, self.key, self.window, model, self.clock
        )
        self.store_id, self.stored, self.stored_digest = None, 0, ""

    def status(self) -> dict[str, Any]:
        """Counts, thresholds and compactions; never message text."""
        compressor = self.compressor
        return {
            "session": self.key,
            "requests": self.requests,
            "client_messages": self.client_messages,
            "covered_messages": self.prefix.covered,
            "compacted_messages": len(self.prefix.messages),
            "sent_messages": self.sent_messages,
            "compactions": self.compactions,
            "restarts": self.restarts,
            "context_length": compressor.context_length,
            "window_tokens": self.manager.window,
            "threshold_tokens": self.manager.threshold,
            "hygiene_threshold": compressor.config.hygiene_threshold,
            "hard_message_limit": compressor.config.hygiene_hard_message_limit,
            "last_prompt_tokens": max(0, self.manager.last_prompt_tokens),
            "last_estimate_tokens": self.last_estimate,
            "compression_count": compressor.compression_count,
            "blocked_reason": compressor.get_status()["blocked_reason"],
            "store_session_id": self.store_id,
        }


class SessionTable:
    """Sessions by key, least recently used evicted first (a locked session never is)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._sessions: OrderedDict[str, GatewaySession] = OrderedDict()

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, key: str) -> GatewaySession | None:
        session = self._sessions.get(key)
        if session is not None:
            self._sessions.move_to_end(key)
        return session

    def add(self, session: GatewaySession) -> GatewaySession:
        """Insert ``session`` unless one with its key exists; returns the one kept."""
        existing = self._sessions.get(session.key)
        if existing is not None:
            return existing
        self._sessions[session.key] = session
        if len(self._sessions) > self.capacity:
            idle = [k for k, s in self._sessions.items() if not s.lock.locked()]
            for key in idle[: len(self._sessions) - self.capacity]:
                del self._sessions[key]
        return session
