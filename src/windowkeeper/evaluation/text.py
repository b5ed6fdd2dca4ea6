"""What a message says, as the evaluation reads it, and a cheap per-message index of it.

The text of a message is its content plus, for each tool call, the tool's name and every
string in its arguments (parsed from JSON; the raw string when they are not JSON). It is
kept as UTF-8 bytes: the index and the checks then run on ``bytes`` methods, which are
several times faster than ``str`` ones on large tool outputs.

Two views of a message, each built once per message object (messages are never mutated,
design §1, so the object identifies its text):

* ``tokens``: the set of whitespace-separated tokens after quotes, brackets, commas,
  semicolons, ``=``, ``|``, ``*`` and ``:`` became spaces, plus every suffix of a token
  after a ``/`` (``django/db/models.py`` also yields ``db/models.py`` and ``models.py``).
  A token fact is findable when it is such a token, or such a token followed by one
  ``.``, ``!`` or ``?`` (the end of a sentence).
* ``flat``: the text with every run of whitespace made one space, for facts that are
  phrases (error lines, the original task).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ..core.jsonsafe import loads_or_none
from ..core.messages import Message, content_text

_SEPARATORS = b"\"'`()[]{}<>,;=|*:"
_TO_SPACE = bytes.maketrans(_SEPARATORS, b" " * len(_SEPARATORS))
_SUFFIXES = re.compile(rb"/(?=(\S+))")
_SENTENCE_ENDS = (b".", b"!", b"?")


def encode(text: str) -> bytes:
    return text.encode("utf-8", "replace")


def flatten(data: bytes) -> bytes:
    """Whitespace runs as single spaces (also how phrase needles are written)."""
    return b" ".join(data.split())


def ordered_tokens(data: bytes) -> list[bytes]:
    """The tokens of ``data`` in order, without the ``/`` suffixes or sentence ends."""
    return [token.rstrip(b".!?") for token in data.translate(_TO_SPACE).split()]


def tokenize(data: bytes) -> set[bytes]:
    """The token set described in the module docstring."""
    spaced = data.translate(_TO_SPACE)
    tokens = set(spaced.split())
    tokens.update(_SUFFIXES.findall(spaced))
    return tokens


def _leaves(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _leaves(item)
    elif isinstance(value, list):
        for item in value:
            yield from _leaves(item)


def call_arguments(call: Mapping[str, Any]) -> Any:
    """A tool call's parsed arguments (the raw string when they are not JSON)."""
    function = call.get("function")
    raw = function.get("arguments") if isinstance(function, Mapping) else None
    if not isinstance(raw, str):
        return raw if isinstance(raw, Mapping) else {}
    # Bounded: arguments nested deeper than the JSON limit are text, as everywhere else
    # (json.loads would raise RecursionError on thousands of levels).
    value = loads_or_none(raw)
    return raw if value is None else value


def call_name(call: Mapping[str, Any]) -> str:
    function = call.get("function")
    name = function.get("name") if isinstance(function, Mapping) else None
    return name if isinstance(name, str) else ""


def calls_of(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    calls = message.get("tool_calls")
    return [c for c in calls if isinstance(c, Mapping)] if isinstance(calls, list) else []


def parsed_calls(message: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """(name, parsed arguments) of each tool call of a message."""
    return [(call_name(call), call_arguments(call)) for call in calls_of(message)]


def message_text(message: Mapping[str, Any], calls: list[tuple[str, Any]]) -> str:
    """Content text plus tool names and argument strings (``calls``), one per line."""
    parts = [content_text(message.get("content"))]
    for name, arguments in calls:
        parts.append(name)
        parts.extend(_leaves(arguments))
    return "\n".join(part for part in parts if part)


class Entry:
    __slots__ = ("_flat", "_tokens", "calls", "data", "message")

    def __init__(self, message: Message) -> None:
        self.message = message  # kept so its id cannot be reused by another object
        self.calls = parsed_calls(message)
        self.data = encode(message_text(message, self.calls))
        self._tokens: set[bytes] | None = None
        self._flat: bytes | None = None

    @property
    def tokens(self) -> set[bytes]:
        if self._tokens is None:
            self._tokens = tokenize(self.data)
        return self._tokens

    @property
    def flat(self) -> bytes:
        if self._flat is None:
            self._flat = flatten(self.data)
        return self._flat


class TextIndex:
    """Each message's text, tokens and flattened text, computed once per message object."""

    def __init__(self) -> None:
        self._entries: dict[int, Entry] = {}

    def entry(self, message: Message) -> Entry:
        found = self._entries.get(id(message))
        if found is None or found.message is not message:
            found = self._entries[id(message)] = Entry(message)
        return found

    def view(self, messages: Sequence[Message]) -> ContextView:
        return ContextView([self.entry(m) for m in messages])


def has_token(tokens: set[bytes], needle: bytes) -> bool:
    return needle in tokens or any(needle + end in tokens for end in _SENTENCE_ENDS)


class ContextView:
    """What one context offers to the checks; each view is built lazily, once."""

    def __init__(self, entries: list[Entry]) -> None:
        self._entries = entries
        self._tokens: set[bytes] | None = None
        self._lower: set[bytes] | None = None
        self._flat: bytes | None = None

    @property
    def tokens(self) -> set[bytes]:
        if self._tokens is None:
            self._tokens = set().union(*(e.tokens for e in self._entries))
        return self._tokens

    @property
    def lower_tokens(self) -> set[bytes]:
        if self._lower is None:
            self._lower = {token.lower() for token in self.tokens}
        return self._lower

    @property
    def flat(self) -> bytes:
        if self._flat is None:
            self._flat = b"\n".join(e.flat for e in self._entries)
        return self._flat
