"""Random hostile histories (issue 10): no exception, no invariant violation, anywhere.

The histories (:mod:`windowkeeper.testing.histories`) are valid conversations with tool-call
arguments nested up to 5,000 levels, 5,000-digit integer literals, broken JSON, CJK, emoji,
lone surrogates, images and parallel calls. Each is validated, read back from JSONL,
compressed at a random window from 2K to 200K (forced or not), run through the manager's
preflight and, for some, stored, read back and compacted in SQLite. ``scripts/fuzz.py``
runs 10,000 of them and reports the figures in docs/benchmarks.md.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from windowkeeper.core.messages import content_text, tool_calls
from windowkeeper.store import SessionStore, open_store
from windowkeeper.testing.histories import fuzz_case, random_history


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SessionStore]:
    path = tmp_path_factory.mktemp("fuzz") / "fuzz.db"
    with open_store(f"sqlite:///{path}") as opened:
        yield opened


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(min_value=0, max_value=2**32 - 1))
def test_random_history_compresses_cleanly(seed: int) -> None:
    case = fuzz_case(seed)
    assert case.exception == "", f"seed {seed}: {case.exception}"
    assert case.violations == (), f"seed {seed}: {case.violations}"
    assert not case.task_dropped, f"seed {seed}: the newest written request was dropped"


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(min_value=0, max_value=2**32 - 1))
def test_random_history_through_the_store(seed: int, store: SessionStore) -> None:
    case = fuzz_case(seed, store)
    assert case.exception == "" and case.violations == (), f"seed {seed}: {case}"


def test_the_histories_are_as_hostile_as_promised() -> None:
    """The generator covers what the fuzz claims (so passing means something)."""
    seen: set[str] = set()
    for seed in range(150):
        history = random_history(random.Random(seed))
        users = [m for m in history if m["role"] == "user"]
        if len(users) > 1 and not content_text(users[-1]["content"]):
            seen.add("ends in a send without text")
            if not users[-1]["content"]:
                seen.add("ends in an empty parts list")
            else:
                seen.add("ends in images alone")
        for message in history:
            text = json.dumps(message)
            if "\\ud8" in text or "\\udf" in text:
                seen.add("lone surrogate")
            if any("\u4e00" <= ch <= "\u9fff" for ch in content_text(message.get("content"))):
                seen.add("cjk")
            if "image_url" in text:
                seen.add("image")
            if message.get("role") == "user" and not content_text(message.get("content")):
                seen.add("user without text")
            calls = tool_calls(message)
            if len(calls) > 1:
                seen.add("parallel calls")
            for call in calls:
                arguments = call["function"]["arguments"]
                if arguments.startswith("[" * 1_000):
                    seen.add("5,000-deep arguments" if len(arguments) >= 10_000 else "deep")
                if "9" * 4_301 in arguments:
                    seen.add("huge integer")
    assert {"lone surrogate", "cjk", "image", "parallel calls", "5,000-deep arguments",
            "huge integer", "user without text", "ends in a send without text",
            "ends in an empty parts list", "ends in images alone"} <= seen, seen  # fmt: skip


def test_fuzz_script_runs(tmp_path: Path) -> None:
    import subprocess
    import sys

    script = Path(__file__).resolve().parents[1] / "scripts" / "fuzz.py"
    done = subprocess.run(
        [sys.executable, str(script), "--count", "20", "--store-every", "10"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "exceptions: 0" in done.stdout and "invariant violations: 0" in done.stdout
    assert "newest written request dropped (neither kept nor restated): 0" in done.stdout
