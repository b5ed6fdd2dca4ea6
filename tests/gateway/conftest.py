"""Gateway fixtures: a real scripted upstream on loopback (checked for leftover threads)."""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Iterator

import pytest

from windowkeeper.testing import OpenAITestServer
from windowkeeper.testing.loopback import LoopbackUpstream

if importlib.util.find_spec("fastapi") is None or importlib.util.find_spec("uvicorn") is None:
    # Without the gateway extra these modules cannot even be imported; say so once.
    collect_ignore_glob = ["test_*.py"]

    def pytest_report_header() -> str:
        return "gateway tests not collected: install the gateway extra ('.[dev,gateway]')"


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


@pytest.fixture
def loopback() -> Iterator[LoopbackUpstream]:
    """The three-protocol loopback upstream (checked for leftover threads)."""
    before = set(threading.enumerate())
    with LoopbackUpstream(models=[{"id": "listed-model", "context_length": 50_000}]) as server:
        yield server
    leftover = [t for t in threading.enumerate() if t not in before and t.is_alive()]
    for thread in leftover:  # a server thread or its idle workers may still be winding down
        thread.join(timeout=5)
    leftover = [t for t in leftover if t.is_alive()]
    assert not leftover, f"threads left running: {leftover}"
