"""The ``store`` fixture: every contract test runs on memory, SQLite and PostgreSQL.

PostgreSQL runs when ``WINDOWKEEPER_TEST_POSTGRES_URL`` is set (``source
.ci/postgres.sh``); each test gets its own schema, dropped afterwards. Without it those
tests skip, unless ``WINDOWKEEPER_REQUIRE_POSTGRES=1`` makes that a failure.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from storeclock import FakeClock

from windowkeeper.store import SessionStore, open_store

PG_ENV = "WINDOWKEEPER_TEST_POSTGRES_URL"
REQUIRE_ENV = "WINDOWKEEPER_REQUIRE_POSTGRES"


def _unavailable(reason: str) -> None:
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{REQUIRE_ENV}=1 but PostgreSQL is unusable: {reason}", pytrace=False)
    pytest.skip(f"PostgreSQL tests skipped: {reason} (source .ci/postgres.sh to run them)")


def postgres_base_url() -> str:
    url = os.environ.get(PG_ENV, "").strip()
    if not url:
        _unavailable(f"{PG_ENV} is not set")
    try:
        import psycopg
    except ImportError:
        _unavailable("psycopg is not installed (pip install 'windowkeeper[postgres]')")
    try:
        with psycopg.connect(url, connect_timeout=5) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as exc:
        _unavailable(f"cannot connect to {url}: {exc}")
    return url


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A URL whose search_path is a fresh schema (dropped at teardown)."""
    import psycopg

    base = postgres_base_url()
    schema = f"wk_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    separator = "&" if "?" in base else "?"
    yield f"{base}{separator}options={quote(f'-csearch_path={schema}')}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA {schema} CASCADE")


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


@pytest.fixture(params=["sqlite", "postgres"])
def durable_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Backends that several processes can share."""
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
