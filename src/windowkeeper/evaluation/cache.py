"""Cache breaks of a replayed session: the arithmetic lives in :mod:`windowkeeper.core.cache`
(the receipt of every compaction uses it too); here only what is settled afterwards."""

from __future__ import annotations

from dataclasses import replace

from ..core.cache import CacheBreak, CachePrices, cache_break

__all__ = ["CacheBreak", "CachePrices", "cache_break", "settle"]


def settle(breaks: list[CacheBreak], requests: int) -> list[CacheBreak]:
    """Each break with ``paid_off``: did the run last its break-even before the next one?"""
    settled = []
    for index, item in enumerate(breaks):
        end = breaks[index + 1].request if index + 1 < len(breaks) else requests
        lasted = end - item.request
        paid = item.break_even_requests is not None and lasted >= item.break_even_requests
        settled.append(replace(item, paid_off=paid))
    return settled
