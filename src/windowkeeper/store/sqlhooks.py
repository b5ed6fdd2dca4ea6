"""The hooks every mixin of :class:`~windowkeeper.store.sqlbase.SQLStore` calls, declared once."""

from __future__ import annotations

import abc
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any, Generic

from .base import Clock
from .sqltypes import C, Cursor, Mode

__all__ = ("SQLHooks",)


class SQLHooks(abc.ABC, Generic[C]):
    """Transactions, canonical SQL and the clock (supplied by ``SQLStore``)."""

    _clock: Clock

    @abc.abstractmethod
    def _tx(self, mode: Mode = "write") -> AbstractContextManager[C]:
        """One transaction (see :class:`~windowkeeper.store.sqlbase.SQLStore`)."""

    @abc.abstractmethod
    def _run(self, conn: C, sql: str, params: Sequence[Any]) -> Cursor:
        """Run canonical SQL."""

    @abc.abstractmethod
    def _sql(self, text: str) -> str:
        """Canonical SQL rewritten into the dialect."""
