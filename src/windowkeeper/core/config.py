"""Compression configuration (design §10 defaults) and threshold arithmetic (design §2, §6)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from .cache import DEFAULT_ROW, CachePrices
from .errors import ConfigError

MINIMUM_TRIGGER_TOKENS = 64_000
SMALL_WINDOW_RATIO = 0.85


@dataclass(frozen=True, kw_only=True)
class CompressionConfig:
    """Every tunable of the compressor; defaults follow design §10.

    Attributes:
        threshold: fraction of the effective window at which automatic compaction fires.
        target_ratio: tail budget as a fraction of the trigger (clamped to 0.10-0.80).
        prune_only_ratio: a compaction stops after pruning (tier 1) when that brings the
            request to this fraction of the trigger (of the window, when it must fit).
        protect_first_n: non-system messages kept verbatim until the first compaction.
        protect_last_n: count-based tail protection for the cheap preflight gate.
        min_tail_messages: the verbatim tail keeps at least this many messages.
        threshold_tokens_cap: optional absolute cap on the trigger.
        model_thresholds: per-model threshold overrides (``substr`` or ``provider:substr``).
        image_tokens: flat estimated cost of one image.
        prune_min_chars: tool outputs at most this long are never pruned.
        head_prune_min_chars: when a handoff is written, outputs in the protected head at
            most this long stay verbatim (the head is what the session started from; only
            the large outputs there are worth a stub).
        user_message_ratio / user_message_min_tokens / user_messages_ratio: large user
            messages (a pasted log): one is kept verbatim up to
            ``min(user_messages_ratio, max(min_tokens, user_message_ratio))`` of the window,
            all of them together up to ``user_messages_ratio`` of it; beyond that the older
            ones keep an excerpt with their instruction lines and a handle (the newest
            one stays whole unless it alone would not fit).
        args_truncate_over: tool-call arguments longer than this are shortened leaf by leaf.
        args_head_chars: how much of a long argument leaf is kept.
        summary_min_tokens / summary_max_tokens / summary_ratio / summary_window_ratio:
            the handoff budget ``max(min, min(ratio*summarized, min(window_ratio*window, max)))``.
        min_savings_ratio: two consecutive compactions saving less than this stop automation.
        abort_on_summary_failure: abort (messages unchanged) on any summarizer failure.
        allow_small_summary_model: accept a summary model whose window is under 64K.
        cache_prices: the provider's prompt-cache prices relative to one uncached input
            token, a row per provider (``default`` for any other); the receipt of every
            compaction reads them (``requests to break even``), nothing else does.
        background: prepare compactions off the request path (design §4); ``None``: on
            when the summarizer is not the extractive one (a model call is worth hiding,
            the extractive handoff takes milliseconds).
        background_ratio: the soft mark, as a fraction of the trigger, past which a
            background compaction of the history as it stands is started.
        background_hard_ratio: the hard mark, as a fraction of the usable window (the
            window less the output reservation; 1.0 is the limit a must-fit compaction
            aims at). Past the trigger, while its compaction is prepared, a request goes
            out unchanged as long as its estimate (scaled by what real usage showed the
            estimate misses) stays under it; at or over it the request waits for the
            job or compacts in the foreground. At or under the trigger: never deferred.
        background_workers: background compactions running at once in a gateway, across
            its sessions (as many more may wait; a session beyond that compacts in the
            foreground). A library process shares one pool of 4 unless given its own.
    """

    enabled: bool = True
    threshold: float = 0.50
    target_ratio: float = 0.20
    # design §4 step 0 suggests 0.60; measured on the 32K replay of the real sessions, 0.60
    # costs 28.7M cumulative prompt tokens against 28.2M before tiers existed (a prune-only
    # result keeps every text and call verbatim, so it is larger than a handoff), 0.50
    # costs 28.0M (docs/design.md, "Two tiers").
    prune_only_ratio: float = 0.50
    protect_first_n: int = 3
    protect_last_n: int = 20
    min_tail_messages: int = 3
    tail_soft_ceiling: float = 1.5
    threshold_tokens_cap: int | None = None
    model_thresholds: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    image_tokens: int = 1_500
    prune_min_chars: int = 200
    head_prune_min_chars: int = 2_000
    args_truncate_over: int = 500
    args_head_chars: int = 200
    user_message_ratio: float = 0.20
    user_message_min_tokens: int = 2_000
    user_messages_ratio: float = 0.40
    summary_min_tokens: int = 2_000
    summary_max_tokens: int = 12_000
    summary_ratio: float = 0.20
    summary_window_ratio: float = 0.05
    min_savings_ratio: float = 0.10
    abort_on_summary_failure: bool = False
    allow_small_summary_model: bool = False
    in_place: bool = True
    hygiene_threshold: float = 0.85
    hygiene_hard_message_limit: int = 5_000
    max_attempts: int = 3
    cache_prices: Mapping[str, CachePrices] = field(
        default_factory=lambda: MappingProxyType({DEFAULT_ROW: CachePrices()})
    )
    background: bool | None = None
    background_ratio: float = 0.85
    background_hard_ratio: float = 1.0
    background_workers: int = 4

    def __post_init__(self) -> None:
        if not 0.0 < self.threshold <= 1.0:
            raise ConfigError(f"compression.threshold must be in (0, 1], got {self.threshold}")
        if not 0.10 <= self.hygiene_threshold <= 0.99:
            raise ConfigError(
                "compression.hygiene_threshold must be in [0.10, 0.99], "
                f"got {self.hygiene_threshold}"
            )
        for name in (
            "protect_first_n", "protect_last_n", "prune_min_chars", "head_prune_min_chars",
            "image_tokens",
        ):  # fmt: skip
            if getattr(self, name) < 0:
                raise ConfigError(f"compression.{name} must be >= 0, got {getattr(self, name)}")
        if not 0.0 < self.prune_only_ratio <= 1.0:
            raise ConfigError(
                f"compression.prune_only_ratio must be in (0, 1], got {self.prune_only_ratio}"
            )
        for name in ("user_message_ratio", "user_messages_ratio"):
            if not 0.0 < getattr(self, name) <= 1.0:
                raise ConfigError(
                    f"compression.{name} must be in (0, 1], got {getattr(self, name)}"
                )
        if self.user_message_min_tokens < 0:
            raise ConfigError("compression.user_message_min_tokens must be >= 0")
        if self.min_tail_messages < 1:
            raise ConfigError("compression.min_tail_messages must be >= 1")
        if self.max_attempts < 1:
            raise ConfigError("compression.max_attempts must be >= 1")
        if self.background_workers < 1:
            raise ConfigError("compression.background_workers must be >= 1")
        if not 0.0 < self.background_ratio < 1.0:
            raise ConfigError(
                f"compression.background_ratio must be in (0, 1), got {self.background_ratio}"
            )
        if not 0.0 < self.background_hard_ratio <= 1.0:
            raise ConfigError(
                "compression.background_hard_ratio must be in (0, 1], "
                f"got {self.background_hard_ratio}"
            )
        object.__setattr__(self, "target_ratio", min(0.80, max(0.10, self.target_ratio)))
        object.__setattr__(self, "model_thresholds", MappingProxyType(dict(self.model_thresholds)))
        for name, row in self.cache_prices.items():
            if row.read < 0 or row.write < 0:
                raise ConfigError(f"compression.cache_prices.{name}: prices must be >= 0")
        object.__setattr__(self, "cache_prices", MappingProxyType(dict(self.cache_prices)))


DEFAULT_CONFIG = CompressionConfig()
"""The defaults, made once: a compressor made without a config shares it (it is frozen,
and its mappings are read-only views of copies), instead of building and checking its
forty fields again (a fixed cost of every small compaction)."""


def coerce_positive_int(value: object) -> int | None:
    """A positive integer, or ``None`` for None/0/negative/non-numeric values."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        number = int(value)
    elif isinstance(value, str):
        try:
            number = int(float(value.strip()))
        except ValueError:
            return None
    else:
        return None
    return number if number > 0 else None


def usable_window(context_length: int, max_tokens: object = None) -> int:
    """Prompt tokens a request may carry: the window less the output reservation (a
    reservation that leaves nothing is ignored, as in :func:`compute_threshold_tokens`)."""
    reserve = coerce_positive_int(max_tokens) or 0
    return context_length - reserve if 0 < reserve < context_length else context_length


def compute_threshold_tokens(
    context_length: int, threshold: float, max_tokens: object = None
) -> int:
    """The compaction trigger in prompt tokens (design §2).

    ``effective = context_length - max_tokens`` (a reservation >= the window is ignored);
    ``trigger = max(int(effective * threshold), 64_000)``, and when that floor reaches the
    effective window, ``int(effective * 0.85)`` instead.
    """
    if context_length <= 0:
        raise ConfigError(f"context length must be positive, got {context_length}")
    effective = usable_window(context_length, max_tokens)
    trigger = max(int(effective * threshold), MINIMUM_TRIGGER_TOKENS)
    if trigger >= effective:
        trigger = int(effective * SMALL_WINDOW_RATIO)
    return max(1, trigger)


def threshold_override(
    context_length: int, threshold: float, max_tokens: object = None
) -> str | None:
    """One line when design §2's 64,000-token minimum trigger overrides ``threshold``.

    On windows under ~75K the minimum reaches the window and 85% of it is used instead;
    on larger ones a small ratio is raised to 64,000. ``None`` when the ratio applies.
    """
    effective = usable_window(context_length, max_tokens)
    asked = max(1, int(effective * threshold))
    trigger = compute_threshold_tokens(context_length, threshold, max_tokens)
    if trigger == asked:
        return None
    if trigger < MINIMUM_TRIGGER_TOKENS:
        why = (
            f"the {MINIMUM_TRIGGER_TOKENS:,}-token minimum trigger reaches this window, so "
            f"{SMALL_WINDOW_RATIO:.0%} of it is used"
        )
    else:
        why = f"that is below the {MINIMUM_TRIGGER_TOKENS:,}-token minimum trigger"
    return (
        f"compaction triggers at {trigger:,} tokens, not at {asked:,} (the threshold, "
        f"{threshold:.0%} of the {effective:,}-token window): {why}"
    )


def resolve_model_threshold(
    model: str | None,
    overrides: Mapping[str, float],
    default: float,
    provider: str | None = None,
) -> float:
    """Per-model threshold: the longest matching substring key wins.

    A ``provider:substr`` key applies only to that provider and beats a bare key of the
    same substring length.
    """
    if not model or not overrides:
        return default
    name = model.lower()
    best: tuple[int, int] | None = None
    chosen = default
    for key, value in overrides.items():
        scope, _, substr = key.rpartition(":")
        scoped = 1 if scope else 0
        if scope and scope.lower() != (provider or "").lower():
            continue
        if substr.lower() not in name:
            continue
        rank = (len(substr), scoped)
        if best is None or rank > best:
            best, chosen = rank, float(value)
    return chosen


def apply_threshold_cap(trigger: int, cap: object, context_length: int) -> int:
    limit = coerce_positive_int(cap)
    if limit is None:
        return trigger
    return min(trigger, min(limit, context_length))


def tail_budget_tokens(threshold_tokens: int, target_ratio: float) -> int:
    """Token budget of the verbatim tail: the trigger times the (clamped) target ratio."""
    ratio = min(0.80, max(0.10, target_ratio))
    return max(1, int(threshold_tokens * ratio))


def summary_budget_tokens(
    summarized_tokens: int, context_length: int, config: CompressionConfig
) -> int:
    """Handoff budget: ``max(2000, min(0.20 x summarized, min(0.05 x window, 12000)))``."""
    window_cap = min(int(context_length * config.summary_window_ratio), config.summary_max_tokens)
    return max(
        config.summary_min_tokens, min(int(summarized_tokens * config.summary_ratio), window_cap)
    )
