"""The gateway's per-message fast paths agree with the general code they skip.

- The Anthropic conversion tests ``type(x) is dict`` before the ``Mapping`` ABC check: a
  message whose objects are read-only mappings (the ABC path) converts to the same
  messages, or fails with the same error, as the same message made of plain dicts.
- ``loop.steps.wire`` looks for private keys among the request's distinct keys: it
  returns what stripping message by message returns, and the list itself when no
  message carries one.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from test_anthropic_checked import _MESSAGE
from windowkeeper.adapters.anthropic import message_from_anthropic
from windowkeeper.core.errors import InvalidMessagesError
from windowkeeper.core.messages import strip_private_keys
from windowkeeper.loop.steps import wire


def _read_only(message: Any) -> Any:
    """``message`` and its blocks as read-only views (``Mapping``, not ``dict``); what
    they hold is left as it is (a tool's input is serialized, which needs dicts)."""
    if not isinstance(message, dict):
        return message
    content = message.get("content")
    if isinstance(content, list):
        content = [MappingProxyType(b) if isinstance(b, dict) else b for b in content]
        message = {**message, "content": content}
    return MappingProxyType(message)


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _outcome(message: Any) -> Any:
    try:
        return _plain(message_from_anthropic(message, "message 3"))
    except InvalidMessagesError as exc:
        return ("refused", str(exc))


@settings(max_examples=600, deadline=None)
@given(_MESSAGE)
def test_plain_dicts_convert_as_other_mappings_do(message: dict[str, Any]) -> None:
    assert _outcome(message) == _outcome(_read_only(message))


def test_a_block_that_is_not_an_object_is_named_by_its_number() -> None:
    for blocks in ([{"type": "text", "text": "a"}, 5], [MappingProxyType({"type": 1})]):
        message = {"role": "user", "content": blocks}
        try:
            message_from_anthropic(message, "message 0")
        except InvalidMessagesError as exc:
            assert f"block {len(blocks) - 1} must be an object" in str(exc)
        else:
            raise AssertionError("accepted")


_KEY = st.sampled_from(["role", "content", "tool_calls", "name", "_private", "_x", "x_"])
_REQUEST = st.lists(st.dictionaries(_KEY, st.integers(0, 3), max_size=4), max_size=6)


def _wire_by_message(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [strip_private_keys(m) if any(k.startswith("_") for k in m) else m for m in messages]


@settings(max_examples=400, deadline=None)
@given(_REQUEST)
def test_wire_strips_as_message_by_message(messages: list[dict[str, Any]]) -> None:
    sent = wire(messages)
    assert sent == _wire_by_message(messages)
    private = any(k.startswith("_") for m in messages for k in m)
    assert (sent is messages) is not private
    assert all(not k.startswith("_") for m in sent for k in m)
