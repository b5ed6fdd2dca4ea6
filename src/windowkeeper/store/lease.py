"""The compression lease's liveness (design §7): who holds it, is that holder still alive.

A lease whose holder is gone is taken over within seconds, not after the 300 s TTL:

* a holder id names its host and process (``host:pid:nonce``, see
  :func:`~windowkeeper.store.session.new_holder`); on the same host a process that no
  longer exists (or is a zombie) is dead, and its lease is taken over at once;
* a holder that promised heartbeats (:meth:`SessionStore.heartbeat` with ``every``) and
  missed two of them is dead wherever it ran (:data:`LEASE_HEARTBEAT` = 2 s, so within
  4 s of its last sign of life).

:class:`Heartbeat` beats for a compaction while it runs, in a daemon thread, so a slow
summarizer call is never mistaken for a dead holder.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from types import TracebackType

from ..core.errors import StoreError
from .base import Lease, SessionStore

__all__ = ("LEASE_HEARTBEAT", "Heartbeat", "holder_alive", "lease_is_dead")

log = logging.getLogger("windowkeeper.store")

LEASE_HEARTBEAT = 2.0
"""Seconds between a compaction's heartbeats; two missed ones make its lease stale."""


def holder_alive(holder: str) -> bool | None:
    """Whether the process named by a ``host:pid:nonce`` holder id still runs.

    ``None`` when that cannot be told here: another host, or an id of another shape.
    """
    host, _, rest = holder.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return None
    pid = int(pid_text)
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, under another user
    except OSError:
        return None
    return not _zombie(pid)


def lease_is_dead(lease: Lease, now: float) -> bool:
    """Expired, two promised heartbeats missed, or its holder's process is gone.

    The SQL backends evaluate the same rule in their lease upsert (the process check
    is done in Python first and passed in as the dead holder).
    """
    if lease.expires_at <= now:
        return True
    beats, last = lease.heartbeat_every, lease.heartbeat_at
    if beats is not None and last is not None and last + 2 * beats <= now:
        return True
    return holder_alive(lease.holder) is False


def _zombie(pid: int) -> bool:
    """A process that exited but was not reaped yet (Linux ``/proc``; else assume not)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            stat = handle.read()
    except OSError:
        return False
    # The state follows the parenthesized command name, which may itself hold spaces.
    return stat.rpartition(")")[2].split()[:1] == ["Z"]


class Heartbeat:
    """Beats the lease of ``holder`` every ``every`` seconds until the ``with`` ends.

    The first beat is sent on entry (it records the promised interval). A failing beat
    is logged at debug level and retried at the next interval: the lease's TTL is the
    fallback, and the commit's generation check keeps a taken-over compaction harmless.
    """

    def __init__(
        self, store: SessionStore, session_id: str, holder: str, every: float = LEASE_HEARTBEAT
    ) -> None:
        self.store = store
        self.session_id = session_id
        self.holder = holder
        self.every = every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="windowkeeper-lease", daemon=True)

    def beat(self) -> bool:
        try:
            return self.store.heartbeat(self.session_id, self.holder, every=self.every)
        except StoreError as exc:
            log.debug("lease heartbeat failed: %s", exc)
            return False

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self.beat()

    def __enter__(self) -> Heartbeat:
        self.beat()
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join()
