"""The test runner's summary line: found from newline to newline, exactly where a
line-start (``^``) search finds it."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper.analysis import outputs
from windowkeeper.analysis.outputs import _TEST_SUMMARY

# The same pattern anchored at line starts (``^`` in MULTILINE), as it was written before.
LINE_STARTS = re.compile(_TEST_SUMMARY.pattern.replace(r"\n", "^", 1), _TEST_SUMMARY.flags)

FRAGMENTS = [
    "3 passed", "1 failed", ", ", "2 errors", " in 0.12s", "OK", "FAILED", " (failures=1)",
    "Ran 3 tests in 0.1s", "ok", "FAIL", "\t", " ", "=", "==", "test result: ok", "Tests:",
    "  1 total", "x", "a", "7", "no tests ran", "2 tests, 0 failures", "\n", "\n", "\r\n",
    "\r", "é", "  ok  pkg/a", "warnings",
]  # fmt: skip


def _groups(pattern: re.Pattern[str], text: str) -> list[tuple[int, str]]:
    return [(m.end(), m.group(1)) for m in pattern.finditer(text)]


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=40))
def test_newline_anchored_search_finds_what_line_starts_find(parts: list[str]) -> None:
    text = "".join(parts)
    # One newline put in front: every match ends one character later, same group.
    found = [(end - 1, group) for end, group in _groups(_TEST_SUMMARY, "\n" + text)]
    assert found == _groups(LINE_STARTS, text)


def test_the_summary_lines() -> None:
    pytest_output = "collected 3 items\n\ntests/a.py ...\n\n===== 3 passed in 0.05s =====\n"
    assert outputs.test_summary(pytest_output) == "3 passed in 0.05s"
    unittest_output = "...\n----\nRan 3 tests in 0.001s\n\nFAILED (failures=1)"
    assert outputs.test_summary(unittest_output) == "Ran 3 tests in 0.001s — FAILED (failures=1)"
    assert outputs.test_summary("3 passed") == "3 passed"  # the first line of the window too
    assert outputs.test_summary("building\nx 3 passed\n") is None  # not at a line start
