"""Anthropic Messages API <-> canonical OpenAI chat messages (design §1).

:func:`from_anthropic` turns a Messages API request (``system`` + ``messages``) into
canonical messages; :func:`~windowkeeper.adapters.anthropic_write.to_anthropic` turns
canonical messages back. For the
conversations Anthropic accepts, ``to_anthropic(from_anthropic(s, m)) == (s, m)``.

Mapping:

- ``system`` (string or text blocks) <-> a leading ``system`` message (same form). Later
  canonical ``system``/``developer`` messages have no Anthropic place and become user turns.
- A ``system`` message inside ``messages`` (beta ``mid-conversation-system-*``, sent by
  Claude Code) <-> a ``system`` message marked in place (``IN_PLACE_KEY``): an
  instruction that stands between turns, kept verbatim by compaction like the system
  prompt, and sent back as its own ``system`` turn, never merged into a neighbour.
- ``text`` blocks are the same in both formats; ``image`` blocks with a ``base64`` or
  ``url`` source <-> ``image_url`` parts (a ``data:`` URL for base64). Unknown blocks
  (documents, server tools, ...) pass through opaquely as content parts.
- assistant ``tool_use`` {id, name, input} <-> ``tool_calls`` (arguments = JSON text).
  Text blocks come before tool calls on the way back (Anthropic's own order).
- user ``tool_result`` blocks <-> ``tool`` messages, one per result, order kept; the
  text after the results becomes a ``user`` message. ``is_error`` has no OpenAI field and
  is kept in the private ``_anthropic_is_error`` key; a result without content maps to
  ``content: None``.
- ``thinking``/``redacted_thinking`` blocks are kept opaquely, unchanged, in the private
  ``_anthropic_thinking`` key and put back first in the assistant turn: Anthropic
  requires the signed thinking of a tool-use turn to be sent back verbatim. Private keys
  are in-process only (design §1), so an OpenAI-bound request never sees them.
- ``cache_control`` rides along: on blocks it stays on the part; a message-level
  ``cache_control`` (canonical, see :mod:`windowkeeper.adapters.caching`) goes on the message's last
  block, and a ``tool_result`` block's marker becomes the tool message's top-level one.
- Anthropic requires alternating roles: consecutive same-role turns are merged (tool
  results first in a user turn, thinking first in an assistant turn); messages with
  nothing to send (empty text, no calls) are skipped, as are empty text blocks.
- With ``keep_originals=True`` (the gateway) the first canonical message made from each
  Anthropic message, and the system message, keep the original under the private
  :data:`SOURCE_KEY`; :func:`to_anthropic` sends that original object itself while the
  messages made from it are unchanged, so unknown fields and blocks survive byte for
  byte. A changed message is converted as above.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, TypeAlias

from ..core.errors import InvalidMessagesError
from ..core.jsonsafe import one_of
from ..core.messages import IN_PLACE_KEY, Message

AnthropicSystem: TypeAlias = str | list[dict[str, Any]] | None
Block: TypeAlias = dict[str, Any]

THINKING_KEY = "_anthropic_thinking"
SOURCE_KEY = "_anthropic_source"
"""Private key: ``{"message": original, "span": n}`` (n canonical messages were made from
it), or ``{"system": original}`` on the system message."""
IS_ERROR_KEY = "_anthropic_is_error"
CACHE_KEY = "cache_control"

THINKING_TYPES = frozenset({"thinking", "redacted_thinking"})

# ``json.dumps(value, ensure_ascii=False)`` byte for byte, without making an encoder per
# call (a Messages history converts every tool call's input on each new request).
_ARGUMENTS = json.JSONEncoder(ensure_ascii=False)


def system_content(system: object) -> str | list[Block]:
    if isinstance(system, str):
        return system
    if isinstance(system, list):
        return [dict(block) for block in _checked_blocks(system, "system")]
    raise InvalidMessagesError("system", "must be a string or a list of text blocks")


def _checked_blocks(blocks: list[Any], where: str) -> list[Mapping[str, Any]]:
    # ``type(block) is dict`` first: a parsed body's blocks are plain dicts, and the ABC
    # check behind ``isinstance(block, Mapping)`` is the dearest step of converting a
    # text block (every block of every new request).
    for number, block in enumerate(blocks):
        if not (type(block) is dict or isinstance(block, Mapping)) or not isinstance(
            block.get("type"), str
        ):
            raise InvalidMessagesError(where, f"block {number} must be an object with a 'type'")
    return blocks


# --- Anthropic -> canonical -------------------------------------------------------------


def from_anthropic(
    system: object, messages: Sequence[Mapping[str, Any]], *, keep_originals: bool = False
) -> list[Message]:
    """Canonical messages for an Anthropic ``system`` parameter and ``messages`` list
    (``keep_originals``: remember each original for an exact way back, see the module doc)."""
    out: list[Message] = []
    if system is not None:
        out.append({"role": "system", "content": system_content(system)})
        if keep_originals:
            out[0][SOURCE_KEY] = {"system": system}
    if not isinstance(messages, Sequence) or isinstance(messages, str):
        raise InvalidMessagesError("input", "'messages' must be a list")
    for index, message in enumerate(messages):
        derived = message_from_anthropic(message, f"message {index}")
        if keep_originals and derived:
            derived[0][SOURCE_KEY] = {"message": message, "span": len(derived)}
        out.extend(derived)
    return out


def message_from_anthropic(message: object, where: str) -> list[Message]:
    """The canonical messages for one Anthropic message (validated)."""
    if not (type(message) is dict or isinstance(message, Mapping)):
        raise InvalidMessagesError(where, "expected a message object")
    content = message.get("content")
    if type(content) is str or isinstance(content, str):
        blocks: str | list[Mapping[str, Any]] = content
    elif isinstance(content, list):
        blocks = _checked_blocks(content, where)
    else:
        raise InvalidMessagesError(where, "content must be a string or a list of blocks")
    role = message.get("role")
    if role == "user":
        return _user_from(blocks, where)
    if role == "assistant":
        return [_assistant_from(blocks, where)]
    if role == "system":
        parts = blocks if isinstance(blocks, str) else [_part_from(b) for b in blocks]
        return [{"role": "system", "content": parts, IN_PLACE_KEY: True}]
    raise InvalidMessagesError(
        where, f"Anthropic role must be user, assistant or system (mid-conversation): {role!r}"
    )


def _part_from(block: Mapping[str, Any]) -> Block:
    """A canonical content part for a text/image/other block."""
    source = block.get("source")
    if block.get("type") != "image" or not isinstance(source, Mapping):
        return dict(block)
    extras = {k: v for k, v in block.items() if k not in ("type", "source")}
    if source.get("type") == "base64":
        media_type = source.get("media_type") or "image/png"
        url = f"data:{media_type};base64,{source.get('data')}"
    elif source.get("type") == "url":
        url = str(source.get("url"))
    else:  # a file id or future source type: the Anthropic part is canonical too
        return dict(block)
    return {"type": "image_url", "image_url": {"url": url}, **extras}


def _user_from(content: str | list[Mapping[str, Any]], where: str) -> list[Message]:
    if isinstance(content, str):
        return [{"role": "user", "content": content}]
    out: list[Message] = []
    pending: list[Block] = []
    for block in content:
        if block.get("type") != "tool_result":
            pending.append(_part_from(block))
            continue
        if pending:
            out.append({"role": "user", "content": pending})
            pending = []
        out.append(_tool_from(block, where))
    if pending:
        out.append({"role": "user", "content": pending})
    return out


def _tool_from(block: Mapping[str, Any], where: str) -> Message:
    tool_use_id = block.get("tool_use_id")
    if not isinstance(tool_use_id, str) or not tool_use_id:
        raise InvalidMessagesError(where, "tool_result block without 'tool_use_id'")
    content = block.get("content")
    if isinstance(content, list):
        content = [_part_from(part) for part in _checked_blocks(content, where)]
    elif content is not None and not isinstance(content, str):
        raise InvalidMessagesError(where, "tool_result content must be a string or a list")
    message: Message = {"role": "tool", "tool_call_id": tool_use_id, "content": content}
    if "is_error" in block:
        message[IS_ERROR_KEY] = bool(block["is_error"])
    if CACHE_KEY in block:
        message[CACHE_KEY] = block[CACHE_KEY]
    return message


def _assistant_from(content: str | list[Mapping[str, Any]], where: str) -> Message:
    if isinstance(content, str):
        return {"role": "assistant", "content": content}
    parts: list[Block] = []
    calls: list[dict[str, Any]] = []
    thinking: list[Block] = []
    for block in content:
        kind = block.get("type")
        if one_of(kind, THINKING_TYPES):
            thinking.append(dict(block))
        elif kind == "tool_use":
            calls.append(_call_from(block, where))
        else:
            parts.append(_part_from(block))
    message: Message = {"role": "assistant", "content": parts or None}
    if calls:
        message["tool_calls"] = calls
    if thinking:
        message[THINKING_KEY] = thinking
    return message


def _call_from(block: Mapping[str, Any], where: str) -> dict[str, Any]:
    identifier, name = block.get("id"), block.get("name")
    if not isinstance(identifier, str) or not isinstance(name, str):
        raise InvalidMessagesError(where, "tool_use block needs a string 'id' and 'name'")
    arguments = _ARGUMENTS.encode(block.get("input", {}))
    call: dict[str, Any] = {
        "id": identifier,
        "type": "function",
        "function": {"name": name, "arguments": arguments},
    }
    if CACHE_KEY in block:
        call[CACHE_KEY] = block[CACHE_KEY]
    return call
