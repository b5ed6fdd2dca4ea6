"""The ``store`` fixture: every contract test runs on memory, SQLite and PostgreSQL.

PostgreSQL comes from the ``postgres_url`` fixture of ``tests/conftest.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from storeclock import FakeClock

from windowkeeper.store import SessionStore, open_store


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "memory":
        return "memory://"
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'sessions.db'}"
    url: str = request.getfixturevalue("postgres_url")
    return url


@pytest.fixture
def store(store_url: str, clock: FakeClock) -> Iterator[SessionStore]:
    with open_store(store_url, clock=clock) as opened:
        yield opened


@pytest.fixture
def reopen(
    store: SessionStore, store_url: str, clock: FakeClock
) -> Iterator[Callable[[], SessionStore]]:
    """Open the same store again (a restart); memory has nothing to reopen."""
    opened: list[SessionStore] = []

    def again() -> SessionStore:
        if store_url.startswith("memory://"):
            return store
        fresh = open_store(store_url, clock=clock)
        opened.append(fresh)
        return fresh

    yield again
    for item in opened:
        item.close()
