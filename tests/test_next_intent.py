"""The agent's stated intent as the next step names its object (summary/handoff/progress.py)."""

from __future__ import annotations

from test_handoff import say, state_of, user


def _next(text: str) -> str:
    return state_of([user("Fix the unit conversion."), say(text)]).next_step


def test_an_intent_that_refers_back_keeps_the_sentence_it_refers_to() -> None:
    step = _next("We still get an error. The issue is in `_condition_arg` in `core.py`. "
                 "Let's look at that function:")  # fmt: skip
    joined = "The issue is in `_condition_arg` in `core.py`. Let's look at that function"
    assert step.endswith(f": {joined}")


def test_an_intent_that_names_its_object_stands_alone() -> None:
    step = _next("The parser is fine. Let me read `units/core.py` next.")
    assert step.endswith(": Let me read `units/core.py` next.")
    # "that is …" states a fact, it does not refer back.
    alone = _next("The build passed. Let me check that the docs still render.")
    assert alone.endswith("): Let me check that the docs still render.")


def test_a_question_before_the_intent_is_not_joined() -> None:
    step = _next("Is the cache stale? Let me clear it.")
    assert step.endswith("): Let me clear it.")
