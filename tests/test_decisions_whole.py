"""Key decisions read as whole sentences (the second blind reader run found decisions cut
mid-sentence): a sentence is not split inside inline code, and the fitting ladder shows
fewer decisions whole before it cuts any."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper.analysis.facts import item_sentences
from windowkeeper.summary.handoff.fit import fitted
from windowkeeper.summary.handoff.model import HandoffState, Quote
from windowkeeper.summary.handoff.parse import split_sections
from windowkeeper.summary.handoff.text import render

MIGRATION = (
    "The auto-generated migration uses `ALTER TABLE ... ADD` without a default, which will "
    "fail on SQLite if rows exist. Let me rewrite it."
)


def test_a_sentence_end_inside_inline_code_ends_no_sentence() -> None:
    assert item_sentences(MIGRATION) == [
        "The auto-generated migration uses `ALTER TABLE ... ADD` without a default, which "
        "will fail on SQLite if rows exist.",
        "Let me rewrite it.",
    ]
    # Backticks that do not pair up say nothing about code: split as before.
    assert item_sentences("Use `a. B now. Fine.") == ["Use `a.", "B now.", "Fine."]
    assert item_sentences("Run `make. Test` first. Then go.") == [
        "Run `make. Test` first.",
        "Then go.",
    ]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet="ab `.!? ABC", max_size=30), max_size=6))
def test_splitting_keeps_every_word_in_order(parts: list[str]) -> None:
    item = " ".join(parts)
    assert " ".join(item_sentences(item)).split() == item.split()


def _decision(k: int) -> str:
    reason = "because the upsert identity uses the message uuid and the fixture writes none, "
    return f"Decision {k}: keep the sync idempotent {reason * 2}so every re-run adds rows."


def test_fewer_decisions_are_shown_whole_before_any_is_cut() -> None:
    state = HandoffState(
        task=Quote("Fix the sync.", "wk0123456789"),
        decisions=tuple(_decision(k) for k in range(12)),
    )
    full = len(render(state))
    seen_cut = False
    for budget in range(150, full // 3, 40):
        body = render(state, fitted(state, budget))
        shown = [line for line in split_sections(body).get("Key Decisions", [])]
        cut = [line for line in shown if line.endswith("…")]
        if cut:
            seen_cut = True
            assert len(shown) <= 3, (budget, len(shown))
        else:
            assert all(line.endswith("rows.") for line in shown), budget
    assert seen_cut  # the budgets reach the step that cuts


def test_one_decision_outlasts_the_values_and_the_brief_fixes() -> None:
    """The ladder keeps the heaviest decision (a change's reason) until late: it goes
    after the critical values and the brief fixes are gone (the eighth blind run lost
    "why was the migration rewritten?" where a tight 16,000 handoff dropped them all)."""
    from windowkeeper.summary.handoff.fit import LADDER

    one = LADDER.index(("decisions", 1))
    assert LADDER.index(("values", 0)) < one < LADDER.index(("decisions", 0))
    assert LADDER.index(("evidence", 1)) < LADDER.index(("decisions", 0))
    reason = f"Changed `0002_state.exs`: {MIGRATION}"
    state = HandoffState(
        task=Quote("Add the state column.", "wk0123456789"),
        decisions=(*(_decision(k) for k in range(6)), reason),
        values=tuple(f"port-{k}-{k * 7919:08d}-abcdef" for k in range(30)),
    )
    full = len(render(state))
    for budget in range(20, full // 3, 10):
        shown = fitted(state, budget)
        if shown.values == 0 and shown.decisions == 1:
            body = render(state, shown)
            # The one shown is the change's reason, not the newest line.
            [line] = split_sections(body)["Key Decisions"]
            assert line.startswith("- Changed `0002_state.exs`: The auto-generated")
            break
    else:
        raise AssertionError("no budget left one decision without the values")
