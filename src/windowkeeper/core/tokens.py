"""Rough token accounting (design §2): always available, deterministic, no downloads.

Real usage reported by the provider is authoritative; these estimates only decide
where no real count exists (before the first response, for message budgets).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from json.encoder import encode_basestring as _encode_string
from typing import Any, TypeAlias, TypeGuard

from .jsonsafe import dumps
from .messages import is_image_part
from .optional import orjson

IMAGE_TOKENS = 1_500

TextCounter: TypeAlias = Callable[[str], int]
"""Counts the tokens of a text: :func:`estimate_tokens`, or an exact local tokenizer."""
MESSAGE_OVERHEAD_TOKENS = 10

# CJK ideographs, Hiragana/Katakana, Hangul syllables and jamo: one token per character.
_DENSE_SCRIPT = re.compile(
    "[\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u3400-\u4dbf\u4e00-\u9fff"
    "\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f\U00020000-\U0002fa1f]"
)


# UTF-8 lead bytes of every dense-script code point above (a superset): text whose bytes
# contain none of them has no dense characters, which skips the slow regex scan. Ints,
# not one-byte strings: ``int in bytes`` is a memchr, while ``bytes in bytes`` first tries
# the operand as an int and raises and clears a TypeError (~5,000 instructions) each time.
_DENSE_LEADS = (0xE1, *range(0xE3, 0xEE), 0xEF, 0xF0)


def estimate_tokens(text: str) -> int:
    """Estimate the tokens of a text.

    ASCII: ``ceil(len/4)``. CJK, Kana and Hangul: one token per character. Other
    non-ASCII text: ``ceil(utf8_bytes/4)``. Empty text is 0.
    """
    if not text:
        return 0
    if text.isascii():
        return (len(text) + 3) // 4
    raw = text.encode("utf-8", errors="replace")
    if _sparse(raw):
        return math.ceil(len(raw) / 4)
    rest, dense = _DENSE_SCRIPT.subn("", text)
    size = len(rest.encode("utf-8", errors="replace"))
    return dense + math.ceil(size / 4)


def _sparse(raw: bytes) -> bool:
    """Whether UTF-8 ``raw`` holds no dense-script character (no lead byte of one)."""
    return not any(lead in raw for lead in _DENSE_LEADS)


def content_tokens(
    content: object, *, image_tokens: int = IMAGE_TOKENS, count: TextCounter | None = None
) -> int:
    """Tokens of a message content: a string, ``None`` or a list of parts.

    Images cost a flat ``image_tokens`` each, never the length of their base64 payload.
    """
    count = count or estimate_tokens
    if isinstance(content, str):
        return count(content)
    if not isinstance(content, list):
        return 0
    total = 0
    for part in content:
        if is_image_part(part):
            total += image_tokens
        elif isinstance(part, Mapping):
            text = part.get("text")
            if isinstance(text, str):
                total += count(text)
            else:
                total += count(_compact(part))
        elif isinstance(part, str):
            total += count(part)
    return total


def message_tokens(
    message: Mapping[str, Any],
    *,
    image_tokens: int = IMAGE_TOKENS,
    count: TextCounter | None = None,
) -> int:
    """Estimated tokens of one message: content + tool-call envelope + per-message overhead."""
    count = count or estimate_tokens
    content = message.get("content")
    if type(content) is str:  # the common case, without the generic walk
        total = MESSAGE_OVERHEAD_TOKENS + count(content)
    else:
        total = MESSAGE_OVERHEAD_TOKENS + content_tokens(
            content, image_tokens=image_tokens, count=count
        )
    calls = message.get("tool_calls")
    if isinstance(calls, list):
        rough = count is estimate_tokens
        for call in calls:
            tokens = _json_tokens(call) if rough else None
            total += tokens if tokens is not None else count(_compact(call))
    tool_call_id = message.get("tool_call_id")
    if isinstance(tool_call_id, str):
        total += count(tool_call_id)
    name = message.get("name")
    if isinstance(name, str):
        total += count(name)
    for key in ("reasoning_content", "reasoning"):
        value = message.get(key)
        if isinstance(value, str):
            total += count(value)
    return total


def retexted_tokens(
    tokens: int,
    message: Mapping[str, Any],
    copy: Mapping[str, Any],
    count: TextCounter | None = None,
) -> int | None:
    """:func:`message_tokens` of ``copy``, worked out from ``tokens``, that of
    ``message``: ``copy`` is ``message`` with another text ``content`` (a stub) and every
    other key's value the very same object. The estimate is a sum over a message's parts,
    so only the text's term changes. Worked out for the rough estimate of an ASCII text
    only, whose term is its length (no pass over it); ``None`` for anything else (the
    caller counts ``copy`` itself)."""
    text, content = message.get("content"), copy.get("content")
    if (
        (count is not None and count is not estimate_tokens)
        or type(text) is not str
        or type(content) is not str
        or not text.isascii()
        or len(copy) != len(message)
    ):
        return None
    for key, value in message.items():
        if key != "content" and copy.get(key, _ABSENT) is not value:
            return None
    return tokens - estimate_tokens(text) + estimate_tokens(content)


_ABSENT = object()


def estimate_messages_tokens(
    messages: Iterable[Mapping[str, Any]],
    *,
    image_tokens: int = IMAGE_TOKENS,
    count: TextCounter | None = None,
) -> int:
    return sum(message_tokens(m, image_tokens=image_tokens, count=count) for m in messages)


def tool_schema_tokens(tools: Sequence[Mapping[str, Any]] | None) -> int:
    """Tokens of the tool schemas: name + description + compact JSON of the parameters."""
    if not tools:
        return 0
    chars = 0
    for tool in tools:
        spec = tool.get("function") if isinstance(tool.get("function"), Mapping) else tool
        assert isinstance(spec, Mapping)
        for key in ("name", "description"):
            value = spec.get(key)
            if isinstance(value, str):
                chars += len(value)
        params = spec.get("parameters", spec.get("input_schema"))
        if params is not None:
            chars += len(_compact(params))
    return (chars + 3) // 4


def estimate_request_tokens(
    messages: Iterable[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]] | None = None,
    *,
    image_tokens: int = IMAGE_TOKENS,
    count: TextCounter | None = None,
) -> int:
    """Estimated prompt tokens of a whole request: messages plus tool schemas."""
    messages_part = estimate_messages_tokens(messages, image_tokens=image_tokens, count=count)
    return messages_part + tool_schema_tokens(tools)


_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, default=str)


def _compact(value: object) -> str:
    try:
        return _ENCODER.encode(value)
    except RecursionError:  # a library caller's value nested beyond the C encoder's reach
        return dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)


def _json_tokens(value: object) -> int | None:
    """``estimate_tokens(_compact(value))`` for a dict of strings and such dicts (keys
    strings); ``None`` for anything else and for text with dense-script characters (the
    caller then encodes it).

    Tool calls are exactly that, and their arguments can be long: encoding them only to
    count was a large part of estimating a transcript. For such a tree orjson writes the
    UTF-8 of what ``json`` writes (every ASCII character escaped alike, compact
    separators, other characters as they are; ``tests/test_tokens_orjson.py``), in one C
    call without the copies, and the estimate of a text is a function of its UTF-8 bytes
    unless it holds a dense character. Without orjson, an ASCII tree's size is summed.
    """
    if orjson is None:
        return (_encoded_size(value) + 3) // 4 if _string_tree(value, ascii=True) else None
    if not _string_tree(value, ascii=False):
        return None
    try:
        raw = orjson.dumps(value)
    except TypeError:  # a key orjson does not take as a string (a str subclass, say), or
        return None  # a lone surrogate (its JSONEncodeError is a TypeError)
    if raw.isascii():
        return (len(raw) + 3) // 4
    return math.ceil(len(raw) / 4) if _sparse(raw) else None


def _string_tree(value: object, *, ascii: bool) -> TypeGuard[dict[str, Any]]:
    """Whether ``value`` is a dict of strings and such dicts, keys strings (ASCII ones
    only, when ``ascii``)."""
    if not isinstance(value, dict):
        return False
    for key, item in value.items():
        if not isinstance(key, str) or (ascii and not key.isascii()):
            return False
        if isinstance(item, str):
            if ascii and not item.isascii():
                return False
        elif not _string_tree(item, ascii=ascii):
            return False
    return True


def _encoded_size(value: dict[str, Any]) -> int:
    """``len(_compact(value))`` of an ASCII :func:`_string_tree`, summed without building it."""
    size = 1 + len(value)  # braces, less one, plus a comma between items
    for key, item in value.items():
        inner = len(_encode_string(item)) if isinstance(item, str) else _encoded_size(item)
        size += len(_encode_string(key)) + 1 + inner
    return size if value else 2
