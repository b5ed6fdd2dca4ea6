"""Which sentences of what the user wrote are pinned as constraints (design §5 section 3).

Users state rules with rule words ("never", "always", "must") as often as without them:
preferences as wishes or contrasts, bans as imperatives, decisions as choices, values in
plain prose (settings in words, too: "the default branch is develop"), rules as polite
requests ("Could you keep ...?"). Each form is pinned; the weaker forms only take the
slots a message's rules and values left.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper.analysis.facts import clued_items, folded
from windowkeeper.summary.handoff import users
from windowkeeper.summary.handoff.users import MAX_PER_MESSAGE, constraints_of

AS_USERS_STATE_THEM = [
    # preferences
    "I'd rather the helpers live next to their callers.",
    "I’d like the CSV columns in the order of the spec.",
    "Spaces, not tabs, in the YAML files.",
    "Please use dataclasses for the new records.",
    "Stick with the snake_case names the module already has.",
    "Favour short functions over long ones here.",
    "It would be nicer to raise than to return None.",
    # bans
    "Leave the vendored parser alone.",
    "No schema changes in this pull request.",
    "Stay away from the payments module.",
    "Refrain from touching the lockfile.",
    "Stop adding print calls to the tests.",
    "Skip the slow integration tests on laptops.",
    "Leave the fixtures as they are.",
    # decisions
    "I chose msgpack over JSON for the cache files, for their size.",
    "We settled on one worker per core after the load test.",
    "Let's not split the module yet; it has one caller.",
    "We're going to pin the compiler until the next release is out.",
    "We went with plain SQL; the ORM hid the locking.",
    "We decided against a plugin system for now.",
    "The plan is to release the CLI first and the API after.",
    "Let us drop the Python 2 shims.",
    # values in plain prose
    "The on-call address is pager@example.net.",
    "The bucket is logs-archive-eu-2.",
    "Retry at most 3 times.",
    "The default branch is develop.",
    "Our package manager is pnpm.",
    "The owner of this service is the payments team.",
    # rules put as requests
    "Can you always rebase before merging?",
    "Could you make sure the timeout stays at 30 seconds?",
    "Could you please not rename the public functions?",
    "Can you keep the wire format unchanged?",
    # a request for work that goes on to a rule
    "Please fix the login bug, but never push to main.",
    "Can you add the flag; keep the default off.",
]


@pytest.mark.parametrize("sentence", AS_USERS_STATE_THEM)
def test_a_fact_as_users_state_it_is_pinned(sentence: str) -> None:
    assert constraints_of([sentence]) == [sentence]


@pytest.mark.parametrize(
    "sentence",
    [
        "It may or may not be related.",
        "The problem is that the test fails.",
        "The output is empty.",
        "Why does it always fail on Fridays?",
        "Would you rather start with the parser?",
        "Would you like me to keep going?",
        "Can you help me implement the exporter so that it streams?",
        "Please fix the test that always fails.",
        "Please fix the failing import.",
        "Would you rather start with the tests?",
        "No problem at all.",
        "The build looks fine now.",
    ],
)
def test_chatter_questions_and_requests_for_work_are_not_pinned(sentence: str) -> None:
    assert constraints_of([sentence]) == []


def test_the_weaker_forms_take_only_the_slots_rules_and_values_left() -> None:
    rules = [f"Never edit generated file number {n}." for n in range(MAX_PER_MESSAGE)]
    wish = "I'd rather see the old names."
    assert constraints_of([" ".join([wish, *rules])]) == rules
    assert constraints_of([" ".join([wish, *rules[1:]])]) == [wish, *rules[1:]]  # text order


def test_a_long_message_keeps_its_bans_and_obligations_before_weaker_rules() -> None:
    """A task with its instructions states more rules than a message keeps: the bans and
    the obligations are kept, in the text's order, and the weaker ones wait."""
    weak = [f"The parser should accept case {n} as well." for n in range(MAX_PER_MESSAGE)]
    strong = ["Do not modify the tests.", "You must make minimal changes to non-test files."]
    text = " ".join([*weak[:4], strong[0], *weak[4:], strong[1]])
    kept = constraints_of([text])
    assert len(kept) == MAX_PER_MESSAGE and set(strong) <= set(kept)
    assert kept == [s for s in [*weak[:4], strong[0], *weak[4:], strong[1]] if s in kept]
    assert constraints_of(["<instructions>Never push to main.</instructions>"]) == [
        "Never push to main."
    ]


_VOCABULARY = (
    "I I'd I’d we we're we'll let's no No , not rather like want love hate favor favour "
    "nicer better to than if leave the file alone stay away hands off off-limits limits "
    "refrain stop using adding may or chose choose picked opted settled on switch switching "
    "use Use please Please decision preference stick with go for really x"
)
_WORDS = st.sampled_from(_VOCABULARY.split(" "))


@settings(max_examples=400, deadline=None)
@given(st.lists(st.lists(_WORDS, min_size=1, max_size=8).map(" ".join), min_size=1, max_size=6))
def test_the_clue_prescan_never_hides_a_sentence_the_pattern_matches(items: list[str]) -> None:
    # The prescan is only a shortcut: whatever _SOFT (or _RULE) matches, a clue matches too.
    soft = [s for s in items if users._soft(s)]
    assert soft == [s for s in clued_items(items, users._SOFT_CLUES) if users._soft(s)]
    rules = [s for s in items if users._RULE.search(s)]
    assert rules == [s for s in clued_items(items, users._CLUES) if users._RULE.search(s)]


_TEXT = st.one_of(
    st.lists(_WORDS, min_size=1, max_size=10).map(" ".join),
    st.text(alphabet=st.sampled_from("Iiİı ſsNOno,.'’-:@5"), max_size=30),
    st.text(max_size=40),
)


@settings(max_examples=600, deadline=None)
@given(_TEXT)
def test_lower_case_patterns_over_folded_text_match_as_ignorecase_would(text: str) -> None:
    # _SOFT, _SETTING and _BOUND are written in lower case and matched against the folded
    # sentence, which is cheaper than IGNORECASE: the two must agree on every text.
    for pattern in (users._SOFT, users._SETTING, users._BOUND):
        ignoring_case = re.compile(pattern.pattern, re.IGNORECASE)
        assert bool(pattern.search(folded(text))) == bool(ignoring_case.search(text))


def test_a_rule_of_three_words_keeps_the_sentence_it_is_about() -> None:
    """ "Do not modify." alone does not say what must not be modified."""
    text = "* Git config (username and email) is pre-set. Do not modify.\n* Never push to main."
    assert constraints_of([text]) == [
        "Git config (username and email) is pre-set. Do not modify.",
        "Never push to main.",
    ]
    # At the start of an item there is nothing before it to read it with.
    assert constraints_of(["Never rebase.\n\nDo not force-push main."]) == [
        "Never rebase.",
        "Do not force-push main.",
    ]
