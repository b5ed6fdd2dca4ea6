"""The preflight's estimate cache: always the sum of fresh estimates, whatever changed."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper.core.messages import Message
from windowkeeper.core.tokens import message_tokens
from windowkeeper.loop.estimates import EstimateCache

_MESSAGE = st.builds(
    lambda role, text: {"role": role, "content": text},
    st.sampled_from(["user", "assistant", "tool"]),
    st.text(max_size=40),
)


def _fresh(messages: list[Message]) -> int:
    return sum(message_tokens(m, image_tokens=100) for m in messages)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(_MESSAGE, max_size=8), min_size=1, max_size=6), st.data())
def test_the_total_is_always_the_sum_of_fresh_estimates(
    histories: list[list[Message]], data: st.DataObject
) -> None:
    cache = EstimateCache(image_tokens=100)
    previous: list[Message] = []
    for history in histories:
        keep = data.draw(st.integers(min_value=0, max_value=len(previous)))
        messages = previous[:keep] + history  # kept objects, then new or equal copies
        assert cache.total(messages) == _fresh(messages)
        previous = messages


def test_only_new_or_replaced_messages_are_estimated() -> None:
    counted: list[str] = []

    def count(text: str) -> int:
        counted.append(text)
        return len(text) // 4

    cache = EstimateCache(image_tokens=100, count=count)
    messages: list[Message] = [{"role": "user", "content": f"{n} " + "x" * 400} for n in range(5)]
    first = cache.total(messages)
    assert counted
    counted.clear()
    assert cache.total(list(messages)) == first and counted == []  # unchanged: no work
    messages.append({"role": "assistant", "content": "new"})
    cache.total(messages)
    assert len(counted) == 1 and "new" in counted[0]  # only the new message
    counted.clear()
    messages[2] = {"role": "user", "content": "replaced"}
    cache.total(messages)
    assert counted == ["replaced"]  # the others are the same objects at their places
