"""Keyed sessions with positional appends: what several gateway processes share (design §7).

A *keyed* session is found by a caller-chosen lookup key (the gateway's scoped session
and branch key) instead of its id, and its client messages are appended **by position**
with a content digest each:

* :meth:`KeyedSessions.open_keyed` creates the session for a key or returns the one that
  exists, atomically, so two processes never create two sessions for one key;
* :meth:`KeyedSessions.append_at` writes client messages ``start, start+1, …``; a
  position already stored with the same digest is skipped (idempotent), one stored with
  another digest is a conflict (nothing is written), and a gap (``start`` beyond the
  stored count) is refused. So writers that resend overlapping histories in any order
  store every client message exactly once;
* the session also keeps the context window learned from an upstream error
  (:meth:`KeyedSessions.set_window`), so a restart does not relearn it by overflowing.

Positional rows are ordinary ``append`` rows: compaction, archive and recall treat them as
any other row. The contract is here once; the backends implement it.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass

from ..core.messages import Message
from .base import SessionRecord

__all__ = ["AppendOutcome", "KeyedRecord", "KeyedSessions"]


@dataclass(frozen=True)
class KeyedRecord:
    """A keyed session: its record, key, learned window and stored client positions."""

    record: SessionRecord
    key: str
    window: int | None
    positions: int

    @property
    def id(self) -> str:
        return self.record.id


@dataclass(frozen=True)
class AppendOutcome:
    """The result of :meth:`KeyedSessions.append_at`.

    Attributes:
        positions: client messages stored after the call.
        last_seq: the row ``seq`` of position ``start + len(messages) - 1`` (the watermark
            a compaction covering those messages commits against); ``None`` when nothing
            was asked for or on conflict.
        conflict: the first position whose stored digest differs (nothing was written).
    """

    positions: int
    last_seq: int | None
    conflict: int | None = None

    @property
    def ok(self) -> bool:
        return self.conflict is None


class KeyedSessions(abc.ABC):
    """The keyed-session part of a store (memory, SQLite and PostgreSQL implement it)."""

    __slots__ = ()

    @abc.abstractmethod
    def open_keyed(self, key: str, *, title: str = "") -> KeyedRecord:
        """The live session with lookup ``key``, created empty if there is none."""

    @abc.abstractmethod
    def find_keyed(self, key: str) -> KeyedRecord | None:
        """The live session with lookup ``key``, or ``None``."""

    @abc.abstractmethod
    def list_keyed(self, prefix: str, *, limit: int = 100) -> list[KeyedRecord]:
        """Live keyed sessions whose key starts with ``prefix``, most recently updated first."""

    @abc.abstractmethod
    def append_at(
        self,
        session_id: str,
        start: int,
        messages: Sequence[Message],
        digests: Sequence[str],
    ) -> AppendOutcome:
        """Store client messages at positions ``start…`` (see the module docstring).

        Raises :class:`~windowkeeper.core.errors.StoreError` for a gap (``start`` beyond
        the stored positions), mismatched lengths, or an ended session.
        """

    @abc.abstractmethod
    def client_digests(self, session_id: str, start: int = 0, end: int | None = None) -> list[str]:
        """Digests of the stored client positions ``[start, end)`` in order."""

    @abc.abstractmethod
    def set_window(self, session_id: str, window: int | None) -> None:
        """Remember (or forget, with ``None``) the session's learned context window."""


def check_append(start: int, messages: Sequence[Message], digests: Sequence[str]) -> None:
    """The argument checks every backend shares."""
    from ..core.errors import StoreError

    if start < 0 or len(messages) != len(digests):
        raise StoreError("append_at needs start >= 0 and one digest per message")
