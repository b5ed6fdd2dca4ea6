"""Patterns no longer compiled inside a compaction (issue 27: a cold compaction compiled
one per tracker item and per root): the loops that replace them give what the per-call
patterns gave, on generated text built from the characters those patterns look at."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper.summary.handoff import claims
from windowkeeper.summary.handoff.workpaths import relative_text

PIECES = st.sampled_from([
    "app-7", "app-7.1", "app", "-7", ".1", " · ", ": ", " - ", "—", " [P1] ", "[task]", "  ",
    " (blocked by x)", "\n", "Add export", "closed", "x", "é", "²", "_", "/", ".", "-", " ",
    "/repo/", "/repo/src/a.py", "a/repo/", "./repo/", "é/repo/", "_/repo/", "-/repo/",
])  # fmt: skip
TEXTS = st.lists(PIECES, max_size=40).map("".join)


def old_titles(item: str, text: str) -> list[str]:
    pattern = re.escape(item) + claims._TITLE_AFTER_ID
    return [m.group(1) for m in re.finditer(pattern, text, re.MULTILINE)]


@settings(max_examples=3_000, deadline=None)
@given(st.sampled_from(["app-7", "app-7.1", "app", "7", "a"]), TEXTS)
def test_title_matches_as_the_per_item_pattern(item: str, text: str) -> None:
    assert [m.group(1) for m in claims._after_id(item, text)] == old_titles(item, text)


@settings(max_examples=3_000, deadline=None)
@given(st.sampled_from(["/repo/", "/r/", "/repo/src/"]), TEXTS)
def test_relative_text_as_the_per_root_substitution(root: str, text: str) -> None:
    expected = re.sub(r"(?<![\w/.-])" + re.escape(root), "", text) if root in text else text
    assert relative_text(text, root) == expected


def test_the_examples_of_the_docstring() -> None:
    for line in (
        "○ app-7.1 · Add export  [P1]",
        "app-7.1: Add export",
        "app-7.1 [P2] [task] - Add export",
    ):
        assert claims.title_of("app-7.1", line) == "Add export"
    assert relative_text("see /repo/a.py and x/repo/b.py", "/repo/") == "see a.py and x/repo/b.py"
