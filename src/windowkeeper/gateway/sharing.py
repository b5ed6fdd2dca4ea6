"""A branch's background compaction shared through the store (design §4, §7).

Several gateways serve one session from one store; a compaction prepared in the
background by one of them must be the only summary of those turns. So a branch's job runs
under the session's compression lease and stores its result with the session
(:class:`~windowkeeper.store.prepared.PreparedCompactions`); a gateway that crosses the
trigger without a job of its own applies what the store holds for the session as it is
now (same generation, same content), or sends the request as it is while another live
gateway holds the lease (at the hard mark it waits for that gateway to let go, then
applies what it stored), or takes the lease for its own foreground compaction (so a job
queued elsewhere finds it taken, or the session compacted, and summarizes nothing). A
restarted gateway finds the stored one the same way.

Store failures never fail a request: a job whose lease cannot be read runs locally (the
commit's generation check keeps a duplicate harmless), and a failed read is "nothing
prepared".
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..core.errors import StoreError
from ..core.report import DiscardReason
from ..engine.prepared import PreparedCompaction
from ..loop.background import Outcome, Work
from ..store import PreparedCompactions, PreparedState, SessionStore
from ..store.lease import Heartbeat, lease_is_dead

if TYPE_CHECKING:
    from .sessions import Branch

__all__ = ("StoreSharing",)

log = logging.getLogger("windowkeeper.gateway")


class StoreSharing:
    """The :class:`~windowkeeper.loop.background.Sharing` of one branch."""

    def __init__(self, store: SessionStore, branch: Branch, holder: str) -> None:
        assert isinstance(store, PreparedCompactions)
        self.store = store
        self.prepared: PreparedCompactions = store
        self.branch = branch
        self.holder = holder
        self.held: Heartbeat | None = None
        """The lease :meth:`take` took for a foreground compaction, kept alive."""

    def preparer(self) -> Callable[[Work], Outcome]:
        store_id, generation = self.branch.store_id, self.branch.generation
        if store_id is None or generation < 0:
            return _local  # not stored yet (or being reloaded): nobody else can see it

        def run(work: Work) -> Outcome:
            return self._under_lease(store_id, generation, work)

        return run

    def _under_lease(self, store_id: str, generation: int, work: Work) -> Outcome:
        store, holder = self.store, self.holder
        try:
            if not store.acquire_lock(store_id, holder):
                return DiscardReason.CLAIMED
        except StoreError as exc:
            log.warning("compression lease unavailable, preparing without it: %s", exc)
            return work()
        try:
            with Heartbeat(store, store_id, holder):
                if self._moved_on(store_id, generation):
                    return DiscardReason.SUPERSEDED  # compacted elsewhere while queued
                outcome = work()
                if isinstance(outcome, PreparedCompaction):
                    self._publish(store_id, generation, outcome)
                return outcome
        finally:
            _release(store, store_id, holder)

    def _moved_on(self, store_id: str, generation: int) -> bool:
        try:
            return self.store.get_session(store_id).generation != generation
        except StoreError:
            return False

    def _publish(self, store_id: str, generation: int, prepared: PreparedCompaction) -> None:
        try:
            body = prepared.to_json()
            if not self.prepared.put_prepared(
                store_id, generation=generation, holder=self.holder, body=body
            ):
                log.info("session moved on while its compaction was prepared; not stored")
        except StoreError as exc:
            log.warning("could not store a prepared compaction: %s", exc)

    def take(self) -> Outcome | None:
        store_id, generation = self.branch.store_id, self.branch.generation
        if store_id is None or generation < 0:
            return None
        store = self.store
        try:
            # The lease first: a job elsewhere publishes before it lets the lease go, so
            # what is read under the lease is all there is.
            if not store.acquire_lock(store_id, self.holder):
                return DiscardReason.CLAIMED  # a live process is preparing it
            record = self.prepared.prepared(store_id)
        except StoreError as exc:
            log.warning("could not read a prepared compaction: %s", exc)
            return None
        ready = record is not None and record.state is PreparedState.READY
        if record is not None and ready and record.generation == generation:
            try:
                found = PreparedCompaction.from_json(record.body)
            except (ValueError, KeyError, TypeError) as exc:
                log.warning("a stored prepared compaction is unreadable (%s); ignored", exc)
            else:
                _release(store, store_id, self.holder)
                return found
        self.held = Heartbeat(store, store_id, self.holder).__enter__()
        return None  # the lease is this gateway's, for its foreground compaction

    def released(self, limit: float) -> bool:
        store_id = self.branch.store_id
        if store_id is None:
            return True
        deadline = time.monotonic() + limit
        pause = 0.02
        while True:
            try:
                lease = self.store.lease(store_id)
            except StoreError as exc:
                log.warning("could not read the compression lease: %s", exc)
                return True  # the take that follows finds out for itself
            if lease is None or lease.holder == self.holder:
                return True
            if lease_is_dead(lease, lease.read_at or time.time()):
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(pause)
            pause = min(0.25, pause * 2)

    def release(self) -> None:
        held, self.held = self.held, None
        if held is not None:
            held.__exit__(None, None, None)
            _release(self.store, held.session_id, self.holder)

    def settled(self, prepared: PreparedCompaction, reason: DiscardReason | None) -> None:
        store_id = self.branch.store_id
        if store_id is None:
            return
        try:
            self.prepared.settle_prepared(
                store_id, self.branch.generation, applied=reason is None,
                reason=reason.value if reason else None,
            )  # fmt: skip
        except StoreError as exc:
            log.warning("could not settle a prepared compaction: %s", exc)


def _local(work: Work) -> Outcome:
    return work()


def _release(store: SessionStore, store_id: str, holder: str) -> None:
    try:
        store.release_lock(store_id, holder)
    except StoreError as exc:  # it expires on its own
        log.debug("could not release the compression lease: %s", exc)
