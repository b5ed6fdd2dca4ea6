"""Prompt-cache markers for Anthropic-style providers: the "system_and_3" layout (design §8).

Anthropic caches the request prefix up to each ``cache_control`` breakpoint and accepts at
most four. "system_and_3" spends one on the system prompt (stable across compactions) and
three on the newest non-system messages, so each turn reads the previous turn's prefix
from the cache and writes a slightly longer one.

Markers are placed on canonical OpenAI-format messages, the way OpenRouter and other
Anthropic-compatible OpenAI endpoints read them, and
:func:`~windowkeeper.adapters.anthropic.to_anthropic` carries them into Messages API blocks:

- list content: on the last part (a bare string part becomes a text part first);
- non-empty string content: the string becomes one text part carrying the marker;
- ``None``/empty content (an assistant turn with only tool calls): a top-level
  ``cache_control`` key on the message; ``to_anthropic`` moves it onto the last block
  (the last ``tool_use``). Anthropic rejects markers on empty text, hence no empty part.
- ``tool`` messages follow the same rules (their content part carries the marker); the
  Anthropic adapter hoists it onto the ``tool_result`` block, where Anthropic documents it.

Applying the layout is idempotent: every marker elsewhere (top level, content parts, tool
calls) is removed first, so a rolling conversation never exceeds four markers. A message
that loses its marker and was a single plain text part goes back to string content.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..core.errors import ConfigError
from ..core.messages import Message

CACHE_KEY = "cache_control"
LAYOUTS = ("system_and_3",)
TTLS = ("5m", "1h")
MAX_MARKERS = 4
TAIL_MARKERS = 3
_SYSTEM_ROLES = frozenset({"system", "developer"})


def cache_marker(ttl: str | None = None) -> dict[str, str]:
    """``{"type": "ephemeral"}``, with ``"ttl"`` when one is given (``5m`` or ``1h``)."""
    if ttl is not None and ttl not in TTLS:
        raise ConfigError(f"cache ttl must be one of {', '.join(TTLS)}, got {ttl!r}")
    return {"type": "ephemeral"} if ttl is None else {"type": "ephemeral", "ttl": ttl}


def apply_cache_markers(
    messages: list[Message], *, layout: str = "system_and_3", ttl: str | None = None
) -> list[Message]:
    """Messages with the cache markers of ``layout``; the input is never modified.

    Returns a new list in which unchanged messages are the same objects (the input list
    itself when no message changes, e.g. on a second application).
    """
    if layout not in LAYOUTS:
        raise ConfigError(f"cache layout must be one of {', '.join(LAYOUTS)}, got {layout!r}")
    marker = cache_marker(ttl)
    targets = _targets(messages)
    out: list[Message] | None = None
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping):
            continue
        if index in targets:
            new = _place(_strip(message), marker)
            if new == message:  # already marked exactly so: keep the object
                continue
        elif _has_marker(message):
            new = _strip(message)
        else:
            continue
        out = out if out is not None else list(messages)
        out[index] = new
    return out if out is not None else messages


def count_cache_markers(messages: Sequence[Mapping[str, Any]]) -> int:
    """Markers anywhere a layout may put them: message level, content parts, tool calls."""
    total = 0
    for message in messages:
        if not isinstance(message, Mapping):
            continue
        total += CACHE_KEY in message
        for item in _marked_items(message):
            total += CACHE_KEY in item
    return total


def _targets(messages: Sequence[Any]) -> set[int]:
    """The last message of the leading system run, and the last 3 non-system messages."""
    targets: set[int] = set()
    leading = 0
    while leading < len(messages) and _role(messages[leading]) in _SYSTEM_ROLES:
        leading += 1
    if leading:
        targets.add(leading - 1)
    tail = [i for i, m in enumerate(messages) if _role(m) not in _SYSTEM_ROLES]
    targets.update(tail[-TAIL_MARKERS:])
    return targets


def _role(message: object) -> object:
    return message.get("role") if isinstance(message, Mapping) else None


def _marked_items(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    content = message.get("content")
    parts = content if isinstance(content, list) else []
    calls = message.get("tool_calls")
    calls = calls if isinstance(calls, list) else []
    return [item for item in [*parts, *calls] if isinstance(item, Mapping)]


def _has_marker(message: Mapping[str, Any]) -> bool:
    return CACHE_KEY in message or any(CACHE_KEY in item for item in _marked_items(message))


def _unmarked(item: Any) -> Any:
    if isinstance(item, Mapping) and CACHE_KEY in item:
        return {k: v for k, v in item.items() if k != CACHE_KEY}
    return item


def _strip(message: Mapping[str, Any]) -> Message:
    """A copy without any marker (the same dict when there is none)."""
    if not _has_marker(message):
        return message if isinstance(message, dict) else dict(message)
    new = {k: v for k, v in message.items() if k != CACHE_KEY}
    content = new.get("content")
    if isinstance(content, list):
        parts = [_unmarked(part) for part in content]
        only = parts[0] if len(parts) == 1 and parts[0] is not content[0] else None
        # Undo the string -> text part conversion made when the marker was placed there.
        if isinstance(only, Mapping) and set(only) == {"type", "text"} and only["type"] == "text":
            new["content"] = only["text"]
        else:
            new["content"] = parts
    calls = new.get("tool_calls")
    if isinstance(calls, list):
        new["tool_calls"] = [_unmarked(call) for call in calls]
    return new


def _place(message: Message, marker: Mapping[str, str]) -> Message:
    """A copy of an unmarked message carrying ``marker`` (see the module docstring)."""
    content = message.get("content")
    if isinstance(content, str) and content:
        return {**message, "content": [{"type": "text", "text": content, CACHE_KEY: dict(marker)}]}
    if isinstance(content, list) and content and not _is_empty_text(content[-1]):
        last = content[-1]
        part = dict(last) if isinstance(last, Mapping) else {"type": "text", "text": str(last)}
        return {**message, "content": [*content[:-1], {**part, CACHE_KEY: dict(marker)}]}
    return {**message, CACHE_KEY: dict(marker)}


def _is_empty_text(part: object) -> bool:
    # Anthropic rejects a marker on an empty text block (and the adapter drops such blocks).
    return isinstance(part, Mapping) and part.get("type") == "text" and not part.get("text")
