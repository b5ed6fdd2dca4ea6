"""Gateway fixtures: a real scripted upstream on loopback (checked for leftover threads)."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from windowkeeper.testing import OpenAITestServer


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def upstream() -> Iterator[OpenAITestServer]:
    before = set(threading.enumerate())
    with OpenAITestServer(models=[{"id": "listed-model", "context_length": 50_000}]) as server:
        yield server
    leftover = [t for t in threading.enumerate() if t not in before and t.is_alive()]
    assert not leftover, f"threads left running: {leftover}"
