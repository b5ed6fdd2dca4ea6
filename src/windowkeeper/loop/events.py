"""Status events of the context manager: frozen values with enum kinds, delivered to a callback.

Events carry counts, token figures, durations and reason codes only, never message text,
so a UI or a log can show them without leaking the conversation. A callback that raises
is logged with its traceback and ignored: a broken status line must never break a turn.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..core.messages import Message
from ..core.report import CompressionReport, Receipt, Tier
from ..core.tokens import message_tokens

log = logging.getLogger("windowkeeper.loop.events")


class EventKind(enum.StrEnum):
    COMPACTION_STARTED = "compaction_started"
    COMPACTION_FINISHED = "compaction_finished"
    COMPACTION_ABORTED = "compaction_aborted"
    COMPACTION_SKIPPED = "compaction_skipped"
    OVERFLOW = "overflow"
    """A provider rejected a request as too large; recovery follows."""
    LIMIT_LEARNED = "limit_learned"
    """The provider stated the real context window; the engine now uses it."""
    IMAGES_STRIPPED = "images_stripped"
    HOOK_FAILED = "hook_failed"
    WARNING = "warning"
    BACKGROUND_STARTED = "background_started"
    """A compaction of the history as it stands is being prepared off the request path."""
    BACKGROUND_PREPARED = "background_prepared"
    """A background compaction is ready to be applied at the trigger."""
    BACKGROUND_DISCARDED = "background_discarded"
    """A background compaction was not applied (``reason``: a ``DiscardReason``)."""
    COMPACTION_DEFERRED = "compaction_deferred"
    """Past the trigger, under the hard mark: the request goes out unchanged while its
    compaction is prepared (``reason``: ``preparing``, ``started``, ``claimed`` by another
    process, or ``no_worker`` free; ``count``: such requests since the last compaction)."""


class Trigger(enum.StrEnum):
    """Which of the three triggers (or a manual call) started a compaction."""

    PREFLIGHT = "preflight"
    POST_RESPONSE = "post_response"
    RECOVERY = "recovery"
    MANUAL = "manual"


class WarningCode(enum.StrEnum):
    COMPRESSED_MANY_TIMES = "compressed_many_times"
    BLOCKED = "blocked"
    """Over the threshold but automatic compaction is blocked (see ``reason``)."""
    TRUNCATED = "truncated"
    """Compaction could not fit the window: the largest tool results were cut."""
    INPUT = "input"
    """The conversation has a defect worth fixing (a late system message, no user message)."""


@dataclass(frozen=True, kw_only=True)
class Event:
    """One status event. ``message`` is a human line built from the figures, never text
    from the conversation; ``reason`` is a machine-readable code (e.g. ``ineffective``)."""

    kind: EventKind
    message: str
    trigger: Trigger | None = None
    warning: WarningCode | None = None
    reason: str | None = None
    tokens_before: int | None = None
    tokens_after: int | None = None
    messages_before: int | None = None
    messages_after: int | None = None
    threshold: int | None = None
    attempt: int | None = None
    count: int | None = None
    duration_ms: float | None = None
    tier: Tier | None = None
    """Of a finished compaction: prune-only or with a summary."""
    receipt: Receipt | None = None
    """Of a finished compaction: what it cost (tokens, prompt cache, the agent's wait)."""


EventCallback = Callable[[Event], None]


def deliver(callback: EventCallback | None, event: Event) -> None:
    """Send ``event`` to ``callback``; a raising callback is logged and ignored."""
    log.debug("%s: %s", event.kind.value, event.message)
    if callback is None:
        return
    try:
        callback(event)
    # The callback is user code (a UI, a status line): any failure there is logged with
    # its traceback and must not break the agent's turn.
    except Exception:
        log.exception("the on_event callback raised on a %s event; ignored", event.kind.value)


class Reporter:
    """Builds and delivers the manager's events (the wording lives here, in one place).

    Warnings are deduplicated by key until :meth:`reset` (the situation changed: under
    the threshold again, or a compaction completed).
    """

    def __init__(self, callback: EventCallback | None) -> None:
        self.callback = callback
        self._warned: set[tuple[WarningCode, str]] = set()
        self._input_warned: set[tuple[WarningCode, str]] = set()  # not cleared by reset

    def emit(
        self, kind: EventKind, message: str, trigger: Trigger | None = None, **fields: Any
    ) -> None:
        deliver(self.callback, Event(kind=kind, message=message, trigger=trigger, **fields))

    def warn(self, code: WarningCode, key: str, message: str, **fields: Any) -> None:
        """A warning event, once per ``(code, key)``; ``reason`` is ``key`` up to a ``:``."""
        if (code, key) in self._warned:
            return
        self._warned.add((code, key))
        self.emit(EventKind.WARNING, message, warning=code, reason=key.split(":", 1)[0], **fields)

    def reset(self) -> None:
        self._warned.clear()

    def started(self, trigger: Trigger, tokens: int, messages: int, **fields: Any) -> None:
        self.emit(
            EventKind.COMPACTION_STARTED,
            f"compacting context (~{tokens:,} tokens)",
            trigger,
            tokens_before=tokens,
            messages_before=messages,
            **fields,
        )

    def result(self, report: CompressionReport, trigger: Trigger, **fields: Any) -> None:
        """Finished, aborted or skipped, with the report's figures."""
        figures = {
            "tokens_before": report.before_tokens,
            "tokens_after": report.after_tokens,
            "messages_before": report.before_messages,
            "messages_after": report.after_messages,
        }
        if report.compressed:
            text = (
                f"context compacted: {report.before_tokens:,} -> {report.after_tokens:,} "
                f"tokens, {report.before_messages} -> {report.after_messages} messages"
            )
            if report.tier is Tier.PRUNE:
                text += " (tool output pruned, no summary)"
            receipt = fields.get("receipt")
            if isinstance(receipt, Receipt):
                even = receipt.break_even_requests
                pays = "never pays off" if even is None else f"pays off after {even} request(s)"
                text += f"; {receipt.invalidated_tokens:,} cached tokens invalidated, {pays}"
            self.emit(
                EventKind.COMPACTION_FINISHED, text, trigger, tier=report.tier, **figures, **fields
            )
            return
        kind = EventKind.COMPACTION_ABORTED if report.aborted else EventKind.COMPACTION_SKIPPED
        reason = report.reason.value if report.reason else report.outcome.value
        self.emit(kind, report.detail or reason, trigger, reason=reason, **figures, **fields)

    def deferred(self, tokens: int) -> None:
        self.emit(
            EventKind.COMPACTION_SKIPPED,
            "preflight deferred until real usage arrives",
            Trigger.PREFLIGHT,
            reason="awaiting_real_usage",
            tokens_before=tokens,
        )

    def many_times(self, count: int) -> None:
        self.warn(
            WarningCode.COMPRESSED_MANY_TIMES,
            f"count:{count}",
            f"session compressed {count} times — accuracy may degrade; consider "
            "starting a new session",
            count=count,
        )

    def blocked(
        self,
        reason: str,
        tokens: int,
        threshold: int,
        kept: KeptParts | None,
        cause: str = "",
    ) -> None:
        """Automation blocked over the threshold, with the real cause: ``cause`` (the
        engine's own line, from figures only) and what a compaction must keep."""
        hint = f" {cause[:1].upper()}{cause[1:]}." if cause else ""
        if kept is not None:
            hint += f" {kept.hint(tokens)}"
        self.warn(
            WarningCode.BLOCKED,
            reason,
            f"over threshold but blocked: {reason} (~{tokens:,} tokens >= {threshold:,})."
            f"{hint} Start a new session or compress manually.",
            tokens_before=tokens,
            threshold=threshold,
        )

    def claimed(self, trigger: Trigger, tokens: int, messages: int) -> None:
        """At the trigger, another process is preparing this session's compaction: the
        request goes out as it is rather than summarizing the same turns twice."""
        self.emit(
            EventKind.COMPACTION_SKIPPED,
            "another process is preparing this session's compaction; sent as it is",
            trigger,
            reason="concurrent_compaction",
            tokens_before=tokens,
            messages_before=messages,
        )

    def background_started(self, tokens: int, soft_mark: int, messages: int) -> None:
        self.emit(
            EventKind.BACKGROUND_STARTED,
            f"preparing a compaction in the background (~{tokens:,} tokens >= {soft_mark:,})",
            tokens_before=tokens,
            threshold=soft_mark,
            messages_before=messages,
        )

    def deferred_past_trigger(
        self, trigger: Trigger, tokens: int, threshold: int, hard_mark: int, count: int, why: str
    ) -> None:
        self.emit(
            EventKind.COMPACTION_DEFERRED,
            f"over the trigger (~{tokens:,} >= {threshold:,} tokens, hard mark {hard_mark:,}): "
            f"sent unchanged while the compaction is prepared ({why}; {count} request(s) so far)",
            trigger,
            reason=why,
            tokens_before=tokens,
            threshold=threshold,
            count=count,
        )

    def background_prepared(self, tier: Tier | None, before: int, after: int, ms: float) -> None:
        self.emit(
            EventKind.BACKGROUND_PREPARED,
            f"background compaction ready: ~{before:,} -> ~{after:,} tokens in {ms:,.0f} ms",
            tier=tier,
            tokens_before=before,
            tokens_after=after,
            duration_ms=ms,
        )

    def background_discarded(self, reason: str, trigger: Trigger | None = None) -> None:
        self.emit(
            EventKind.BACKGROUND_DISCARDED,
            f"background compaction discarded: {reason}",
            trigger,
            reason=reason,
        )

    def input_defect(self, text: str) -> None:
        """One line of :func:`~windowkeeper.core.messages.conversation_warnings` (positions
        only, never message text), once per session."""
        if (WarningCode.INPUT, text) in self._input_warned:
            return
        self._input_warned.add((WarningCode.INPUT, text))
        self.emit(EventKind.WARNING, text, warning=WarningCode.INPUT, reason="input")

    def over_window(self, tokens: int, window: int) -> None:
        self.warn(
            WarningCode.BLOCKED,
            "over_window",
            f"request still over the window after compacting: ~{tokens:,} tokens >= "
            f"{window:,}; start a new session or raise the window",
            tokens_before=tokens,
        )

    def truncated(self, count: int, before: int, after: int, what: str = "tool result") -> None:
        self.warn(
            WarningCode.TRUNCATED,
            f"truncated:{what}:{before}",
            f"compaction could not fit the window; {count} large {what}(s) were cut "
            f"(~{before:,} -> ~{after:,} tokens)",
            tokens_before=before,
            tokens_after=after,
            count=count,
        )

    def overflow(self, kind: str, status: int | None, tokens: int, attempt: int) -> None:
        self.emit(
            EventKind.OVERFLOW,
            f"provider rejected the request as too large ({kind})",
            Trigger.RECOVERY,
            reason=kind,
            attempt=attempt,
            tokens_before=tokens,
            count=status,
        )

    def limit_learned(self, limit: int, threshold: int) -> None:
        self.emit(
            EventKind.LIMIT_LEARNED,
            f"provider window is {limit:,} tokens",
            Trigger.RECOVERY,
            count=limit,
            threshold=threshold,
        )

    def images(self, count: int, how: str) -> None:
        self.emit(
            EventKind.IMAGES_STRIPPED,
            f"{count} image(s) {how} after a 413",
            Trigger.RECOVERY,
            reason=how,
            count=count,
        )

    def hook_failed(self, hook: str, phase: str, error_type: str, trigger: Trigger) -> None:
        self.emit(
            EventKind.HOOK_FAILED, f"hook {hook}.{phase} raised {error_type}", trigger, reason=phase
        )


@dataclass(frozen=True)
class KeptParts:
    """What a compaction must keep, in tokens, for a warning that names the real cause."""

    floor: int
    """System prompt(s) and tool schemas."""
    newest: int
    """The newest user message (kept whole: the agent must answer it)."""
    newest_index: int
    users: int
    """The other user messages (kept verbatim up to their budget)."""
    largest: int
    largest_index: int
    """The largest of the other user messages."""

    def hint(self, tokens: int) -> str:
        """The parts a compaction keeps that are a large share of ``tokens`` (a quarter or
        more), the largest first; the system prompt and tool schemas when none is."""
        parts = []
        if self.newest * 4 >= tokens:
            parts.append(
                (self.newest, f"the newest user message (message {self.newest_index}) is "
                 f"~{self.newest:,} tokens, kept whole because the agent must answer it")
            )  # fmt: skip
        if self.users * 4 >= tokens:
            parts.append(
                (self.users, f"earlier user messages are ~{self.users:,} tokens (the largest is "
                 f"message {self.largest_index}, ~{self.largest:,})")
            )  # fmt: skip
        if self.floor * 4 >= tokens or not parts:
            parts.append(
                (self.floor, f"the system prompt and tool schemas alone are ~{self.floor:,} tokens")
            )
        text = "; ".join(part for _, part in sorted(parts, key=lambda p: -p[0]))
        return f"{text[:1].upper()}{text[1:]}."


def kept_parts(messages: Sequence[Message], schema_tokens: int) -> KeptParts:
    system = sum(message_tokens(m) for m in messages if m.get("role") in ("system", "developer"))
    sizes = [(message_tokens(m), i) for i, m in enumerate(messages) if m.get("role") == "user"]
    newest, newest_index = sizes[-1] if sizes else (0, -1)
    largest, index = max(sizes[:-1], default=(0, -1))
    earlier = sum(size for size, _ in sizes[:-1])
    return KeptParts(schema_tokens + system, newest, newest_index, earlier, largest, index)
