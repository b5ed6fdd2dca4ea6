"""The driver shapes the SQL backends share: transaction modes and the cursor/connection
protocols (both sqlite3 and psycopg satisfy them)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Protocol, TypeVar

__all__ = ("C", "Connection", "Cursor", "Mode")

Mode = Literal["write", "read", "snapshot"]
"""``write``: a transaction that changes rows; ``read``: one that only reads;
``snapshot``: a read whose statements must all see the same committed state."""


class Cursor(Protocol):
    """What ``execute`` returns, in both drivers."""

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


class Connection(Protocol):
    """The part of a driver connection the shared algorithms use."""

    def execute(self, sql: str, params: Sequence[Any] = ..., /) -> Cursor: ...


C = TypeVar("C", bound=Connection)
