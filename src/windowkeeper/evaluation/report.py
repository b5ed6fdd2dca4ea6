"""The evaluation's results: one :class:`EvalReport` per session, :class:`EvalTotals` over many.

Frozen values; ``to_dict()`` gives plain JSON types (every figure, rounded only where
noted), so ``json.dumps(report.to_dict())`` always works.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from .cache import CacheBreak, CachePrices
from .facts import FactKind
from .retention import AgeRetention, KindRetention, LostFact


@dataclass(frozen=True)
class CompactionRecord:
    """One compaction of the replay (``request``: index of the request it preceded or
    followed; ``left_messages``: original messages that left the verbatim context)."""

    ordinal: int
    request: int
    trigger: str
    tier: str | None
    before_tokens: int
    after_tokens: int
    elapsed_ms: float
    left_messages: int
    new_facts: int


@dataclass(frozen=True)
class EvalReport:
    """What compaction kept and what it cost on one transcript (see :func:`evaluate`)."""

    name: str
    context_length: int
    window: int
    threshold_tokens: int
    messages: int
    tokens_per_request: tuple[int, ...]
    baseline_per_request: tuple[int, ...]
    over_window: int
    compactions: tuple[CompactionRecord, ...]
    compacting_ms: float
    retention_by_kind: tuple[KindRetention, ...]
    retention_by_age: tuple[AgeRetention, ...]
    cache_breaks: tuple[CacheBreak, ...]
    cache_prices: CachePrices
    cached_cost: float
    """Input cost of all requests in uncached-token units, with prompt caching."""
    cached_cost_without: float
    """The same without compaction."""
    lost: tuple[LostFact, ...] = ()
    """Facts not findable after the last compaction (the first ``LOST_EXAMPLES``)."""
    lost_count: int = 0
    warnings: tuple[str, ...] = ()

    @property
    def requests(self) -> int:
        return len(self.tokens_per_request)

    @property
    def cumulative_tokens(self) -> int:
        return sum(self.tokens_per_request)

    @property
    def cumulative_baseline_tokens(self) -> int:
        return sum(self.baseline_per_request)

    @property
    def peak_tokens(self) -> int:
        return max(self.tokens_per_request, default=0)

    @property
    def by_tier(self) -> dict[str, int]:
        return dict(Counter(c.tier or "unknown" for c in self.compactions))

    @property
    def by_trigger(self) -> dict[str, int]:
        return dict(Counter(c.trigger for c in self.compactions))

    @property
    def invalidated_tokens(self) -> int:
        return sum(b.invalidated_tokens for b in self.cache_breaks)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "context_length": self.context_length,
            "window": self.window,
            "threshold_tokens": self.threshold_tokens,
            "messages": self.messages,
            "tokens": _token_figures(self),
            "compactions": [asdict(c) for c in self.compactions],
            "retention": _retention_dict(self.retention_by_kind, self.retention_by_age),
            "cache": {
                **_cache_figures(self.cache_breaks, self.cached_cost, self.cached_cost_without),
                "prices": asdict(self.cache_prices),
                "breaks": [asdict(b) for b in self.cache_breaks],
            },
            "lost": [{**asdict(f), "kind": f.kind.value} for f in self.lost],
            "lost_count": self.lost_count,
            "tokens_per_request": list(self.tokens_per_request),
            "baseline_per_request": list(self.baseline_per_request),
            "warnings": list(self.warnings),
        }


@dataclass(frozen=True)
class EvalTotals:
    """The figures of many sessions added up (peak: the largest)."""

    sessions: int
    requests: int
    cumulative_tokens: int
    cumulative_baseline_tokens: int
    peak_tokens: int
    over_window: int
    compactions: int
    compacting_ms: float
    by_tier: dict[str, int] = field(default_factory=dict)
    by_trigger: dict[str, int] = field(default_factory=dict)
    retention_by_kind: tuple[KindRetention, ...] = ()
    retention_by_age: tuple[AgeRetention, ...] = ()
    cache_breaks: tuple[CacheBreak, ...] = ()
    cached_cost: float = 0.0
    cached_cost_without: float = 0.0

    @classmethod
    def of(cls, reports: Sequence[EvalReport]) -> EvalTotals:
        return cls(
            sessions=len(reports),
            requests=sum(r.requests for r in reports),
            cumulative_tokens=sum(r.cumulative_tokens for r in reports),
            cumulative_baseline_tokens=sum(r.cumulative_baseline_tokens for r in reports),
            peak_tokens=max((r.peak_tokens for r in reports), default=0),
            over_window=sum(r.over_window for r in reports),
            compactions=sum(len(r.compactions) for r in reports),
            compacting_ms=sum(r.compacting_ms for r in reports),
            by_tier=_add_counts(r.by_tier for r in reports),
            by_trigger=_add_counts(r.by_trigger for r in reports),
            retention_by_kind=add_by_kind(r.retention_by_kind for r in reports),
            retention_by_age=add_by_age(r.retention_by_age for r in reports),
            cache_breaks=tuple(b for r in reports for b in r.cache_breaks),
            cached_cost=sum(r.cached_cost for r in reports),
            cached_cost_without=sum(r.cached_cost_without for r in reports),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "sessions": self.sessions,
            "tokens": _token_figures(self),
            "retention": _retention_dict(self.retention_by_kind, self.retention_by_age),
            "cache": _cache_figures(self.cache_breaks, self.cached_cost, self.cached_cost_without),
        }


def _token_figures(r: EvalReport | EvalTotals) -> dict[str, Any]:
    with_c, without = r.cumulative_tokens, r.cumulative_baseline_tokens
    return {
        "requests": r.requests,
        "cumulative_prompt_tokens": with_c,
        "cumulative_prompt_tokens_without_compaction": without,
        "saved_ratio": round(1 - with_c / without, 4) if without else 0.0,
        "peak_tokens": r.peak_tokens,
        "requests_over_window": r.over_window,
        "compactions": len(r.compactions) if isinstance(r, EvalReport) else r.compactions,
        "compactions_by_tier": r.by_tier,
        "compactions_by_trigger": r.by_trigger,
        "compacting_ms": round(r.compacting_ms, 3),
    }


def _cache_figures(breaks: Sequence[CacheBreak], cost: float, without: float) -> dict[str, Any]:
    evens = [b.break_even_requests for b in breaks if b.break_even_requests is not None]
    return {
        "invalidated_tokens": sum(b.invalidated_tokens for b in breaks),
        "breaks": len(breaks),
        "paid_off": sum(b.paid_off for b in breaks),
        "never_pays": sum(b.break_even_requests is None for b in breaks),
        "median_break_even_requests": statistics.median(evens) if evens else None,
        "cached_cost": round(cost, 1),
        "cached_cost_without_compaction": round(without, 1),
    }


def _retention_dict(
    by_kind: Sequence[KindRetention], by_age: Sequence[AgeRetention]
) -> dict[str, Any]:
    facts = sum(k.facts for k in by_kind)
    kept = sum(k.kept_at_end for k in by_kind)
    return {
        "facts": facts,
        "kept_at_end": kept,
        "kept_always": sum(k.kept_always for k in by_kind),
        "kept_ratio": round(kept / facts, 4) if facts else None,
        "by_kind": {
            k.kind.value: {
                "facts": k.facts,
                "kept_at_end": k.kept_at_end,
                "kept_always": k.kept_always,
            }
            for k in by_kind
        },
        "by_age": [asdict(a) for a in by_age],
    }


def _add_counts(counts: Iterable[dict[str, int]]) -> dict[str, int]:
    total: Counter[str] = Counter()
    for item in counts:
        total.update(item)
    return dict(total)


def add_by_kind(groups: Iterable[Sequence[KindRetention]]) -> tuple[KindRetention, ...]:
    sums = {kind: [0, 0, 0] for kind in FactKind}
    for group in groups:
        for row in group:
            sums[row.kind][0] += row.facts
            sums[row.kind][1] += row.kept_at_end
            sums[row.kind][2] += row.kept_always
    return tuple(KindRetention(kind, *values) for kind, values in sums.items())


def add_by_age(groups: Iterable[Sequence[AgeRetention]]) -> tuple[AgeRetention, ...]:
    sums: dict[int, list[int]] = {}
    for group in groups:
        for row in group:
            cell = sums.setdefault(row.age, [0, 0])
            cell[0] += row.facts
            cell[1] += row.kept
    return tuple(AgeRetention(age, *sums[age]) for age in sorted(sums))
