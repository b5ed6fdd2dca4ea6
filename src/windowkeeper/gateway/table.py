"""The gateway's sessions in memory: bounded by count and by bytes, least recently used
evicted first.

A session holds each branch's client history (the parsed body of its newest request and
the canonical messages converted from it), its compacted prefix and its estimates, so
its memory follows the size of the bodies its agent sends. The table keeps the sum of
each session's newest body sizes (one per branch) under ``max_bytes`` as well as the
number of sessions under ``capacity``. An evicted session is rebuilt on its next request:
from the store when there is one, else by compacting its history again. A session whose
lock is held (a request in flight) is never evicted, nor the one just used.
"""

from __future__ import annotations

from collections import OrderedDict

from .sessions import GatewaySession


class SessionTable:
    """Sessions by key, least recently used evicted first (a locked session never is)."""

    def __init__(self, capacity: int, max_bytes: int) -> None:
        self.capacity = capacity
        self.max_bytes = max_bytes
        self._sessions: OrderedDict[str, GatewaySession] = OrderedDict()
        self._sizes: dict[str, int] = {}
        """Each session's size when it was last accounted (what ``total`` sums)."""
        self.total = 0
        """Bytes of the newest bodies of every session's branches, as last accounted."""

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, key: str) -> GatewaySession | None:
        session = self._sessions.get(key)
        if session is not None:
            self._sessions.move_to_end(key)
        return session

    def add(self, session: GatewaySession) -> GatewaySession:
        """Insert ``session`` unless one with its key exists; returns the one kept."""
        existing = self._sessions.get(session.key)
        if existing is not None:
            return existing
        self._sessions[session.key] = session
        self._trim(session)
        return session

    def account(self, session: GatewaySession) -> None:
        """Record ``session``'s size after a request, then evict while over a bound."""
        if self._sessions.get(session.key) is not session:
            return  # evicted meanwhile (or replaced): nothing of it is held here
        size = session.size()
        self.total += size - self._sizes.get(session.key, 0)
        self._sizes[session.key] = size
        self._trim(session)

    def _trim(self, newest: GatewaySession) -> None:
        """Evict idle sessions, oldest first, while over a bound; never ``newest`` (the
        one just used: a session larger than the bound alone stays until another is used)."""
        over = len(self._sessions) - self.capacity
        if over <= 0 and self.total <= self.max_bytes:
            return
        idle = [k for k, s in self._sessions.items() if s is not newest and not s.lock.locked()]
        for key in idle:
            if over <= 0 and self.total <= self.max_bytes:
                break
            del self._sessions[key]
            self.total -= self._sizes.pop(key, 0)
            over -= 1
