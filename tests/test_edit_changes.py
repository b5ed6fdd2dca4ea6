"""What an edit changed, in the handoff (issue 24: a reader asked for "the concrete change
of an edit" and found only "edited helpers.py"): the gist of each of the newest edits
(first changed line, old → new), masked, carried across compactions and trimmed to fit."""

from __future__ import annotations

import difflib
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper.analysis import changes
from windowkeeper.analysis.changes import edit_gist, sed_change, text_gist
from windowkeeper.analysis.events import Analysis, ToolEvent
from windowkeeper.core.tokens import estimate_tokens
from windowkeeper.summary.handoff.extract import Placement, extract_state, previous_state
from windowkeeper.summary.handoff.fit import fitted
from windowkeeper.summary.handoff.model import HandoffState
from windowkeeper.summary.handoff.parse import parse_state, split_sections
from windowkeeper.summary.handoff.text import render
from windowkeeper.summary.handoff.worktext import CHANGES

Message = dict[str, Any]
NEW = Placement(task_in_head=False, user_in_tail=False)


def user(text: str) -> Message:
    return {"role": "user", "content": text}


def call(cid: str, name: str, args: dict[str, Any], output: str = "ok") -> list[Message]:
    function = {"name": name, "arguments": json.dumps(args)}
    return [
        {"role": "assistant", "content": None, "tool_calls": [{"id": cid, "function": function}]},
        {"role": "tool", "tool_call_id": cid, "content": output},
    ]


def edit(cid: str, path: str, old: str, new: str, output: str = "ok") -> list[Message]:
    return call(cid, "Edit", {"file_path": path, "old_string": old, "new_string": new}, output)


def the_events(turns: list[Message]) -> list[ToolEvent]:
    return list(Analysis(turns).events())


def state_of(turns: list[Message], previous: str | None = None) -> HandoffState:
    return extract_state(Analysis(turns), previous_state(previous), NEW)


def changes_section(body: str) -> list[str]:
    lines = split_sections(body)["Work State"]
    start = lines.index(CHANGES) + 1
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("- ")), len(lines))
    return lines[start:end]


# --- the gist --------------------------------------------------------------------------


def test_the_gist_is_the_first_telling_changed_line_old_to_new() -> None:
    old = "def area(r):\n    # the area\n    return 3.14 * r * r\n"
    new = "def area(r):\n    # the area of a circle\n    return math.pi * r ** 2\n"
    # The comment line changed first; the code line says what the code does now.
    assert text_gist(old, new) == (
        "`return 3.14 * r * r` → `return math.pi * r ** 2` (+2 more changed lines)"
    )
    assert text_gist("a = 1\n", "a = 1\nb = 2\nc = 3\n") == "added `b = 2` ⏎ `c = 3`"
    assert text_gist("a = 1\nb = 2\n", "a = 1\n") == "removed `b = 2`"
    assert text_gist("same", "same") == ""
    assert text_gist("x = `a`", "x = `b`") == "`` x = `a` `` → `` x = `b` ``"


def test_only_a_successful_edit_with_texts_has_a_gist() -> None:
    turns = [
        user("Fix area()."),
        *edit("e1", "/w/geo.py", "r * r", "r ** 2"),
        *edit("e2", "/w/geo.py", "pi", "tau", "Error: old_string not found in /w/geo.py"),
        *call("w1", "Write", {"file_path": "/w/new.py", "content": "x = 1\n"}),
        *call("m1", "MultiEdit", {"file_path": "/w/geo.py", "edits": [
            {"old_string": "a = 1", "new_string": "a = 2"},
            {"old_string": "b = 1", "new_string": "b = 2"},
        ]}),
    ]  # fmt: skip
    gists = [edit_gist(e) for e in the_events(turns)]
    assert gists == ["`r * r` → `r ** 2`", "", "", "`a = 1` → `a = 2` (+1 more edit)"]


def test_a_secret_is_masked_before_the_line_is_cut() -> None:
    """A line cut short keeps only the head of a secret, which no longer looks like one:
    masking the handoff's text afterwards would leave that head in it."""
    secret = "ghp_" + "a1B2c3D4e5" * 4
    line = f'    result = call_the_remote_service(endpoint, retries=3, key="{secret}")'
    turns = [user("Wire the client."), *edit("e1", "/w/client.py", "result = None", line)]
    gist = edit_gist(the_events(turns)[0])
    assert gist.startswith("`result = None` → `result = call_the_remote_service(")
    assert secret[:8] not in gist and "ghp_" not in gist
    assert secret[:8] not in render(state_of(turns))


# --- in the handoff ----------------------------------------------------------------------


def test_the_newest_changes_are_shown_newest_first_with_paths_under_the_root() -> None:
    turns = [
        user("Fix the rounding in /repo."),
        *call("r1", "Read", {"file_path": "/repo/src/money.py"}, "def r(): ..."),
        *edit("e1", "/repo/src/money.py", "return round(x)", "return round(x, 2)"),
        *edit("e2", "/repo/src/paths.py", 'ROOT = "/repo/src/data"', 'ROOT = "/srv/data"'),
    ]
    body = render(state_of(turns))
    assert changes_section(body) == [
        # The path is relative to the root; the code keeps its own paths as written.
        '- src/paths.py: `ROOT = "/repo/src/data"` → `ROOT = "/srv/data"`',
        "- src/money.py: `return round(x)` → `return round(x, 2)`",
    ]


def test_changes_read_back_and_carry_across_compactions() -> None:
    """An older handoff's changes are read back exactly and stay, the newest last, as
    later compactions add theirs; the same change made again is listed once."""
    first = [user("Tune the retry."), *edit("e1", "/w/retry.py", "tries = 3", "tries = 5")]
    body = render(state_of(first))
    reread = parse_state(body)
    assert reread is not None and render(reread) == body
    assert reread.work.changes == ("retry.py: `tries = 3` → `tries = 5`",)
    later = [
        *edit("e2", "/w/retry.py", "delay = 1", "delay = 2"),
        *edit("e3", "/w/retry.py", "tries = 3", "tries = 5"),
    ]
    again = state_of(later, body)
    assert again.work.changes == (
        "retry.py: `delay = 1` → `delay = 2`",
        "retry.py: `tries = 3` → `tries = 5`",
    )
    # Only the newest few are kept across many compactions.
    many = [
        m for k in range(10, 16) for m in edit(f"e{k}", "/w/retry.py", f"v = {k}", f"v = {k + 1}")
    ]
    newest = state_of(many, render(again)).work.changes
    assert newest[-1] == "retry.py: `v = 15` → `v = 16`" and len(newest) == 4


def test_changes_are_trimmed_oldest_first_to_fit_the_budget() -> None:
    long = "value = compute_the_thing(alpha, beta, gamma, delta, epsilon, zeta, eta)"
    turns = [user("Refactor the pipeline.")]
    for k in range(4):
        turns += edit(f"e{k}", f"/w/stage_{k}.py", f"x = {k}", f"{long} + {k}")
    state = state_of(turns)
    assert len(state.work.changes) == 4
    full = estimate_tokens(render(state))
    for budget in (full - 40, full - 80):
        shown = fitted(state, budget)
        body = render(state, shown)
        assert estimate_tokens(body) <= budget
        listed = changes_section(body) if CHANGES in body else []
        assert 0 < shown.changes < 4 or not listed
        # What is left is the newest (stage_3 first), never an older one alone.
        assert [line.split(":", 1)[0] for line in listed] == [
            f"- stage_{k}.py" for k in range(3, 3 - len(listed), -1)
        ]


def test_an_in_place_sed_substitution_has_the_pattern_and_the_replacement() -> None:
    assert sed_change("sed -i 's/tries = 3/tries = 5/g' src/retry.py") == (
        "src/retry.py",
        "sed `tries = 3` → `tries = 5`",
    )
    assert sed_change("cd /w && sed -i.bak -e 's|/old/path|/new/path|' conf.ini") == (
        "conf.ini",
        "sed `/old/path` → `/new/path`",
    )
    assert sed_change("sed -i '3s/x = 1//' f.py") == ("f.py", "sed `x = 1` → nothing")
    assert sed_change("sed 's/a/b/' f.txt") is None  # prints, writes nothing
    assert sed_change("sed -i '/^#/d' f.txt") is None  # no substitution
    missing = "sed: can't read gone.py: No such file or directory\n<returncode>2</returncode>"
    turns = [
        user("Fix the regex."),
        *call("s1", "bash", {"command": "cd /w && sed -i 's/re.M)/re.S)/' pkg/compiler.py"},
              "<returncode>0</returncode>"),
        *call("s2", "bash", {"command": "sed -i 's/a/b/' gone.py"}, missing),
    ]  # fmt: skip
    assert state_of(turns).work.changes == ("pkg/compiler.py: sed `re.M)` → `re.S)`",)


# Every line end str.splitlines knows, and lines that do and do not say what code does.
_PIECES = ["a", "x = 1", "# note", "", " ", "}", "`q`", "é→", "\n", "\r\n", "\r", "\x0b",
           "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029", "\n\n"]  # fmt: skip
_TEXTS = st.lists(st.sampled_from(_PIECES), max_size=16).map("".join)


def _gist_of_whole_lines(old: str, new: str) -> str:
    """The gist as first written: both texts split whole, every changed line listed
    (the lines shown chosen from those lists)."""
    before, after = old.splitlines(), new.splitlines()
    removed: list[str] = []
    added: list[str] = []
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            removed += before[i1:i2]
            added += after[j1:j2]
    if not removed and not added:
        return ""

    def telling(lines: list[str]) -> list[str]:
        found = [line for line in lines if not changes._TRIVIAL.match(line)]
        return found or [line for line in lines if line.strip()]

    old_shown, new_shown = telling(removed)[:1], telling(added)[: changes.ADDED_SHOWN]
    return changes.gist_text(old_shown, new_shown, len(removed) + len(added))


@settings(max_examples=500, deadline=None)
@given(old=_TEXTS, new=_TEXTS, extra=_TEXTS)
def test_the_gist_read_line_by_line_is_that_of_the_whole_lines(
    old: str, new: str, extra: str
) -> None:
    # shared lines (new holds old), one-sided ones, every line end
    for before, after in ((old, new), (old, old + extra), (old + extra, extra + old)):
        assert list(changes._lines(before)) == before.splitlines()
        assert text_gist(before, after) == _gist_of_whole_lines(before, after)


def test_an_edit_adding_a_long_text_is_gisted_from_its_first_lines() -> None:
    added = "".join(f"line → {i}\n" for i in range(400))
    gist = text_gist("keep\n", "keep\n" + added)
    assert gist == "added `line → 0` ⏎ `line → 1` (+398 more changed lines)"
