"""A session's first estimate and the records it seeds (issue 27, the gateway's compacting
request): ``EstimateCache._first`` and ``Analyzer.seed``'s path for messages without a
record give what the per-index walks gave, on hostile lists too (the walks before the
change are kept here as the oracles)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from factories import long_session
from windowkeeper.analysis.record import Analyzer
from windowkeeper.core import hint_scan
from windowkeeper.core.errors import InvalidMessagesError
from windowkeeper.core.messages import Message, check_input, check_message
from windowkeeper.core.tokens import message_tokens
from windowkeeper.gateway import bodytext
from windowkeeper.loop.estimates import EstimateCache


class OldCache(EstimateCache):
    """The estimate cache as it was: every list through the per-index walk."""

    def total(self, messages: Any, checked: Any = ()) -> int:
        if not isinstance(messages, list | tuple):
            check_input(messages)
        known, tokens, sums = self._messages, self._tokens, self._sums
        same = min(len(messages), len(known))
        if list(messages[:same]) != known[:same]:
            pairs = zip(messages, known, strict=False)
            same = next(i for i, (new, old) in enumerate(pairs) if not (new is old or new == old))
        del sums[same + 1 :]
        moved: dict[int, int] | None = None
        lookup = None
        old: list[Message] = []
        for index in range(same, len(messages)):
            message = messages[index]
            if index >= len(known) or known[index] is not message:
                if moved is None:
                    old = list(known)
                    moved = dict(zip(map(id, old), tokens, strict=True))
                    if self.known is not None:
                        lookup = self.known(self.image_tokens, self.count)
                estimate = moved.get(id(message)) if moved else None
                if estimate is None and lookup is not None:
                    estimate = lookup(message)
                if estimate is None:
                    if index >= len(checked) or checked[index] is not message:
                        check_message(message, f"message {index}")
                    estimate = message_tokens(
                        message, image_tokens=self.image_tokens, count=self.count
                    )
                if index < len(known):
                    known[index], tokens[index] = message, estimate
                else:
                    known.append(message)
                    tokens.append(estimate)
            sums.append(sums[-1] + tokens[index])
        del known[len(messages) :], tokens[len(messages) :]
        return sums[-1]


def old_seed(analyzer: Analyzer, counted: Any, image_tokens: int, count: Any) -> None:
    """``Analyzer.seed`` as it was: ``_current`` asked for every message."""
    if image_tokens != analyzer.image_tokens or count is not analyzer.count:
        return
    for message, tokens in counted:
        if analyzer._current(message) is None:
            analyzer._keep(message, analyzer._analyze(message, tokens))


_TEXT = st.text(max_size=30) | st.sampled_from(["", " x", "日本語のテキスト", "a" * 200])
_PART = st.one_of(
    st.fixed_dictionaries({"type": st.just("text"), "text": _TEXT}),
    st.fixed_dictionaries({"type": st.just("image_url"), "image_url": st.just({"url": "x"})}),
    st.just({"type": "other", "value": [1, {"a": None}]}),
    _TEXT,
    st.integers(),
)
_CALL = st.one_of(
    st.fixed_dictionaries(
        {
            "id": _TEXT,
            "type": st.just("function"),
            "function": st.fixed_dictionaries({"name": _TEXT, "arguments": _TEXT}),
        }
    ),
    st.just({"id": "c", "function": {"name": "f", "arguments": {"not": "text"}}}),
    st.just("not a call"),
)
_MESSAGE = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "tool", "system", "developer", "bogus", 3])},
    optional={
        "content": st.one_of(_TEXT, st.none(), st.lists(_PART, max_size=3), st.integers()),
        "tool_calls": st.one_of(st.lists(_CALL, max_size=2), st.none(), st.just("x")),
        "tool_call_id": st.one_of(_TEXT, st.integers()),
        "name": _TEXT,
        "reasoning_content": _TEXT,
    },
)
_HOSTILE = st.one_of(_MESSAGE, st.just("not a message"), st.just(None), st.just([1]))


def _outcome(call: Any) -> tuple[str, object]:
    try:
        return "value", call()
    except InvalidMessagesError as exc:
        return "invalid", str(exc)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.lists(_HOSTILE, max_size=8), min_size=1, max_size=4),
    st.data(),
)
def test_every_total_agrees_with_the_per_index_walk(
    histories: list[list[Any]], data: st.DataObject
) -> None:
    """The first total (and every one after, reusing what it left) equals the old walk's,
    refusal included: the same message named with the same defect."""
    new, old = EstimateCache(image_tokens=7), OldCache(image_tokens=7)
    previous: list[Any] = []
    for history in histories:
        keep = data.draw(st.integers(min_value=0, max_value=len(previous)))
        messages = previous[:keep] + history
        checked_upto = data.draw(st.integers(min_value=0, max_value=len(messages) + 1))
        checked = [m for m in messages[:checked_upto] if isinstance(m, dict)]
        checked = messages[:checked_upto] if len(checked) == checked_upto else checked
        if data.draw(st.booleans()):  # equal copies: not the objects the caller checked
            checked = [dict(m) if isinstance(m, dict) else m for m in checked]
        messages_as = data.draw(st.sampled_from([list, tuple]))
        given_list = messages_as(messages)
        got = _outcome(lambda: new.total(given_list, checked))  # noqa: B023
        want = _outcome(lambda: old.total(given_list, checked))  # noqa: B023
        assert got == want
        if got[0] == "invalid":
            new, old = EstimateCache(image_tokens=7), OldCache(image_tokens=7)
            previous = []
        else:
            previous = messages


@pytest.mark.parametrize("checked", ["all", "none", "half"])
def test_a_long_session_first_total(checked: str) -> None:
    """A real-looking history (the gateway's benchmark session), validated or not."""
    messages = long_session(rounds=25, output_chars=4_000)
    given_checked = {"all": messages, "none": [], "half": messages[:50]}[checked]
    new, old = EstimateCache(image_tokens=1_500), OldCache(image_tokens=1_500)
    assert new.total(messages, given_checked) == old.total(messages, given_checked)
    assert list(new.counted()) == list(old.counted())
    grown = [*messages, {"role": "assistant", "content": "more"}]
    assert new.total(grown) == old.total(grown)


def test_an_unchecked_invalid_message_is_refused_by_index() -> None:
    messages: list[Any] = [{"role": "user", "content": "a"}, {"role": "user", "content": 5}]
    with pytest.raises(InvalidMessagesError, match="message 1"):
        EstimateCache(image_tokens=7).total(messages)
    # Checked by the caller: counted as the caller vouched for it (content 5: 0 tokens).
    assert EstimateCache(image_tokens=7).total(messages, messages) == 10 + 1 + 10


def _records(analyzer: Analyzer) -> dict[int, tuple[Any, ...]]:
    return {key: tuple(record) for key, record in analyzer._records.items()}


@settings(max_examples=200, deadline=None)
@given(st.lists(_MESSAGE, max_size=10), st.data())
def test_seed_makes_the_records_the_old_seed_made(messages: list[Any], data: st.DataObject) -> None:
    """Fresh messages, messages with a current record, and ones whose record went stale
    (their content replaced in place): the same records, with the same tokens."""
    valid = [m for m in messages if _outcome(lambda m=m: check_message(m, "m"))[0] == "value"]
    tokens = [data.draw(st.integers(min_value=0, max_value=99)) for _ in valid]
    earlier = data.draw(st.integers(min_value=0, max_value=len(valid)))
    new, old = Analyzer(image_tokens=7), Analyzer(image_tokens=7)
    for analyzer in (new, old):
        # Other tokens than the second seed's: a current record must be kept as it is.
        analyzer.seed([(m, t + 1) for m, t in zip(valid[:earlier], tokens, strict=False)], 7, None)
    stale = data.draw(st.integers(min_value=0, max_value=earlier))
    for message in valid[:stale]:
        message["content"] = f"{message.get('content')} (edited)"
    pairs = list(zip(valid, tokens, strict=True))
    new.seed(pairs, 7, None)
    old_seed(old, pairs, 7, None)
    assert _records(new) == _records(old)
    new.seed(pairs, 8, None)  # other prices: nothing seeded
    assert _records(new) == _records(old)


def test_seed_of_a_long_session_keeps_the_given_tokens() -> None:
    messages = long_session(rounds=25, output_chars=4_000)
    new, old = Analyzer(image_tokens=1_500), Analyzer(image_tokens=1_500)
    pairs = [(m, n) for n, m in enumerate(messages)]
    new.seed(pairs, 1_500, None)
    old_seed(old, pairs, 1_500, None)
    assert _records(new) == _records(old)
    assert [new.facts(m).tokens for m in messages] == list(range(len(messages)))


# --- a request body's long-number scan, on its own bytes -------------------------------

_CONDITIONS = [("[0-9]{19}", False), (r"\xc3\xa9[a-z]", False), ("ab", True)]
_NUMBERY = st.text(alphabet="0123456789 abAB-é\ud800日", max_size=60)


@pytest.mark.skipif(hint_scan.hyperscan is None, reason="no hyperscan wheel")
@settings(max_examples=300, deadline=None)
@given(st.one_of(_NUMBERY, st.text(max_size=40)))
def test_matching_utf8_is_matching_of_the_decoded_text(text: str) -> None:
    """The bytes a body holds, scanned as they are, match the conditions its text does
    (non-ASCII characters and lone surrogates included)."""
    scanner = hint_scan.ConditionScanner(_CONDITIONS)
    data = text.encode("utf-8", "surrogatepass")
    assert scanner.matching_utf8(data) == scanner.matching(text)


@pytest.mark.skipif(bodytext._LONG_NUMBERS is None, reason="needs orjson and Hyperscan")
def test_a_body_with_a_long_integer_is_scanned_not_parsed_by_orjson() -> None:
    raw = b'{"model": "m", "messages": [{"role": "user", "n": 12345678901234567890123}]}'
    known = bodytext.parse_whole(raw, "messages")
    assert isinstance(known, bodytext.Known)
    assert known.units[0]["n"] == 12345678901234567890123  # orjson would read a float
