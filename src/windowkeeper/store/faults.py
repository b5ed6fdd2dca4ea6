"""What the store reports about itself: damage, a missing store, a check's result, a lease.

Leaf definitions (no other store module is imported here), re-exported by
:mod:`windowkeeper.store.base`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.errors import StoreError

__all__ = (
    "DAMAGE_ADVICE",
    "Lease",
    "StoreCheck",
    "StoreDamageError",
    "StoreMissingError",
    "StoreOutdatedError",
)

DAMAGE_ADVICE = (
    "the store is damaged: run `windowkeeper sessions check`, and restore the store from a "
    "backup (or export the other sessions and start a new store)"
)


class StoreDamageError(StoreError):
    """A stored value cannot be decoded, or the store file is damaged or not a store.

    ``reason`` names the session and row (or the file) and the defect; the message adds
    what to do (:data:`DAMAGE_ADVICE`) unless ``advice`` is False (the advice is in the
    reason already, e.g. "not a windowkeeper store: use another path").
    """

    def __init__(self, reason: str, *, advice: bool = True) -> None:
        self.reason = reason
        super().__init__(f"{reason}; {DAMAGE_ADVICE}" if advice else reason)


class StoreMissingError(StoreError):
    """A command that only reads found no store at the path (and created none)."""

    def __init__(self, path: str) -> None:
        self.path = path
        super().__init__(f"no store at {path} (nothing has been stored there yet)")


class StoreOutdatedError(StoreError):
    """A store opened read-only needs migrations it cannot apply read-only."""

    def __init__(self, where: str, pending: list[str]) -> None:
        self.pending = pending
        super().__init__(
            f"{where} was written by an older windowkeeper and needs upgrading "
            f"({', '.join(pending)}), which cannot be done where it cannot be written: "
            "copy it to a writable place, or open it once with a command that writes"
        )


@dataclass(frozen=True)
class Lease:
    """Who holds a session's compression lease, since when, and its last sign of life.

    ``acquired_at``/``heartbeat_at`` are ``None`` for a lease written before they were
    recorded; ``heartbeat_every`` is ``None`` when the holder promised no heartbeats.
    """

    holder: str
    expires_at: float
    acquired_at: float | None = None
    heartbeat_at: float | None = None
    heartbeat_every: float | None = None
    read_at: float | None = None
    """The store's clock when this was read (ages are differences against it)."""

    def describe(self) -> str:
        """``holder H, for 12 s, last heartbeat 1 s ago`` (what is known of it)."""
        parts = [f"holder {self.holder}"]
        if self.read_at is not None and self.acquired_at is not None:
            parts.append(f"for {max(0.0, self.read_at - self.acquired_at):,.0f} s")
        if self.read_at is not None and self.heartbeat_at is not None:
            parts.append(f"last heartbeat {max(0.0, self.read_at - self.heartbeat_at):,.0f} s ago")
        return ", ".join(parts)


@dataclass(frozen=True)
class StoreCheck:
    """The result of :meth:`SessionStore.check`: ``ok`` and one line saying what was found."""

    ok: bool
    detail: str
    sessions: int = 0
    rows: int = 0
    archive_entries: int = 0
