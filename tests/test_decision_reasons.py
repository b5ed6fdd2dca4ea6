"""Why the agent chose its approach (issue 24, the third blind run: "why" answers lacked
the reason): when not every decision fits, those that give a reason are shown before bare
choices, the newest of each first, in their order."""

from __future__ import annotations

from windowkeeper.summary.handoff.model import HandoffState, Quote
from windowkeeper.summary.handoff.parse import split_sections
from windowkeeper.summary.handoff.text import Shown, render

DECISIONS = (
    "The migration needs a default because SQLite rejects NOT NULL without one on a full table.",
    "I'll use that alias in the next edits.",
    "Rewrite the table instead of altering it, since the column order matters.",
    "I need to use `:auto` mode.",
    "Let's keep the old name.",
)


def shown(count: int) -> list[str]:
    state = HandoffState(task=Quote("Add the column.", "wk0123456789"), decisions=DECISIONS)
    return split_sections(render(state, Shown(decisions=count)))["Key Decisions"]


def test_decisions_with_a_reason_are_kept_before_bare_choices() -> None:
    assert shown(2) == [f"- {DECISIONS[0]}", f"- {DECISIONS[2]}"]
    # Then the newest bare ones; the order stays the text's.
    assert shown(3) == [f"- {DECISIONS[0]}", f"- {DECISIONS[2]}", f"- {DECISIONS[4]}"]
    assert shown(1) == [f"- {DECISIONS[2]}"]
    assert shown(5) == [f"- {d}" for d in DECISIONS]
