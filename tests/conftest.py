"""Shared fixtures: the real sessions folder (skipped cleanly when absent) and PostgreSQL.

PostgreSQL runs when ``WINDOWKEEPER_TEST_POSTGRES_URL`` is set (``source
.ci/postgres.sh``); each test gets its own schema, dropped afterwards. Without it those
tests skip, unless ``WINDOWKEEPER_REQUIRE_POSTGRES=1`` makes that a failure.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

from realdata import SESSIONS_DIR


@pytest.fixture
def sessions_dir() -> Path:
    if not SESSIONS_DIR.is_dir():
        pytest.skip(f"real sessions not available at {SESSIONS_DIR}")
    return SESSIONS_DIR


@pytest.fixture
def summary_tier(monkeypatch: pytest.MonkeyPatch) -> None:
    """Compactions made through the settings (CLI, gateway) always reach the summary tier:
    for tests about the handoff, where pruning alone would otherwise be enough."""
    monkeypatch.setenv("WINDOWKEEPER_COMPRESSION__PRUNE_ONLY_RATIO", "0.01")


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
    base = postgres_base_url()  # first: it skips (or fails under CI) without psycopg
    import psycopg

    schema = f"wk_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    separator = "&" if "?" in base else "?"
    yield f"{base}{separator}options={quote(f'-csearch_path={schema}')}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA {schema} CASCADE")


@pytest.fixture(params=["sqlite", "postgres"])
def durable_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Backends that several processes can share."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'sessions.db'}"
    url: str = request.getfixturevalue("postgres_url")
    return url
