"""Fixed along the way under a budget and across compactions (issue 24): a fix made early
in a session is part of the plot ("what broke, and how did it end?"), so older entries are
kept in brief — the failing step, its error's start, what fixed it — before any is left
out, and a carried list keeps more than the few newest."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from windowkeeper.analysis.events import Analysis
from windowkeeper.core.tokens import estimate_tokens
from windowkeeper.summary.handoff.extract import Placement, extract_state, previous_state
from windowkeeper.summary.handoff.fit import fitted
from windowkeeper.summary.handoff.fixes import MAX_FIXED, merged_fixed
from windowkeeper.summary.handoff.model import HandoffState, WorkState
from windowkeeper.summary.handoff.parse import split_sections
from windowkeeper.summary.handoff.text import Shown, render, short_fix
from windowkeeper.summary.handoff.worktext import FIXED

Message = dict[str, Any]
NEW = Placement(task_in_head=False, user_in_tail=False)
PADDING = " ".join(f"detail{k}" for k in range(30))


def bash(cid: str, command: str, output: str) -> list[Message]:
    function = {"name": "bash", "arguments": json.dumps({"command": command})}
    return [
        {"role": "assistant", "content": None, "tool_calls": [{"id": cid, "function": function}]},
        {"role": "tool", "tool_call_id": cid, "content": output},
    ]


def session(steps: int) -> list[Message]:
    """``steps`` tools that each failed once with a long error, then ran clean."""
    turns: list[Message] = [{"role": "user", "content": "Set up the release."}]
    for k in range(steps):
        error = f"fatal: step{k} has no upstream configured {PADDING}\n<returncode>128</returncode>"
        turns += bash(f"f{k}", f"tool{k} push", error)
        turns += bash(
            f"s{k}", f"tool{k} push --set-upstream origin b{k}", "<returncode>0</returncode>"
        )
    return turns


def fixed_lines(body: str) -> list[str]:
    lines = split_sections(body)["Work State"]
    start = lines.index(FIXED) + 1
    return [line for line in lines[start:] if line.startswith("- ")][: 2 * MAX_FIXED]


def state_of(turns: list[Message]) -> HandoffState:
    return extract_state(Analysis(turns), previous_state(None), NEW)


def test_older_fixes_are_kept_in_brief_before_any_is_left_out() -> None:
    state = state_of(session(6))
    assert len(state.work.fixed) == 6
    lean = Shown(error_lines=0, commands=0, values=0, files_read=0, done=0, evidence=3)
    budget = estimate_tokens(render(state, replace(lean, fixed=2)))
    shown = fitted(state, budget)
    body = render(state, shown)
    assert estimate_tokens(body) <= budget and shown.fixed < 6
    listed = fixed_lines(body)
    # Every failure is still named with what fixed it, the oldest first, in brief.
    assert len(listed) == 6
    for k, line in enumerate(listed):
        assert f"`tool{k} push` exit 128: " in line and f"step{k} has no upstream" in line
        assert f"`tool{k} push --set-upstream origin b{k}`" in line
    assert all(len(line) < 220 for line in listed[: 6 - shown.fixed])
    assert "detail29" not in " ".join(listed[: 6 - shown.fixed])


def test_a_brief_entry_is_stable_and_keeps_both_sides() -> None:
    entry = f"`make deploy` exit 2: {PADDING} → fixed by: edited deploy.cfg; `make deploy` then ok"
    brief = short_fix(entry)
    assert (
        brief.startswith("`make deploy` exit 2: detail0")
        and " → fixed by: edited deploy.cfg" in brief
    )
    assert short_fix(brief) == brief  # carried in brief, it stays the same
    assert short_fix("no arrow here") == "no arrow here"
    # "fatal: " says nothing the exit code does not: the brief spends its room on the cause.
    push = (
        "`git push 2>&1` exit 128: fatal: The current branch main-work has no upstream branch."
        " → `git push --set-upstream origin main-work 2>&1` then ok"
    )
    assert short_fix(push) == push.replace("fatal: ", "")


def test_a_carried_list_keeps_more_than_the_few_newest() -> None:
    carried = tuple(f"`step{k}` exit 1: broke → ran `fix{k}` then ok" for k in range(8))
    new = "`step8` exit 1: broke → ran `fix8` then ok"
    assert merged_fixed(carried, (new,)) == (*carried, new)  # the oldest too
    assert merged_fixed((*carried, *carried), (new,)) == (*carried, new)  # each once


def test_brief_entries_merge_only_the_same_error_of_the_same_step() -> None:
    """Two attempts of one step that failed alike are one brief entry; attempts that
    failed otherwise were fixed otherwise (a config edit, then a dependency): both stay."""
    step = "`mix test test/app_web/live/project_review_live_test.exs 2>&1`"
    fixed = (
        f"{step} exit 2: Nested modules could be aliased → fixed by: edited a.ex; ok",
        f"{step} exit 6: Nested modules could be aliased → fixed by: edited b.ex; ok",
        f"{step} exit 2: no :secret_key_base configured → fixed by: edited config/test.exs",
        f"{step} exit 2: requires lazy_html as a test dependency → fixed by: edited mix.exs",
        "`git push` exit 128: no upstream branch → `git push --set-upstream origin b` then ok",
    )
    body = render(HandoffState(work=WorkState(fixed=fixed)), Shown(fixed=1))
    listed = fixed_lines(body)
    assert len(listed) == 4 and "edited b.ex" in listed[0] and "edited a.ex" not in body
    assert "config/test.exs" in listed[1] and "mix.exs" in listed[2]
