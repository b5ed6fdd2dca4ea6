"""Integration tests run against the real frameworks (the extras ``.ci/run`` installs).

A module whose framework is not installed is not collected, and the header says so;
under CI (``CI=true``) nothing is skipped, so a missing extra fails the run instead of
hiding the tests.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
from collections.abc import Iterator

import pytest

# LiteLLM fetches its model map from the network at import unless told to use its copy.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

FRAMEWORKS = {
    "test_langchain.py": ("langchain", "langchain.agents"),
    "test_litellm.py": ("litellm", "litellm.integrations.custom_logger"),
    "test_openai_agents.py": ("openai-agents", "agents"),
    "test_pydantic_ai.py": ("pydantic-ai", "pydantic_ai"),
    "test_mcp.py": ("mcp", "mcp.server.mcpserver"),
    "test_mcp_wire.py": ("mcp", "mcp.server.mcpserver"),
}


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


_missing = {test: extra for test, (extra, module) in FRAMEWORKS.items() if not _installed(module)}
collect_ignore = [] if os.environ.get("CI") == "true" else sorted(_missing)


def pytest_report_header() -> str | None:
    if not _missing:
        return None
    extras = ", ".join(sorted(set(_missing.values())))
    return f"integration tests not collected: install the extras {extras}"


@pytest.fixture(autouse=True)
def own_event_loop() -> Iterator[None]:
    """Frameworks' ``run_sync`` helpers use (Pydantic AI: create and keep) the thread's
    event loop; each test gets its own, closed afterwards, so none is left to the GC."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        yield
    finally:
        asyncio.set_event_loop(None)
        loop.close()
