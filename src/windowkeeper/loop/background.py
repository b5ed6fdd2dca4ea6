"""Background compaction around an agent's requests (design §4): the jobs and their pool.

A session has at most one job at a time (:class:`SessionBackground`); every session of a
process shares one bounded pool of daemon worker threads (:class:`Workers`), so a burst
of sessions never starts more summaries at once than the pool allows, and a process that
exits never waits for a summary nobody needs. Both drivers of the turn machine use the
same jobs: the sync one blocks on a job's future, the async one awaits it, and neither
runs the job on its own thread or event loop.

A job's life: started at the soft mark, or past the trigger when none was (the request
goes out unchanged) → running → done with a
:class:`~windowkeeper.engine.prepared.PreparedCompaction` or a
:class:`~windowkeeper.core.report.DiscardReason` → taken at the first request that finds
it done (applied or discarded by the manager) or dropped (a foreground compaction
superseded it, the session was reset). A job still queued when a request must wait for
it (at the hard mark) is cancelled (``not_started``) rather than waited for behind other
sessions' jobs.

With a :class:`Sharing` (the gateway's store) a job runs under the session's lease and
publishes its result, a session without a job of its own may take one another process
prepared, and a foreground compaction holds the lease too, so no two processes summarize
the same turns.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from ..core.messages import Message
from ..core.report import DiscardReason
from ..engine.background import BackgroundCompaction
from ..engine.prepared import PreparedCompaction

__all__ = (
    "CLAIM_WAIT",
    "DEFAULT_WORKERS",
    "InlineWorkers",
    "Job",
    "Outcome",
    "SessionBackground",
    "Sharing",
    "Workers",
    "shared_workers",
)

log = logging.getLogger("windowkeeper.loop.background")

T = TypeVar("T")
Outcome = PreparedCompaction | DiscardReason
Work = Callable[[], Outcome]

DEFAULT_WORKERS = 4
"""Background compactions running at once in a process, across all its sessions."""

CLAIM_WAIT = 300.0
"""Seconds a request at the hard mark waits for another process to let go of the
session's lease (the lease's own time to live; a dead holder's is taken over sooner)."""


class Workers:
    """A bounded pool of daemon threads: at most ``workers`` jobs run at once and at most
    ``backlog`` (default: as many) wait for a thread; :meth:`submit` refuses the rest.
    A thread lives only while there is work (an idle process holds none)."""

    def __init__(self, workers: int = DEFAULT_WORKERS, backlog: int | None = None) -> None:
        self.workers = max(1, workers)
        self.capacity = self.workers + (self.workers if backlog is None else max(0, backlog))
        self._jobs: deque[tuple[Future[Any], Callable[[], Any]]] = deque()
        self._lock = threading.Lock()
        self._pending = 0
        self._threads = 0
        self._running = 0

    def submit(self, fn: Callable[[], T]) -> Future[T] | None:
        """Run ``fn`` on a worker; ``None`` when the pool is full."""
        future: Future[T] = Future()
        with self._lock:
            if self._pending >= self.capacity:
                return None
            self._pending += 1
            self._jobs.append((future, fn))
            if self._threads < self.workers:
                self._threads += 1
                threading.Thread(target=self._work, name="windowkeeper-bg", daemon=True).start()
        return future

    def _work(self) -> None:
        while True:
            with self._lock:
                if not self._jobs:
                    self._threads -= 1  # under the lock: submit starts another if needed
                    return
                future, fn = self._jobs.popleft()
            try:
                if future.set_running_or_notify_cancel():
                    with self._lock:
                        self._running += 1
                    try:
                        future.set_result(fn())
                    # A job is library code around a user's summarizer: whatever it
                    # raises is the job's outcome (a discarded preparation), never a
                    # dead worker.
                    except BaseException as exc:
                        future.set_exception(exc)
                    finally:
                        with self._lock:
                            self._running -= 1
            finally:
                with self._lock:
                    self._pending -= 1

    def saturated(self) -> bool:
        """Every worker is running a job: a job queued now waits for one to finish."""
        with self._lock:
            return self._running >= self.workers


class InlineWorkers(Workers):
    """Runs each job at once on the caller's thread, so it is done before the request
    that started it goes out: for offline replays (``replay``, ``eval``), where no agent
    turn hides a summary and what they report must not depend on threads' timing (as if
    every summary finished within one turn of the agent)."""

    def __init__(self) -> None:
        super().__init__(1)

    def submit(self, fn: Callable[[], T]) -> Future[T] | None:
        future: Future[T] = Future()
        future.set_running_or_notify_cancel()
        try:
            future.set_result(fn())
        # As on a worker thread: the job's failure is its outcome (a discarded preparation).
        except Exception as exc:
            future.set_exception(exc)
        return future

    def saturated(self) -> bool:
        return False


_shared: Workers | None = None
_shared_lock = threading.Lock()


def shared_workers() -> Workers:
    """The process's default pool (created on first use)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = Workers()
        return _shared


class Sharing(Protocol):
    """Where a session's prepared compaction is shared with other processes (the
    gateway's store). Methods other than :meth:`preparer` may block on I/O."""

    def preparer(self) -> Callable[[Work], Outcome]:
        """Bound now, on the request path and without I/O, to the session as it is
        stored: runs a preparation (in the worker) under the session's lease and
        publishes its result; ``claimed`` when another process holds the lease."""

    def take(self) -> Outcome | None:
        """At the trigger, without a job of this process: a compaction another process
        prepared for the session as it stands now; ``claimed`` while a live process holds
        the session's lease; else ``None``, and the lease is now this process's, for its
        foreground compaction (until :meth:`release`)."""

    def release(self) -> None:
        """Release the lease :meth:`take` took."""

    def settled(self, prepared: PreparedCompaction, reason: DiscardReason | None) -> None:
        """``prepared`` was applied (``reason`` ``None``) or discarded."""

    def released(self, limit: float) -> bool:
        """Block until no live process but this one holds the session's lease, at most
        ``limit`` seconds; False when one still does (nothing is taken either way)."""


@dataclass
class Job:
    """One preparation: its future, the history length it was started on, when, the
    session's compaction count then (a later compaction supersedes it) and the request
    size it was started at (``None``: not known)."""

    future: Future[Outcome]
    length: int
    started: float
    compactions: int
    tokens: int | None = None
    reported: bool = False


class SessionBackground:
    """One session's background compaction (see the module docstring).

    ``on_prepared`` is called *on the worker thread* as soon as a job has a compaction
    ready (a gateway's metrics); the manager's own event for it comes on the request path.
    """

    def __init__(
        self,
        workers: Workers | None = None,
        sharing: Sharing | None = None,
        clock: Callable[[], float] = time.monotonic,
        on_prepared: Callable[[PreparedCompaction], None] | None = None,
    ) -> None:
        self.workers = workers
        self.sharing = sharing
        self.clock = clock
        self.on_prepared = on_prepared
        self.job: Job | None = None
        self.holding = False
        """The shared lease is this process's, for a foreground compaction."""

    def start(
        self,
        engine: BackgroundCompaction,
        messages: Sequence[Message],
        compactions: int,
        tokens: int | None = None,
    ) -> bool:
        """Start preparing a compaction of ``messages`` as they stand (at the soft mark or
        past the trigger; ``tokens``: their request size); False when a job exists or the
        pool is full."""
        if self.job is not None:
            return False
        snapshot = list(messages)  # the caller keeps appending to its own list
        state = engine.detached()  # the state as it is now, read on this thread

        def work() -> Outcome:
            return state.prepare(snapshot, tokens)

        task: Work = work
        if self.sharing is not None:
            run = self.sharing.preparer()

            def task() -> Outcome:
                return run(work)

        future = (self.workers or shared_workers()).submit(task)
        if future is None:
            log.debug("background pool full; this session compacts in the foreground")
            return False
        self.job = Job(future, len(snapshot), self.clock(), compactions, tokens)
        if self.on_prepared is not None:
            future.add_done_callback(self._done)
        return True

    def _done(self, future: Future[Outcome]) -> None:
        if self.on_prepared is None or future.cancelled() or future.exception() is not None:
            return
        outcome = future.result()
        if isinstance(outcome, PreparedCompaction):
            try:
                self.on_prepared(outcome)
            # A callback's failure must not reach the worker (it only counts).
            except Exception:
                log.exception("on_prepared raised; ignored")

    def finished(self) -> Outcome | None:
        """The outcome of a job that finished since the last call (reported once)."""
        job = self.job
        if job is None or job.reported or not job.future.done() or job.future.cancelled():
            return None
        job.reported = True
        return _outcome(job.future)

    def running(self, length: int) -> bool:
        """A job is under way (queued or running) on a history no longer than
        ``length``: the request past the trigger can go out without it."""
        job = self.job
        return job is not None and not job.future.done() and job.length <= length

    def pending(self, length: int) -> Future[Outcome] | None:
        """The job the trigger should wait for: one started on a history no longer than
        ``length`` that is running or about to. A job queued while every worker runs
        another session's is cancelled instead; a finished one needs no wait."""
        job = self.job
        if job is None or job.future.done() or job.length > length:
            return None
        workers = self.workers or shared_workers()
        if not job.future.running() and workers.saturated() and job.future.cancel():
            return None
        return job.future

    def take(self, length: int) -> Outcome | None:
        """At the trigger, after :meth:`pending`'s wait: the job's outcome (the job is
        consumed); without one (or when another process held the lease), what the
        sharing says (:meth:`Sharing.take`); ``None`` when nothing was prepared."""
        job, self.job = self.job, None
        if job is not None:
            if job.future.cancelled():
                return DiscardReason.NOT_STARTED
            if job.length > length:
                job.future.cancel()  # a rewound history: a queued job need not run
                return DiscardReason.EDITED
            outcome = _outcome(job.future)
            if outcome is not DiscardReason.CLAIMED:
                return outcome
        if self.sharing is None:
            return None
        found = self.sharing.take()
        self.holding = found is None
        return found

    def claim_released(self) -> Future[bool] | None:
        """Another process holds the session's lease: a future done once it lets go (or
        :data:`CLAIM_WAIT` passes), watched on a thread of its own so that neither
        driver blocks its caller's loop; ``None`` without a sharing."""
        sharing = self.sharing
        if sharing is None:
            return None
        future: Future[bool] = Future()
        future.set_running_or_notify_cancel()

        def watch() -> None:
            try:
                future.set_result(sharing.released(CLAIM_WAIT))
            # A store's failure ends the wait; the take that follows decides without it.
            except BaseException as exc:
                future.set_exception(exc)

        threading.Thread(target=watch, name="windowkeeper-claim", daemon=True).start()
        return future

    def release(self) -> None:
        """After a foreground compaction: the lease :meth:`take` took goes back."""
        if self.holding and self.sharing is not None:
            self.holding = False
            self.sharing.release()

    def supersede(self, compactions: int) -> DiscardReason | None:
        """A foreground compaction completed: a job started before it is dropped (its
        thread finishes on its own); ``superseded`` when there was one."""
        job = self.job
        if job is None or job.compactions >= compactions:
            return None
        self.job = None
        job.future.cancel()
        return DiscardReason.SUPERSEDED

    def forget(self) -> None:
        """Drop the job without a word (the session was replaced from elsewhere)."""
        if self.job is not None:
            self.job.future.cancel()
        self.job = None


def _outcome(future: Future[Outcome]) -> Outcome:
    try:
        return future.result()
    # The job's own failure (its summarizer's, a store's): the preparation is discarded.
    except Exception as exc:
        log.warning("background compaction failed: %s: %s", type(exc).__name__, exc)
        return DiscardReason.FAILED
