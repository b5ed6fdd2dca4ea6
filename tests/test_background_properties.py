"""Property tests of the manager's background path: random conversations replayed request
by request, jobs finishing at random requests (a pool the test runs by hand, so "ready"
is drawn, not timed), a provider that may count more than the estimate.

What must hold for every request sent: no invariant is broken; a request that went out
unchanged past the trigger because its compaction was being prepared is under the hard
mark as the provider counts it; no request reaches the window unless the manager said it
could not fit (the floor); one job per session at a time; each receipt counts the
requests that went out past the trigger before it."""

from __future__ import annotations

import math
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

from hypothesis import event, given
from hypothesis import strategies as st

from test_properties import EXAMPLES, conversation
from windowkeeper.core.config import CompressionConfig
from windowkeeper.core.invariants import violations
from windowkeeper.core.messages import Message
from windowkeeper.engine.compressor import ContextCompressor
from windowkeeper.loop.background import SessionBackground, Workers
from windowkeeper.loop.events import Event, EventKind
from windowkeeper.loop.manager import ContextManager
from windowkeeper.loop.steps import Answered, Wait, wire

T = TypeVar("T")


class HandRun(Workers):
    """A pool whose jobs run only when the test says so (on the test's thread)."""

    def __init__(self) -> None:
        super().__init__(1)
        self.queue: list[tuple[Future[Any], Callable[[], Any]]] = []

    def submit(self, fn: Callable[[], T]) -> Future[T] | None:
        future: Future[T] = Future()
        self.queue.append((future, fn))
        return future

    def saturated(self) -> bool:
        return False

    def run(self) -> None:
        queue, self.queue = self.queue, []
        for future, fn in queue:
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(fn())
                except Exception as exc:  # the job's own failure is its outcome
                    future.set_exception(exc)

    def live(self) -> int:
        return sum(not f.cancelled() for f, _ in self.queue)


class Replay:
    """One conversation replayed through a manager with background compaction on."""

    def __init__(self, window: int, hard: float, first_n: int, factor: float) -> None:
        config = CompressionConfig(
            background=True, background_hard_ratio=hard, protect_first_n=first_n,
            summary_min_tokens=300,
        )  # fmt: skip
        self.pool = HandRun()
        self.events: list[Event] = []
        self.engine = ContextCompressor(config, context_length=window)
        self.manager = ContextManager(
            self.engine, on_event=self.events.append, background=SessionBackground(self.pool)
        )
        self.factor = factor
        self.deferred_turns = 0
        """Requests with a deferral since the last compaction completed."""

    def counted(self, tokens: int) -> int:
        """The provider's count of a request we estimate at ``tokens`` (at least ours)."""
        return math.ceil(tokens * self.factor)

    def turn(self, working: list[Message]) -> list[Message]:
        manager, seen = self.manager, len(self.events)
        steps = manager.turn(working)
        step = next(steps)
        while isinstance(step, Wait):  # only at the hard mark, or over the window
            self.pool.run()
            step = steps.send(None)
        request: list[Message] = step
        tokens = manager.estimate(request)
        self.check_sent(working, request, tokens, self.events[seen:])
        answered: Answered | None = Answered({"usage": {"prompt_tokens": self.counted(tokens)}})
        try:
            while True:  # real usage at the hard mark may wait for the job too
                assert isinstance(steps.send(answered), Wait), "one request per turn"
                answered = None
                self.pool.run()
        except StopIteration as stop:
            out: list[Message] = stop.value
        self.check_turn(self.events[seen:])
        assert self.pool.live() <= 1  # one job per session
        return out

    def check_sent(
        self, working: list[Message], request: list[Message], tokens: int, events: list[Event]
    ) -> None:
        manager = self.manager
        assert violations(request) == [], violations(request)
        deferred = [e for e in events if e.kind is EventKind.COMPACTION_DEFERRED]
        if deferred:
            assert request == wire(working)  # sent unchanged
            assert self.counted(tokens) < manager.hard_mark  # as the provider counts it
            assert tokens >= manager.threshold
        # Over the window only when the must-fit path ran and could not fit (the floor).
        fitted = any(e.kind is EventKind.COMPACTION_STARTED and e.attempt for e in events)
        assert tokens < manager.window or fitted

    def check_turn(self, events: list[Event]) -> None:
        deferred = False
        for seen in events:
            if seen.kind is EventKind.COMPACTION_DEFERRED:
                deferred = True
            elif seen.kind is EventKind.COMPACTION_FINISHED and seen.receipt is not None:
                # A deferral in this turn before the compaction counts this request.
                assert seen.receipt.deferred_requests == self.deferred_turns + deferred
                self.deferred_turns, deferred = 0, False
        self.deferred_turns += deferred


@EXAMPLES
@given(
    messages=conversation(),
    window=st.sampled_from([2_000, 4_000, 8_000]),
    hard=st.sampled_from([0.9, 1.0]),
    first_n=st.integers(0, 3),
    factor=st.sampled_from([1.0, 1.15]),
    ready=st.lists(st.booleans(), min_size=1, max_size=40),
)
def test_deferred_requests_stay_under_the_hard_mark_and_invariants_hold(
    messages: list[Message],
    window: int,
    hard: float,
    first_n: int,
    factor: float,
    ready: list[bool],
) -> None:
    replay = Replay(window, hard, first_n, factor)
    working: list[Message] = []
    for number, message in enumerate(messages):
        if message.get("role") == "assistant" and working:
            working = replay.turn(working)
            if ready[number % len(ready)]:
                replay.pool.run()  # the job finished while the agent worked
        working.append(message)
    kinds = {e.kind for e in replay.events}
    event(f"deferred: {EventKind.COMPACTION_DEFERRED in kinds}")  # how often each path ran
    applied = any(e.receipt and e.receipt.background for e in replay.events)
    event(f"applied from the background: {applied}")
