"""Anthropic Messages API <-> canonical OpenAI chat messages (design §1).

:func:`from_anthropic` turns a Messages API request (``system`` + ``messages``) into
canonical messages; :func:`to_anthropic` turns canonical messages back. For the
conversations Anthropic accepts, ``to_anthropic(from_anthropic(s, m)) == (s, m)``.

Mapping:

- ``system`` (string or text blocks) <-> a leading ``system`` message (same form). Later
  ``system``/``developer`` messages have no Anthropic place and become user turns.
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
import re
from collections.abc import Mapping, Sequence
from typing import Any, TypeAlias

from ..core.errors import InvalidMessagesError
from ..core.jsonsafe import one_of
from ..core.messages import Message, call_arguments, call_id, call_name, tool_calls

AnthropicSystem: TypeAlias = str | list[dict[str, Any]] | None
Block: TypeAlias = dict[str, Any]

THINKING_KEY = "_anthropic_thinking"
SOURCE_KEY = "_anthropic_source"
"""Private key: ``{"message": original, "span": n}`` (n canonical messages were made from
it), or ``{"system": original}`` on the system message."""
IS_ERROR_KEY = "_anthropic_is_error"
CACHE_KEY = "cache_control"

_THINKING_TYPES = frozenset({"thinking", "redacted_thinking"})
_DATA_URL = re.compile(r"data:([^;,]*)(?:;[^;,]*)*?;base64,(.*)", re.DOTALL | re.IGNORECASE)
_BAD_ID_CHARS = re.compile(r"[^A-Za-z0-9_-]")


# --- Anthropic -> canonical -------------------------------------------------------------


def from_anthropic(
    system: object, messages: Sequence[Mapping[str, Any]], *, keep_originals: bool = False
) -> list[Message]:
    """Canonical messages for an Anthropic ``system`` parameter and ``messages`` list
    (``keep_originals``: remember each original for an exact way back, see the module doc)."""
    out: list[Message] = []
    if system is not None:
        out.append({"role": "system", "content": _system_content(system)})
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
    if not isinstance(message, Mapping):
        raise InvalidMessagesError(where, "expected a message object")
    content = message.get("content")
    if not isinstance(content, str | list):
        raise InvalidMessagesError(where, "content must be a string or a list of blocks")
    blocks = content if isinstance(content, str) else _checked_blocks(content, where)
    role = message.get("role")
    if role == "user":
        return _user_from(blocks, where)
    if role == "assistant":
        return [_assistant_from(blocks, where)]
    raise InvalidMessagesError(where, f"Anthropic role must be user or assistant: {role!r}")


def _system_content(system: object) -> str | list[Block]:
    if isinstance(system, str):
        return system
    if isinstance(system, list):
        return [dict(block) for block in _checked_blocks(system, "system")]
    raise InvalidMessagesError("system", "must be a string or a list of text blocks")


def _checked_blocks(blocks: list[Any], where: str) -> list[Mapping[str, Any]]:
    for number, block in enumerate(blocks):
        if not isinstance(block, Mapping) or not isinstance(block.get("type"), str):
            raise InvalidMessagesError(where, f"block {number} must be an object with a 'type'")
    return blocks


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
        if one_of(kind, _THINKING_TYPES):
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
    arguments = json.dumps(block.get("input", {}), ensure_ascii=False)
    call: dict[str, Any] = {
        "id": identifier,
        "type": "function",
        "function": {"name": name, "arguments": arguments},
    }
    if CACHE_KEY in block:
        call[CACHE_KEY] = block[CACHE_KEY]
    return call


# --- canonical -> Anthropic -------------------------------------------------------------


def to_anthropic(messages: Sequence[Mapping[str, Any]]) -> tuple[AnthropicSystem, list[Block]]:
    """The Anthropic ``system`` parameter (None when there is no system prompt) and
    ``messages`` list for canonical messages. Input messages are never modified."""
    systems: list[Mapping[str, Any]] = []
    out: list[Block] = []
    index = 0
    while index < len(messages):
        message = messages[index]
        role = message.get("role")
        if role in ("system", "developer") and not out:
            systems.append(message)
            index += 1
            continue
        original, span = _original(messages, index)
        if original is not None:
            _append(out, str(original["role"]), original["content"], original)
            index += span
            continue
        if role == "assistant":
            content = _assistant_to(message)
        elif role == "tool":
            content = [_tool_to(message)]
        else:  # user, and system/developer turns after the start
            content = _with_marker(_content_to(message.get("content")), message)
        if content:
            _append(out, "assistant" if role == "assistant" else "user", content)
        index += 1
    return _system_to(systems), out


def _original(messages: Sequence[Mapping[str, Any]], index: int) -> tuple[Any, int]:
    """The kept original at ``index`` and its span, when the messages made from it are
    still exactly what it converts to; ``(None, 0)`` otherwise."""
    source = messages[index].get(SOURCE_KEY)
    if not isinstance(source, Mapping) or "message" not in source:
        return None, 0
    original, span = source["message"], source.get("span")
    if not isinstance(span, int) or index + span > len(messages):
        return None, 0
    derived = message_from_anthropic(original, "source")
    current = [_without_source(m) for m in messages[index : index + span]]
    return (original, span) if current == derived else (None, 0)


def _without_source(message: Mapping[str, Any]) -> Mapping[str, Any]:
    return (
        {k: v for k, v in message.items() if k != SOURCE_KEY} if SOURCE_KEY in message else message
    )


def _system_to(systems: list[Mapping[str, Any]]) -> AnthropicSystem:
    if len(systems) == 1:
        source = systems[0].get(SOURCE_KEY)
        if isinstance(source, Mapping) and "system" in source:
            original = source["system"]
            if systems[0].get("content") == _system_content(original):
                return original  # type: ignore[no-any-return]
    contents = [_with_marker(_content_to(m.get("content")), m) for m in systems]
    contents = [content for content in contents if content]
    if not contents:
        return None
    if len(contents) == 1:
        return contents[0]
    return [block for content in contents for block in _as_blocks(content)]


def _content_to(content: object) -> str | list[Block]:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return []
    blocks = [_block_to(part) for part in content]
    return [b for b in blocks if not (b.get("type") == "text" and b.get("text") == "")]


def _block_to(part: object) -> Block:
    if isinstance(part, str):
        return {"type": "text", "text": part}
    if not isinstance(part, Mapping):
        return {"type": "text", "text": str(part)}
    kind = part.get("type")
    if kind in ("input_text", "output_text"):  # Responses-style text parts
        return {**part, "type": "text"}
    if kind not in ("image_url", "input_image"):
        return dict(part)
    value = part.get("image_url")
    url = value.get("url") if isinstance(value, Mapping) else value
    extras = {k: v for k, v in part.items() if k not in ("type", "image_url", "detail")}
    match = _DATA_URL.fullmatch(url) if isinstance(url, str) else None
    if match is not None:
        source = {"type": "base64", "media_type": match.group(1), "data": match.group(2)}
    else:
        source = {"type": "url", "url": str(url)}
    return {"type": "image", "source": source, **extras}


def _as_blocks(content: str | list[Block]) -> list[Block]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return content


def _with_marker(content: str | list[Block], message: Mapping[str, Any]) -> str | list[Block]:
    """Move a message-level ``cache_control`` onto the last block."""
    marker = message.get(CACHE_KEY)
    if marker is None or not content:
        return content
    blocks = list(_as_blocks(content))
    blocks[-1] = {**blocks[-1], CACHE_KEY: marker}
    return blocks


def _assistant_to(message: Mapping[str, Any]) -> str | list[Block]:
    content = _content_to(message.get("content"))
    thinking = message.get(THINKING_KEY)
    calls = tool_calls(message)
    if isinstance(content, str) and not calls and not isinstance(thinking, list):
        return _with_marker(content, message)
    blocks = [dict(b) for b in thinking] if isinstance(thinking, list) else []
    blocks += _as_blocks(content)
    blocks += [_tool_use_to(call) for call in calls]
    return _with_marker(blocks, message)


def _tool_use_to(call: Mapping[str, Any]) -> Block:
    block: Block = {
        "type": "tool_use",
        "id": _safe_id(call_id(call)),
        "name": call_name(call),
        "input": _arguments_input(call_arguments(call)),
    }
    if CACHE_KEY in call:
        block[CACHE_KEY] = call[CACHE_KEY]
    return block


def _arguments_input(arguments: str) -> Any:
    """Anthropic needs an object: empty -> ``{}``; non-object JSON or broken text is kept
    under ``raw_arguments`` so the model still sees what it sent."""
    if not arguments.strip():
        return {}
    try:
        value = json.loads(arguments)
    except ValueError:
        return {"raw_arguments": arguments}
    return value if isinstance(value, dict) else {"raw_arguments": arguments}


def _tool_to(message: Mapping[str, Any]) -> Block:
    identifier = message.get("tool_call_id")
    block: Block = {
        "type": "tool_result",
        "tool_use_id": _safe_id(identifier if isinstance(identifier, str) else ""),
    }
    marker = message.get(CACHE_KEY)
    content = message.get("content")
    if content is not None:
        blocks = _content_to(content)
        if isinstance(blocks, list) and blocks and CACHE_KEY in blocks[-1]:
            # A content-part marker (OpenRouter style) is hoisted onto the tool_result
            # block, where Anthropic documents breakpoints for tool results.
            last = blocks.pop()
            marker = last[CACHE_KEY] if marker is None else marker
            blocks.append({k: v for k, v in last.items() if k != CACHE_KEY})
            blocks = _collapse_text(blocks)
        block["content"] = blocks
    if IS_ERROR_KEY in message:
        block["is_error"] = bool(message[IS_ERROR_KEY])
    if marker is not None:
        block[CACHE_KEY] = marker
    return block


def _collapse_text(blocks: list[Block]) -> str | list[Block]:
    """One plain text block -> its string (what the marker placement had converted)."""
    if len(blocks) == 1 and set(blocks[0]) == {"type", "text"} and blocks[0]["type"] == "text":
        return str(blocks[0]["text"])
    return blocks


def _safe_id(identifier: str) -> str:
    """Anthropic accepts ids matching ``[A-Za-z0-9_-]+``; other providers' ids may not."""
    return _BAD_ID_CHARS.sub("_", identifier) or "call"


def _append(
    out: list[Block], role: str, content: str | list[Block], original: Block | None = None
) -> None:
    """Append a turn (the ``original`` message object itself when given), merging it into
    the previous one when the roles are equal."""
    if not out or out[-1]["role"] != role:
        out.append(original if original is not None else {"role": role, "content": content})
        return
    merged = _as_blocks(out[-1]["content"]) + _as_blocks(content)
    # Stable partition: tool results lead a user turn, thinking leads an assistant turn.
    lead = frozenset({"tool_result"}) if role == "user" else _THINKING_TYPES
    leading = [b for b in merged if one_of(b.get("type"), lead)]
    rest = [b for b in merged if not one_of(b.get("type"), lead)]
    out[-1] = {"role": role, "content": leading + rest}
