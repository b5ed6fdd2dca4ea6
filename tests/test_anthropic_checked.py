"""What the Anthropic conversion makes passes the engine's check, whatever the client sent.

The gateway's estimate skips ``check_message`` for the messages a Messages request's
conversion made (``MessagesProtocol.validated``); that holds only if no body the conversion
accepts yields a message the check refuses.
"""

from __future__ import annotations

import contextlib
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from windowkeeper.adapters.anthropic import from_anthropic, message_from_anthropic
from windowkeeper.core.errors import InvalidMessagesError
from windowkeeper.core.messages import input_defect
from windowkeeper.gateway.protocols import CHAT, MESSAGES, RESPONSES

_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=5)
)
_JSON = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=6,
)
_TYPES = ("text", "image", "tool_use", "tool_result", "thinking", "redacted_thinking", "x")
_KEYS = ("text", "source", "id", "name", "input", "tool_use_id", "content", "is_error",
         "cache_control", "type")  # fmt: skip


_ABSENT = object()


def _value_for(key: str) -> st.SearchStrategy[Any]:
    """A well-formed value for the key, a scalar of another type, any JSON value, or none."""
    good: dict[str, st.SearchStrategy[Any]] = {
        "source": st.fixed_dictionaries(
            {"type": st.sampled_from(["base64", "url", "file"]), "data": st.text(max_size=3)}
        ),
        "content": st.text(max_size=3) | st.lists(_BLOCK_LEAF, max_size=2),
        "is_error": st.booleans(),
    }
    well_formed = good.get(key, st.text(min_size=1, max_size=4))
    return st.one_of(well_formed, _SCALARS, _JSON, st.just(_ABSENT))


_BLOCK_LEAF = st.builds(
    lambda kind, extra: {"type": kind, **extra},
    st.sampled_from(_TYPES) | _JSON,
    st.dictionaries(st.sampled_from(_KEYS[:-1]), _JSON, max_size=3),
)


def _block_of(kind: str) -> st.SearchStrategy[dict[str, Any]]:
    fields = st.fixed_dictionaries({k: _value_for(k) for k in _KEYS[:-1]})
    return fields.map(lambda f: {"type": kind} | {k: v for k, v in f.items() if v is not _ABSENT})


_SHAPED = st.sampled_from(_TYPES).flatmap(_block_of)
# st.one_of picks a branch uniformly: a block that is not an object refuses its whole
# message, so the shaped blocks (where a defect can hide) are most of them.
_BLOCK = st.one_of(*[_SHAPED] * 8, _BLOCK_LEAF, _SCALARS)
_BLOCKS = st.lists(_BLOCK, min_size=1, max_size=3)
_MESSAGE = st.fixed_dictionaries(
    {
        "role": st.one_of(*[st.sampled_from(["user", "assistant", "system"])] * 6, _JSON),
        "content": st.one_of(*[_BLOCKS] * 6, st.text(max_size=4), _JSON),
    }
)


@settings(max_examples=800, deadline=None)
@example([{"role": "user", "content": [{"type": "tool_result", "tool_use_id": 5}]}], "")
@example([{"role": "assistant", "content": [{"type": "tool_use", "id": 5, "name": "f"}]}], "")
@given(
    st.lists(st.one_of(_MESSAGE, _MESSAGE, _MESSAGE, _JSON), min_size=1, max_size=4),
    st.text(max_size=3) | st.lists(_BLOCK, max_size=2),
)
def test_every_message_the_conversion_makes_passes_the_check(
    messages: list[Any], system: Any
) -> None:
    made: list[Any] = []
    for index, message in enumerate(messages):
        try:
            made += message_from_anthropic(message, f"message {index}")
        except InvalidMessagesError:
            continue
    with contextlib.suppress(InvalidMessagesError):
        made += from_anthropic(system, [])
    assert [input_defect(m) for m in made] == [None] * len(made)


def test_the_messages_protocol_vouches_for_what_it_made_and_the_others_as_before() -> None:
    made: list[Any] = [{"role": "user", "content": "x"}]
    assert MESSAGES.validated(made) is made
    assert CHAT.validated(made) is made
    assert tuple(RESPONSES.validated(made)) == ()


def test_the_check_refuses_what_a_careless_conversion_could_make() -> None:
    # The property above would catch a conversion that passed a block's fields through.
    assert input_defect({"role": "tool", "tool_call_id": 5, "content": "x"}) is not None
    assert input_defect({"role": "user", "content": [1]}) is not None
    assert input_defect({"role": "assistant", "tool_calls": ["x"]}) is not None
