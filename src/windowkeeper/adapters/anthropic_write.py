"""Canonical messages -> the Anthropic Messages API (the way back of :mod:`.anthropic`,
whose docstring gives the mapping)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..core.jsonsafe import one_of
from ..core.messages import (
    call_arguments,
    call_id,
    call_name,
    is_in_place_instruction,
    tool_calls,
)
from .anthropic import (
    CACHE_KEY,
    IS_ERROR_KEY,
    SOURCE_KEY,
    THINKING_KEY,
    THINKING_TYPES,
    AnthropicSystem,
    Block,
    message_from_anthropic,
    system_content,
)
from .made import Made

_DATA_URL = re.compile(r"data:([^;,]*)(?:;[^;,]*)*?;base64,(.*)", re.DOTALL | re.IGNORECASE)
_BAD_ID_CHARS = re.compile(r"[^A-Za-z0-9_-]")


def to_anthropic(
    messages: Sequence[Mapping[str, Any]], made: Sequence[Mapping[str, Any]] = ()
) -> tuple[AnthropicSystem, list[Block]]:
    """The Anthropic ``system`` parameter (None when there is no system prompt) and
    ``messages`` list for canonical messages. Input messages are never modified.

    ``made``: messages :func:`~.anthropic.from_anthropic` made with ``keep_originals`` (or
    the gateway's conversion, unit by unit), in its order, none changed since (messages
    are replaced, never edited). A run of ``messages`` that is the very objects made from
    one original is that original's conversion as it was made, so the original is sent
    without converting it again to compare (the comparison is what a run of other
    objects takes)."""
    systems: list[Mapping[str, Any]] = []
    out: list[Block] = []
    pristine = Made(made, SOURCE_KEY)
    records = pristine.index()
    index = 0
    while index < len(messages):
        message = messages[index]
        at = records.get(id(message.get(SOURCE_KEY)), -1)
        span = _made_run(messages, index, pristine, at) if at >= 0 else 0
        if span:  # sent as made: the original itself (most of every request)
            original = message[SOURCE_KEY]["message"]
            if out and out[-1]["role"] == original["role"]:
                _append(out, str(original["role"]), original["content"], original)
            else:
                out.append(original)
            index += span
            continue
        role = message.get("role")
        if role in ("system", "developer") and not out and not is_in_place_instruction(message):
            systems.append(message)
            index += 1
            continue
        original, span = _original(messages, index, pristine)
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
            _append(out, _wire_role(message), content)
        index += 1
    return _system_to(systems), out


def _wire_role(message: Mapping[str, Any]) -> str:
    if message.get("role") == "assistant":
        return "assistant"
    return "system" if is_in_place_instruction(message) else "user"


def _made_run(messages: Sequence[Mapping[str, Any]], index: int, made: Made, at: int) -> int:
    """The span of the original whose made messages start at ``index`` when they are the
    very objects ``made`` holds from ``at`` (where the record ``messages[index]`` carries
    was made), else 0."""
    message = messages[index]
    if made.made[at] is not message:
        return 0
    source = message[SOURCE_KEY]
    if not (type(source) is dict or isinstance(source, Mapping)) or "message" not in source:
        return 0
    span = source.get("span")
    if type(span) is not int or index + span > len(messages) or at + span > len(made.made):
        return 0
    return span if span == 1 or _same_run(messages, index, made, at, span) else 0


def _original(messages: Sequence[Mapping[str, Any]], index: int, made: Made) -> tuple[Any, int]:
    """The kept original at ``index`` and its span, when the messages made from it are
    still exactly what it converts to; ``(None, 0)`` otherwise. What the conversion made
    from it, when ``made`` holds that, is what it converts to; else it is converted again.
    (The very same objects need no comparison at all: :func:`_made_run`, asked first.)"""
    message = messages[index]
    source = message.get(SOURCE_KEY)
    if not (type(source) is dict or isinstance(source, Mapping)) or "message" not in source:
        return None, 0
    original, span = source["message"], source.get("span")
    if not isinstance(span, int) or index + span > len(messages):
        return None, 0
    at = made.at(source, span)
    current = messages[index : index + span]
    derived = (made.made[at : at + span] if at >= 0 else ()) or message_from_anthropic(
        original, "source"
    )
    if derived and current[0].get("content") != derived[0].get("content"):
        return None, 0  # the common change (a pruned output), told without copying both
    same = [_without_source(m) for m in current] == [_without_source(m) for m in derived]
    return (original, span) if same else (None, 0)


def _same_run(
    messages: Sequence[Mapping[str, Any]], index: int, made: Made, at: int, span: int
) -> bool:
    """Whether ``messages[index:index + span]`` are the very objects ``made`` holds at
    ``at``."""
    run = made.made[at : at + span]
    return all(new is old for new, old in zip(messages[index : index + span], run, strict=True))


def _without_source(message: Mapping[str, Any]) -> Mapping[str, Any]:
    return (
        {k: v for k, v in message.items() if k != SOURCE_KEY} if SOURCE_KEY in message else message
    )


def _system_to(systems: list[Mapping[str, Any]]) -> AnthropicSystem:
    if len(systems) == 1:
        source = systems[0].get(SOURCE_KEY)
        if isinstance(source, Mapping) and "system" in source:
            original = source["system"]
            if systems[0].get("content") == system_content(original):
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
    the previous one when the roles are equal (never two system turns: each is its own
    instruction, and Anthropic accepts them side by side)."""
    if not out or out[-1]["role"] != role or role == "system":
        out.append(original if original is not None else {"role": role, "content": content})
        return
    merged = _as_blocks(out[-1]["content"]) + _as_blocks(content)
    # Stable partition: tool results lead a user turn, thinking leads an assistant turn.
    lead = frozenset({"tool_result"}) if role == "user" else THINKING_TYPES
    leading = [b for b in merged if one_of(b.get("type"), lead)]
    rest = [b for b in merged if not one_of(b.get("type"), lead)]
    out[-1] = {"role": role, "content": leading + rest}
