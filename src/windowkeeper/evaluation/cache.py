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
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace


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
    first_extra = prices.request(prefix, current - prefix) - prices.request(previous, appended)
    saving = prices.read * (previous + appended - current)
    if first_extra <= 0:
        even: int | None = 1
    elif saving <= 0:
        even = None
    else:
        even = 1 + math.ceil(first_extra / saving - 1e-9)
    return CacheBreak(
        request, compactions, previous, prefix, previous - prefix, current, appended, even, False
    )


def settle(breaks: list[CacheBreak], requests: int) -> list[CacheBreak]:
    """Each break with ``paid_off``: did the run last its break-even before the next one?"""
    settled = []
    for index, item in enumerate(breaks):
        end = breaks[index + 1].request if index + 1 < len(breaks) else requests
        lasted = end - item.request
        paid = item.break_even_requests is not None and lasted >= item.break_even_requests
        settled.append(replace(item, paid_off=paid))
    return settled
