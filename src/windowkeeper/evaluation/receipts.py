"""One receipt per compaction of an evaluation, from the figures the report already has.

A receipt joins a :class:`CompactionRecord` (tier, tokens before and after) with the
:class:`CacheBreak` of the first request after it (prefix invalidated, requests to break
even). Breaks come in request order and each names how many compactions happened since
the request before it, so the ``k`` compactions of a break are the next ``k`` records.
When several compactions fall between two requests, the cache figures belong to the
last of them (the one the next request is sent after); the earlier ones show none. A
compaction after the last request (none followed it) has no cache figures either.
"""

from __future__ import annotations

from dataclasses import dataclass

from .report import EvalReport


@dataclass(frozen=True)
class Receipt:
    ordinal: int
    request: int
    tier: str
    trigger: str
    before_tokens: int
    after_tokens: int
    invalidated_tokens: int | None
    """Cache prefix tokens of the previous request the next one had to write again."""
    break_even_requests: int | None
    """Requests until the compaction paid for itself; ``None``: never, or no request
    followed."""
    paid_off: bool


def receipts(report: EvalReport) -> tuple[Receipt, ...]:
    """Every compaction of ``report`` in order, with its cache figures where it has them."""
    cache: dict[int, tuple[int, int | None, bool]] = {}
    seen = 0
    for item in report.cache_breaks:
        seen += item.compactions
        if item.compactions and seen <= len(report.compactions):
            cache[seen - 1] = (item.invalidated_tokens, item.break_even_requests, item.paid_off)
    return tuple(
        Receipt(
            c.ordinal,
            c.request,
            c.tier or "unknown",
            c.trigger,
            c.before_tokens,
            c.after_tokens,
            *cache.get(index, (None, None, False)),
        )
        for index, c in enumerate(report.compactions)
    )
