"""Results of a compaction: frozen data with enum reasons, never side-channel flags."""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, field
from typing import Any

from .messages import Message


class Outcome(enum.StrEnum):
    COMPRESSED = "compressed"
    NOOP = "noop"
    ABORTED = "aborted"
    SKIPPED = "skipped"


class Tier(enum.StrEnum):
    """Which tier of a compaction produced the result (design §4 step 0).

    ``PRUNE``: tier 1 alone, old tool output replaced by one-line stubs with archive
    handles, the conversation otherwise verbatim. ``SUMMARY``: tier 2, the middle
    replaced by a handoff.
    """

    PRUNE = "prune"
    SUMMARY = "summary"


class Reason(enum.StrEnum):
    """Why a compaction did not (fully) happen, or how it was completed."""

    NOTHING_TO_COMPRESS = "nothing_to_compress"
    NO_REDUCTION = "no_reduction"
    BELOW_THRESHOLD = "below_threshold"
    DISABLED = "disabled"
    COOLDOWN = "cooldown"
    STRUCTURAL_BACKOFF = "structural_backoff"
    INEFFECTIVE = "ineffective"
    LOW_SAVINGS = "low_savings"
    UNDONE = "undone"
    SUMMARY_FAILED = "summary_failed"
    CONCURRENT_COMPACTION = "concurrent_compaction"


class DiscardReason(enum.StrEnum):
    """Why a compaction prepared in the background was not applied (design §4)."""

    EDITED = "edited"
    """The history it was prepared from is no longer, unchanged, the head of the current
    one (compared by content digest)."""
    SESSION = "session"
    """The session was reset (a new session) since it was prepared."""
    MODEL = "model"
    """The model, window or trigger changed since it was prepared."""
    SUPERSEDED = "superseded"
    """Another compaction (manual, window fit, recovery) ran first."""
    FAILED = "failed"
    """The job raised, or its compaction aborted (a summary failure that aborts)."""
    NOT_COMPRESSED = "not_compressed"
    """The job found nothing to compress (a no-op or a skip)."""
    INSUFFICIENT = "insufficient"
    """With the messages added since (tier 1 run over them too), the result would not be
    small enough: over tier 1's target for a prune-only result, at or over the soft mark
    for a summary."""
    INVALID = "invalid"
    """Joined with the messages added since, the result breaks an invariant."""
    NOT_STARTED = "not_started"
    """Still queued behind other sessions' jobs when the trigger was crossed."""
    CLAIMED = "claimed"
    """Another process holds the session's lease (it prepares the compaction itself)."""


@dataclass(frozen=True)
class Background:
    """The background part of a compaction's story: ``applied`` (the result was prepared
    off the request path) or discarded for ``reason`` (the compaction then ran in the
    foreground). ``prepared_ms``: how long preparing took (what applying it saved).
    ``pruned_on_apply``: tool results and arguments tier 1 shortened when it was applied
    (the messages added since it was prepared had outgrown it)."""

    applied: bool
    reason: DiscardReason | None = None
    prepared_ms: float = 0.0
    pruned_on_apply: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "applied": self.applied,
            "reason": self.reason.value if self.reason else None,
            "prepared_ms": round(self.prepared_ms, 3),
            "pruned_on_apply": self.pruned_on_apply,
        }


@dataclass(frozen=True, slots=True)
class ArchivedItem:
    """An original that a compaction replaced; ``handle`` is the reference shown to the model.

    ``kind`` is ``"tool_output"`` (pruned result), ``"tool_arguments"`` (shortened call
    arguments) or ``"message"`` (a summarized turn).
    """

    handle: str
    kind: str
    index: int
    message: Message


@dataclass(frozen=True)
class Receipt:
    """What one completed compaction cost, said when it happens (SPEC §4).

    ``kept_prefix_tokens`` of the request without the compaction (tool schemas and the
    leading messages it left as they were) stay in the provider's prompt cache;
    ``invalidated_tokens``, the rest, must be written again. ``break_even_requests`` is the
    number of requests, this one included, until the compaction has cost no more than
    not compacting at the ``prices`` row of ``compression.cache_prices`` (``None``: it
    never pays). ``waited_ms`` is how long the agent's request waited for it (0 when it
    was prepared in the background). ``deferred_requests`` requests went out past the
    trigger, unchanged, while it was prepared (the largest ``deferred_peak_tokens``).
    """

    tier: Tier
    tokens_before: int
    tokens_after: int
    kept_prefix_tokens: int
    invalidated_tokens: int
    break_even_requests: int | None
    waited_ms: float
    prices: str = "default"
    background: bool = False
    deferred_requests: int = 0
    deferred_peak_tokens: int = 0

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["tier"] = self.tier.value
        data["waited_ms"] = round(self.waited_ms, 3)
        return data

    def line(self) -> str:
        """The receipt as ``key=value`` figures (the log line's and the CLI's form)."""
        even = "never" if self.break_even_requests is None else str(self.break_even_requests)
        return (
            f"tier={self.tier.value} tokens={self.tokens_before}->{self.tokens_after} "
            f"cache_invalidated={self.invalidated_tokens} break_even={even} "
            f"waited_ms={self.waited_ms:.0f}{' background' if self.background else ''}"
            + (
                f" deferred={self.deferred_requests} peak={self.deferred_peak_tokens}"
                if self.deferred_requests
                else ""
            )
        )


@dataclass(frozen=True)
class CompressionReport:
    """What one ``compress`` call did; serializable with :meth:`to_dict`."""

    outcome: Outcome
    reason: Reason | None = None
    tier: Tier | None = None
    """The tier that produced a completed compaction (``None`` when nothing changed)."""
    detail: str = ""
    before_tokens: int = 0
    after_tokens: int = 0
    before_messages: int = 0
    after_messages: int = 0
    pruned: int = 0
    summarized_messages: int = 0
    summary_tokens: int = 0
    fallback_used: bool = False
    summarizer: str = ""
    failure: FailureKind | None = None
    repairs: int = 0
    elapsed_ms: float = 0.0
    warnings: tuple[str, ...] = ()
    receipt: Receipt | None = None
    """Set on every completed compaction (``outcome`` ``compressed``)."""
    background: Background | None = None
    """Set when a compaction prepared in the background was applied, or was discarded
    and this compaction ran in the foreground instead."""

    @property
    def compressed(self) -> bool:
        return self.outcome is Outcome.COMPRESSED

    @property
    def aborted(self) -> bool:
        return self.outcome is Outcome.ABORTED

    @property
    def saved_tokens(self) -> int:
        return max(0, self.before_tokens - self.after_tokens)

    @property
    def savings_ratio(self) -> float:
        return self.saved_tokens / self.before_tokens if self.before_tokens else 0.0

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["outcome"] = self.outcome.value
        data["reason"] = self.reason.value if self.reason else None
        data["tier"] = self.tier.value if self.tier else None
        data["failure"] = self.failure.value if self.failure else None
        data["warnings"] = list(self.warnings)
        data["compressed"] = self.compressed
        data["aborted"] = self.aborted
        data["savings_ratio"] = round(self.savings_ratio, 4)
        data["elapsed_ms"] = round(self.elapsed_ms, 3)
        data["receipt"] = self.receipt.to_dict() if self.receipt else None
        data["background"] = self.background.to_dict() if self.background else None
        return data


@dataclass(frozen=True)
class CompressionResult:
    """The new message list and its report.

    On a no-op, skip or abort ``messages`` is the caller's input list itself (identity).
    """

    messages: list[Message]
    report: CompressionReport
    archived: tuple[ArchivedItem, ...] = field(default=())
    summary: str | None = None


class FailureKind(enum.StrEnum):
    """Why a summary could not be produced."""

    AUTH = "auth"
    NETWORK = "network"
    TIMEOUT = "timeout"
    RATE_LIMIT = "rate_limit"
    OVERLOADED = "overloaded"
    MODEL_NOT_FOUND = "model_not_found"
    SERVER_ERROR = "server_error"
    EMPTY = "empty"
    REFUSAL = "refusal"
    TRUNCATED = "truncated"
    FORMAT = "format"
    """The reply has none of the requested headings: nothing in it can be placed."""
    NOT_CONFIGURED = "not_configured"
    OTHER = "other"

    @property
    def aborts(self) -> bool:
        """Failures after which compaction aborts instead of using the extractive fallback."""
        return self in {FailureKind.AUTH, FailureKind.NETWORK, FailureKind.TIMEOUT}
