"""The extraction's gates of issue 27 (session 21), each compared on generated input with
the code it replaced (kept here as the reference): the clue sets found in one Hyperscan
pass (``facts.clued_items``) against one substring test and regex scan per clue; the
inline-code pattern tried only where an interpreter's name starts against a search of
the whole command; ``hidden_failure`` answering a failed or unpiped call without its
test summary; ``_staging`` answering a command without ``git`` or ``cd`` unsplit."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper.analysis import checks, facts, probes
from windowkeeper.analysis.events import ToolEvent
from windowkeeper.analysis.facts import Clues, clued_items
from windowkeeper.analysis.resolution import segments
from windowkeeper.analysis.toolshapes import ToolAction, ToolKind
from windowkeeper.core import hint_scan
from windowkeeper.summary.handoff import decide, fixes, users, work

CLUE_SETS: dict[str, Clues] = {
    "decisions": decide._DECISION_CLUES,
    "why": decide._WHY_CLUES,
    "claims": work._CLAIM_CLUES,
    "telling": fixes._TELLING_CLUES,
    "rules": users._CLUES,
    "soft rules": users._SOFT_CLUES,
}


def _per_clue(items: list[str], clues: Clues) -> list[str]:
    """``clued_items`` as it was: an unregistered copy of the clues takes the per-clue
    scans (each clue's word looked for, then its pattern scanned), the code replaced."""
    copy = tuple([*clues])  # a new tuple (tuple() of a tuple is the same object)
    assert id(copy) not in facts._SCANNERS
    return clued_items(items, copy)


def _fragments(clues: Clues) -> list[str]:
    """Words of the clues' patterns, cut and cased, with the characters folding moves
    (``İ`` lowers to two, ``K`` the Kelvin sign and ``ſ`` to ASCII) and line breaks."""
    words = {w for pattern in (c.pattern for _, c in clues) for w in re.findall(r"[\w']+", pattern)}
    cut = {w[: len(w) // 2] for w in words} | {w[len(w) // 2 :] for w in words}
    return [
        *sorted(words | cut | {w.upper() for w in words}),
        " ", "  ", "\n", ".", "?", "i", "we", "the", "not", "n't", "é", "\u0130", "\u212a",
        "\u017f", "\u0131", "\u0307", "\u00a0", "😀",
    ]  # fmt: skip


@pytest.mark.skipif(hint_scan.hyperscan is None, reason="no hyperscan wheel")
@pytest.mark.parametrize("name", ["claims", "decisions", "telling", "why"])
def test_clue_sets_are_scanned_in_one_pass(name: str) -> None:
    clues = CLUE_SETS[name]
    assert facts._SCANNERS[id(clues)][0] is clues  # the one-pass path is the one tested


@pytest.mark.parametrize("name", ["rules", "soft rules"])
def test_clue_sets_with_punctuation_keep_the_per_clue_scans(name: str) -> None:
    # "can’t" (past Latin-1) and ", not" are no plain pattern
    assert id(CLUE_SETS[name]) not in facts._SCANNERS


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_one_pass_clues_pick_the_items_the_per_clue_scans_pick(data: st.DataObject) -> None:
    name = data.draw(st.sampled_from(sorted(CLUE_SETS)))
    clues = CLUE_SETS[name]
    item = st.lists(st.sampled_from(_fragments(clues)), max_size=12).map("".join)
    items = data.draw(st.lists(item, max_size=8))
    assert clued_items(items, clues) == _per_clue(items, clues)


def test_one_pass_clues_on_real_shapes() -> None:
    items = [
        "I'll use the cache instead.",
        "We will keep it.",
        "Not supported here.",
        "The bug is in the parser",
        "so only this",
        "It is cleaner",
        "nothing at all",
        "THE FIX IS HERE",
        "it doesn't support \u0130t",
        "tests now pass",
    ]
    for clues in CLUE_SETS.values():
        picked = clued_items(items, clues)
        assert picked == _per_clue(items, clues)
    assert clued_items(items, decide._DECISION_CLUES) != []


_OLD_INLINE = probes._INLINE

_SHELL = st.sampled_from([
    "python", "python3", "python3.11", "python.", "node", "ruby", "perl", "php", "nodejs",
    " ", "  ", "\t", "\n", "\u00a0", "\u2003", "|", ";", "&", "(", ")", "-c", "-e", "-",
    "--", "-m", "x", "'", "=", "/usr/bin/", "pythonpython", "e", "c",
])  # fmt: skip


@settings(max_examples=2_000, deadline=None)
@given(st.lists(_SHELL, max_size=14).map("".join))
def test_inline_code_found_where_the_whole_search_finds_it(command: str) -> None:
    assert probes._inline(command) == (_OLD_INLINE.search(command) is not None)


def test_inline_code_at_the_start_and_after_a_separator() -> None:
    assert probes._inline("python -c 'x'")
    assert probes._inline("cd a && python3 -c 'x'")
    assert probes._inline("a|node -e x")
    assert not probes._inline("mypython -c x")
    assert not probes._inline("python script.py")


def _event(command: str, result: str, failed: bool, code: int | None) -> ToolEvent:
    action = ToolAction("bash", ToolKind.SHELL, command, command=command)
    return ToolEvent(0, action, {"command": command}, result, code, failed)


def _old_hidden_failure(event: ToolEvent) -> str:
    return checks._hidden_failure(event, event.result or "", checks._test_summary(event) or "")


_COMMANDS = st.lists(
    st.sampled_from(["pytest", " | ", "tail -5", "python t.py", "2>&1", "grep x", ";", "|"]),
    max_size=6,
).map("".join)
_RESULTS = st.lists(
    st.sampled_from(
        [
            "\n",
            "3 passed in 0.1s",
            "1 failed, 2 passed",
            "Ran 4 tests in 0.2s",
            "OK",
            "FAILED (errors=1)",
            "Traceback (most recent call last):",
            "Error: boom",
            "ModuleNotFoundError: No module named 'x'",
            "No module named pytest",
            "ok",
            "x",
        ]
    ),
    max_size=8,
).map("\n".join)


@settings(max_examples=1_000, deadline=None)
@given(_COMMANDS, _RESULTS, st.booleans(), st.sampled_from([None, 0, 1]))
def test_hidden_failure_as_before(
    command: str, result: str, failed: bool, code: int | None
) -> None:
    new = checks.hidden_failure(_event(command, result, failed, code))
    assert new == _old_hidden_failure(_event(command, result, failed, code))


def test_hidden_failure_reads_no_summary_of_an_unpiped_call() -> None:
    event = _event("pytest", "3 passed in 0.1s", False, 0)
    assert checks.hidden_failure(event) == ""
    assert "test_summary" not in event.memo
    piped = _event("pytest | tail", "ModuleNotFoundError: No module named 'x'", False, 0)
    assert checks.hidden_failure(piped) != ""


_STAGING_WORDS = st.sampled_from([
    "git", "gi", "t", "add", "stage", "reset", "restore", "--staged", "commit", "cd", "c",
    "d", "x", " ", "\t", "\n", "&&", ";", "||", "A=1", "/tmp", "-m", "'", "<<", "EOF",
])  # fmt: skip


def _old_staging(command: str) -> bool:
    steps = segments(command)
    return bool(steps) and all(work._STAGING.match(s) or s.startswith("cd ") for s in steps)


@settings(max_examples=2_000, deadline=None)
@given(st.lists(_STAGING_WORDS, max_size=12).map(" ".join))
def test_staging_as_before(command: str) -> None:
    assert work._staging(command) == _old_staging(command)


# A clue whose word is not in its pattern's matches: the word still gates it. Registered
# once here (a registration is kept for good).
_LOOSE: Clues = facts.scanned_clues((("zzz", re.compile("abc")), ("abc", re.compile("abc"))))


def test_a_clue_counts_only_where_its_word_is_in_the_text() -> None:
    loose = _LOOSE[:1]
    assert clued_items(["abc", "x"], _LOOSE) == ["abc"]  # the second clue's word is there
    one: Clues = facts.scanned_clues(loose)
    assert clued_items(["abc", "x"], one) == _per_clue(["abc", "x"], one) == []
    assert clued_items(["abc", "zzz"], one) == _per_clue(["abc", "zzz"], one) == ["abc"]
