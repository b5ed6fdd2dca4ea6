"""What compaction does to a provider's prompt cache, and when it pays for itself.

A provider caches the prefix of each request (tool schemas, then messages in order), so
the next request reads every unchanged leading message from the cache. A compaction
changes a message near the front (the system note, the handoff), and everything from the
first changed message on must be written again: those tokens of the previous request are
**invalidated**.

Prices are relative to the provider's price of one uncached input token: a cache read
costs ``read`` (0.1 by default, the usual discount), a token written to the cache
``write`` (1.25 by default: Anthropic's premium; 1.0 for providers with automatic caching).
With ``B`` the previous request's tokens, ``P`` the unchanged prefix, ``T`` the compacted
request and ``N`` the tokens appended since the previous request:

* the first request after the compaction costs ``read·P + write·(T − P)`` instead of
  ``read·B + write·N``;
* every later request reads ``B + N − T`` fewer tokens from the cache.

**Break-even** is the number of requests, the first included, after which the compaction
has cost no more than not compacting would have: 1 when the first request is already
cheaper, ``None`` when the compaction never pays (it saved nothing).

The prices are a table the user edits (``compression.cache_prices``: a row per provider,
``default`` for the rest); nothing here decides with a price of its own.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from .messages import Message
from .report import Receipt, Tier


@dataclass(frozen=True)
class CachePrices:
    read: float = 0.1
    write: float = 1.25

    def request(self, cached: int, uncached: int) -> float:
        return self.read * cached + self.write * uncached


@dataclass(frozen=True)
class CacheBreak:
    """The first request after one or more compactions, against the one before it."""

    request: int
    compactions: int
    """Compactions between the two requests (usually 1)."""
    previous_tokens: int
    kept_prefix_tokens: int
    invalidated_tokens: int
    """Tokens of the previous request after its first changed message."""
    request_tokens: int
    appended_tokens: int
    break_even_requests: int | None
    paid_off: bool
    """The session went on for at least ``break_even_requests`` requests before the next
    compaction (or its end)."""


def cache_break(
    request: int,
    compactions: int,
    previous: int,
    prefix: int,
    current: int,
    appended: int,
    prices: CachePrices,
) -> CacheBreak:
    """The figures of one break; ``paid_off`` is settled later by :func:`settle`."""
    even = break_even(previous, prefix, current, appended, prices)
    return CacheBreak(
        request, compactions, previous, prefix, previous - prefix, current, appended, even, False
    )


def break_even(
    previous: int, prefix: int, current: int, appended: int, prices: CachePrices
) -> int | None:
    """The break-even of a break (see the module docstring): 1 when the first request is
    already cheaper, ``None`` when the compaction never pays."""
    first_extra = prices.request(prefix, current - prefix) - prices.request(previous, appended)
    saving = prices.read * (previous + appended - current)
    ratio = first_extra / saving if saving > 0 else math.inf
    if first_extra <= 0:
        return 1
    if not math.isfinite(ratio):
        return None  # no saving, or one so small (a near-zero read price) it never repays
    return 1 + math.ceil(ratio - 1e-9)


DEFAULT_ROW = "default"


def prices_for(table: Mapping[str, CachePrices], provider: str | None) -> tuple[str, CachePrices]:
    """The row of ``table`` for ``provider`` (case-insensitive), else its ``default`` row,
    else the plain :class:`CachePrices`; with the row's name."""
    wanted = (provider or "").lower()
    for name, row in table.items():
        if wanted and name.lower() == wanted:
            return name, row
    if DEFAULT_ROW in table:
        return DEFAULT_ROW, table[DEFAULT_ROW]
    return DEFAULT_ROW, CachePrices()


def kept_prefix(before: Sequence[Message], after: Sequence[Message], costs: Iterable[int]) -> int:
    """Tokens (``costs`` of ``before``, read only as far as needed) of the leading messages
    ``after`` left unchanged."""
    kept = 0
    for old, new, cost in zip(before, after, costs, strict=False):
        if old is not new and old != new:
            break
        kept += cost
    return kept


def receipt(
    tier: Tier,
    before: int,
    after: int,
    kept: int,
    waited_ms: float,
    row: tuple[str, CachePrices],
) -> Receipt:
    """The receipt of a compaction from ``before`` to ``after`` request tokens that kept
    ``kept`` of them as the cached prefix.

    Measured against sending the uncompacted request with all of it cached (the history
    as it stands was the previous request plus what the agent appended, and those new
    messages must be written either way): no appended tokens.
    """
    name, prices = row
    # The figures of :func:`cache_break` (no appended tokens), without making the break.
    even = break_even(before, kept, after, 0, prices)
    return Receipt(tier, before, after, kept, before - kept, even, waited_ms, name)
