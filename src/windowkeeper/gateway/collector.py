"""What CPython's cyclic garbage collector sees of the gateway's long-lived state.

The gateway holds every session's history in memory: the parsed bodies, the canonical
messages (with their Anthropic originals), one analysis record per message, the archived
originals. That is hundreds of thousands of container objects, nearly none of them in a
reference cycle, and every full (generation 2) collection walks all of them: 100–300 ms
on this project's machine with a few hundred sessions, landing on whichever request
happens to allocate at that moment (issue 23, docs/benchmarks.md "Gateway: requests that
compact"). An Anthropic Messages session holds about twice the objects of a Chat one
(content blocks, the originals beside the canonical messages), so its pauses were
longer and more frequent.

:class:`Collector` moves what the gateway holds after each request into the permanent
generation (``gc.freeze()``, constant time), so collections walk only the objects
allocated since. Freed state is still freed at once by reference counting; what a
frozen object cannot be is collected as part of a cycle, so a sweep (unfreeze, one full
collection) runs every ``sweep_every`` requests, at a moment no other request is in
flight (forced after four times as many): one pause per thousand requests, not two per
hundred. ``windowkeeper serve`` enables it (it owns the process); an app embedding
:func:`~windowkeeper.gateway.create_app` keeps the collector as it is unless it sets
``app.gateway.collector = Collector()``.
"""

from __future__ import annotations

import gc

__all__ = ["Collector", "NoCollector"]

SWEEP_EVERY = 1_000


class NoCollector:
    """Leaves the garbage collector alone (the default of an embedded gateway)."""

    def begin(self) -> None:
        """A model request starts."""

    def end(self) -> None:
        """A model request has settled (its session's state is what it keeps)."""


class Collector(NoCollector):
    """Freezes the gateway's state after each request; sweeps every ``sweep_every``."""

    def __init__(self, sweep_every: int = SWEEP_EVERY) -> None:
        self.sweep_every = max(1, sweep_every)
        self.in_flight = 0
        self.since_sweep = 0
        self.sweeps = 0
        """Full collections this collector ran (tests and metrics read it)."""

    def begin(self) -> None:
        self.in_flight += 1

    def end(self) -> None:
        self.in_flight = max(0, self.in_flight - 1)
        self.since_sweep += 1
        due = self.since_sweep >= self.sweep_every
        if due and (self.in_flight == 0 or self.since_sweep >= 4 * self.sweep_every):
            gc.unfreeze()
            gc.collect()
            self.since_sweep = 0
            self.sweeps += 1
        gc.freeze()
