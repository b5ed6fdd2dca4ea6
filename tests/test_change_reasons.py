"""The reasons the agent gave for the changes it made (issue 24: "why did the agent
rewrite X?" lost half its points in every variant, the extracted decisions being the
newest findings, not the choices behind the edits): the words beside an edit of an
existing file become "Changed `name`: reason" and are shown first when few fit."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from factories import assistant, call, system, tool, user
from windowkeeper import CompressionConfig, ContextCompressor
from windowkeeper.analysis.events import Analysis
from windowkeeper.summary.handoff.decide import (
    Changes,
    changes_of,
    decisions,
    is_change_reason,
    weight,
)
from windowkeeper.summary.handoff.model import HandoffState, Quote
from windowkeeper.summary.handoff.parse import split_sections
from windowkeeper.summary.handoff.text import Shown, render

WHY = "The generated migration alters nullability, which SQLite doesn't support."
THEN = "I need to rewrite it as a table copy."


def test_the_words_beside_an_edit_become_its_reason() -> None:
    texts = [(3, f"{WHY} {THEN}"), (5, "Now update the test file."), (7, "Tests pass.")]
    changes = Changes({3: "db/migrations/0002_state.exs", 5: "test/state_test.exs"},
                      frozenset({3, 5}))  # fmt: skip
    found = decisions(texts, (), (), changes)
    # The reason and the choice after it, labelled with the file; a text that only
    # announces its step is not a decision.
    assert found == (f"Changed `0002_state.exs`: {WHY} {THEN}",)
    assert is_change_reason(found[0]) and weight(found[0]) == 4


def test_a_text_only_message_is_the_reason_of_the_call_after_it() -> None:
    texts = [(3, f"{WHY} {THEN}")]
    # Message 3 made no call; message 4 (call only) edited the file.
    assert decisions(texts, (), (), Changes({4: "m.exs"}, frozenset({4})))[0].startswith(
        "Changed `m.exs`: "
    )
    # Message 3 made a call of its own that changed nothing: the edit after it is not its.
    assert not any(
        is_change_reason(d)
        for d in decisions(texts, (), (), Changes({4: "m.exs"}, frozenset({3, 4})))
    )


def test_only_the_newest_reason_of_each_file_is_kept() -> None:
    texts = [(1, f"Old: {WHY}"), (2, f"New: {WHY} {THEN}")]
    found = decisions(texts, (), (), Changes({1: "a/m.exs", 2: "a/m.exs"}, frozenset({1, 2})))
    assert [d for d in found if is_change_reason(d)] == [f"Changed `m.exs`: New: {WHY} {THEN}"]


def session(change: dict[str, object], result: str) -> list[dict[str, object]]:
    """Old reads, the change with its reason, newer test runs, a request."""
    messages: list[dict[str, object]] = [system(), user("Add a state column to annotations.")]
    for n in range(12):  # older rounds that pruning and the summary will cover
        cid = f"r{n}"
        messages += [assistant(f"Reading part {n}.", call(cid, "Read", file_path=f"src/p{n}.ex")),
                     tool(cid, f"defmodule P{n} do\n" + "  x = 1\n" * 300 + "end")]  # fmt: skip
    messages += [assistant(f"{WHY} {THEN}", change), tool("e1", result)]
    for n in range(6):
        cid = f"t{n}"
        messages += [assistant(f"Checking {n}.", call(cid, "Bash", command=f"mix test {n}")),
                     tool(cid, "5 tests, 0 failures\n" * 40)]  # fmt: skip
    messages.append(user("Go on."))
    return messages


def key_decisions(messages: list[dict[str, object]]) -> str:
    config = CompressionConfig(prune_only_ratio=0.01)  # the summary tier, not pruning alone
    result = ContextCompressor(config, context_length=6_000).compress(messages, force=True)
    text = "\n".join(str(m.get("content")) for m in result.messages)
    found = re.search(r"## Key Decisions\n(.*?)(?:\n## |\Z)", text, re.DOTALL)
    assert found, "the handoff has a Key Decisions section"
    return found.group(1)


def test_an_edit_in_a_compacted_session_is_shown_with_its_reason() -> None:
    path = "priv/repo/migrations/0002_state.exs"
    edit = call("e1", "Edit", file_path=path, old_string="null: false", new_string="null: true")
    shown = key_decisions(session(edit, f"The file {path} has been updated."))
    assert f"- Changed `0002_state.exs`: {WHY} {THEN}" in shown


def test_a_created_file_is_not_a_change_with_a_reason() -> None:
    edit = call("e1", "Edit", file_path="m.exs", old_string="a", new_string="b")
    write = call("e2", "Write", file_path="repro.py", content="print(1)\n")
    overwrite = call("e3", "Write", file_path="m.exs", content="b\n")
    events = Analysis([assistant("x", edit), tool("e1", "The file m.exs has been updated."),
                       assistant("y", write), tool("e2", "File created successfully at: repro.py"),
                       assistant("z", overwrite), tool("e3", "The file m.exs has been updated.")]
                      ).events()  # fmt: skip
    changes = changes_of(events, [None] * len(events))
    assert changes == Changes({0: "m.exs", 4: "m.exs"}, frozenset({0, 2, 4}))


LINES = [f"Changed `m.py`: {WHY}", WHY, "I'll keep it.", f"Changed `n.py`: {THEN}", "Use B."]


@given(st.lists(st.sampled_from(LINES), unique=True), st.integers(min_value=0, max_value=6))
def test_the_decisions_shown_are_the_heaviest_in_their_order(items: list[str], count: int) -> None:
    state = HandoffState(task=Quote("Add the column.", "wk0123456789"), decisions=tuple(items))
    section = split_sections(render(state, Shown(decisions=count))).get("Key Decisions", [])
    shown = [line.removeprefix("- ") for line in section if line.startswith("- ")]
    assert len(shown) == min(count, len(items))
    assert shown == [d for d in items if d in shown]  # the text's order
    left = [d for d in items if d not in shown]
    assert all(weight(s) >= weight(o) for s in shown for o in left)


def test_a_judgement_between_alternatives_is_a_decision_that_outweighs_a_cause() -> None:
    texts = [
        (1, "The PR suggests joining lines, but I think using `re.DOTALL` is cleaner and more "
            "robust."),
        (2, "That's because I'm only showing the first 50 characters of the output."),
    ]  # fmt: skip
    found = decisions(texts, ())
    assert found[0].startswith("The PR suggests joining lines") and len(found) == 2
    assert weight(found[0]) == 2 and weight(found[1]) == 1
    # A change's reason outweighs both; one naming a limit most.
    assert (
        weight(f"Changed `a.py`: {WHY}") == 4 and weight("Changed `a.py`: To keep it short.") == 3
    )


def test_a_reason_keeps_whole_sentences() -> None:
    long_why = "The idempotency test fails because" + " the helper writes new ids" * 9 + "."
    texts = [(3, f"{long_why} {THEN}")]
    (found,) = decisions(texts, (), (), Changes({3: "t/sync_test.exs"}, frozenset({3})))
    # The choice after it does not fit whole in the 300 characters: left out, not cut.
    assert found == f"Changed `sync_test.exs`: {long_why}"
