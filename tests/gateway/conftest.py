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


def assert_no_threads_left(before: set[threading.Thread]) -> None:
    """Fail when a thread started during the test outlives it.

    A thread that was told to stop may still be winding down when the test ends: the
    server's thread, or an AnyIO worker the event loop stopped on shutdown (it exits
    after it reads its stop signal). Each gets five seconds to finish; one still alive
    after that is a leak.
    """
    leftover = [t for t in threading.enumerate() if t not in before and t.is_alive()]
    for thread in leftover:
        thread.join(timeout=5)
    leftover = [t for t in leftover if t.is_alive()]
    assert not leftover, f"threads left running: {leftover}"


@pytest.fixture
def upstream() -> Iterator[OpenAITestServer]:
    before = set(threading.enumerate())
    with OpenAITestServer(models=[{"id": "listed-model", "context_length": 50_000}]) as server:
        yield server
    assert_no_threads_left(before)


@pytest.fixture
def loopback() -> Iterator[LoopbackUpstream]:
    """The three-protocol loopback upstream (checked for leftover threads)."""
    before = set(threading.enumerate())
    with LoopbackUpstream(models=[{"id": "listed-model", "context_length": 50_000}]) as server:
        yield server
    assert_no_threads_left(before)
