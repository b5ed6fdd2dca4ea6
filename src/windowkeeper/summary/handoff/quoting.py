"""Writing values into the handoff text so that they read back exactly.

- Verbatim text (user messages, the task) goes between fence lines of tildes, longer
  than any run of tildes that opens a line of the text, so nothing inside can end it.
- List items are written bare unless they could be misread (a comma in an inline list,
  surrounding whitespace, a line break, a leading double quote, the empty item): those
  are written as a JSON string literal.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence

# Characters str.splitlines() breaks on; json.dumps leaves the last three unescaped.
_LINE_BREAKS = re.compile("[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_JSON_UNESCAPED_BREAKS = re.compile("[\x85\u2028\u2029]")
_TILDES = re.compile(r"^(~{4,})", re.M)
_FENCE_LINE = re.compile(r"~{4,}")


def quote(text: str) -> str:
    """``text`` as a JSON string literal that stays on one line."""
    literal = json.dumps(text, ensure_ascii=False)
    return _JSON_UNESCAPED_BREAKS.sub(lambda m: f"\\u{ord(m.group()):04x}", literal)


def unquote(text: str) -> str:
    if text.startswith('"'):
        try:
            value = json.loads(text)
        except ValueError:
            return text
        if isinstance(value, str):
            return value
    return text


def needs_quote(text: str) -> bool:
    return not text or text != text.strip() or text[0] == '"' or bool(_LINE_BREAKS.search(text))


@functools.lru_cache(maxsize=4_096)
def item(text: str) -> str:
    """A line item: bare unless it could be misread."""
    return quote(text) if needs_quote(text) else text


@functools.lru_cache(maxsize=8_192)
def list_item(text: str) -> str:
    """An inline list item: bare unless it could be misread (commas separate items)."""
    return quote(text) if needs_quote(text) or "," in text else text


def inline_list(items: Sequence[str], sep: str = ", ") -> str:
    """``items`` joined by ``sep``, each bare unless it could be misread (it holds the
    separator's first character, or see :func:`needs_quote`)."""
    if sep == ", ":
        return sep.join(map(list_item, items))
    mark = sep.strip()[:1] or sep[:1]
    return sep.join(quote(i) if needs_quote(i) or mark in i else i for i in items)


def parse_list(text: str, sep: str = ", ") -> list[tuple[str, bool]]:
    """Inline items separated by ``sep``, each with whether it was quoted."""
    items: list[tuple[str, bool]] = []
    decoder = json.JSONDecoder()
    index = 0
    while index <= len(text):
        if text.startswith('"', index):
            try:
                value, index = decoder.raw_decode(text, index)
            except ValueError:
                items.append((text[index:], False))
                break
            items.append((str(value), True))
        else:
            end = text.find(sep, index)
            end = len(text) if end < 0 else end
            items.append((text[index:end], False))
            index = end
        if not text.startswith(sep, index):
            break
        index += len(sep)
    return [(value, quoted) for value, quoted in items if value or quoted]


def fence(text: str) -> str:
    """``text`` between fence lines no line of it can close."""
    runs = [len(m.group(1)) for m in _TILDES.finditer(text)] if "~~~~" in text else []
    marker = "~" * max(4, max(runs, default=0) + 1)
    return f"{marker}\n{text}\n{marker}"


def read_fence(lines: Sequence[str], start: int) -> tuple[str, int] | None:
    """The fenced text opening at ``lines[start]`` and the index after its closing line."""
    if start >= len(lines) or not _FENCE_LINE.fullmatch(lines[start]):
        return None
    marker = lines[start]
    for end in range(start + 1, len(lines)):
        if lines[end] == marker:
            return "\n".join(lines[start + 1 : end]), end + 1
    return "\n".join(lines[start + 1 :]), len(lines)
