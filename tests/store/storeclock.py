"""The injected clock of the store tests (a uniquely named module: test files import it,
and a ``conftest`` import would resolve to whichever conftest pytest loaded first)."""

from __future__ import annotations


class FakeClock:
    """Injected wall clock: starts at a fixed time, moves only when told to."""

    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds
