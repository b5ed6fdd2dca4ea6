"""What a branch saw: a client history as units and canonical messages, converted
incrementally (see :mod:`.sessions`).

Cache markers (``cache_control``) are hints about what to cache, not content, and agents
move them every turn (Claude Code marks the newest message, so the previous newest loses
its marker). Whether two histories *agree* — the same branch continued, the same stored
messages, the same fork — therefore ignores them (:func:`unmarked`); reusing an earlier
conversion still needs the units to be equal, so what goes upstream always carries the
client's markers of this request.
"""

from __future__ import annotations

import bisect
import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..adapters.anthropic import CACHE_KEY, SOURCE_KEY
from ..core.messages import Message
from .protocols import Parsed, Protocol

__all__ = [
    "Seen",
    "agreeing_prefix",
    "common_prefix",
    "convert",
    "digest_of",
    "unmarked",
    "without_markers",
]

_SYSTEM_ROLES = frozenset({"system", "developer"})
# Sorted keys: a client that re-serializes with another key order sends the same history.
_ENCODER = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


def digest_of(value: object) -> str:
    """A content digest (key order and cache markers ignored) of a message, a unit or a
    list of them."""
    text = _ENCODER.encode(value)
    if CACHE_KEY in text:
        plain = [unmarked(v) for v in value] if isinstance(value, list) else unmarked(value)
        text = _ENCODER.encode(plain)
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def unmarked(value: Any) -> Any:
    """A unit, canonical message or system block without its cache markers: on itself,
    its content blocks and the blocks inside those (a tool result's), and the same for
    the client unit a canonical message keeps as its source. Bounded depth on purpose:
    markers sit nowhere else, and a walk of arbitrary depth could exhaust the stack."""
    if not isinstance(value, dict):
        return value
    out = without_markers(value)
    content = out.get("content")
    if isinstance(content, list):
        out = {**out, "content": _plain_text(content)}
    source = out.get(SOURCE_KEY)
    if isinstance(source, dict) and isinstance(source.get("message"), dict):
        out = {**out, SOURCE_KEY: {**source, "message": unmarked(source["message"])}}
    return out


def _plain_text(blocks: list[Any]) -> str | list[Any]:
    """A lone plain text block as its text: a marker needs a block, so a client marks a
    message ``"x"`` by sending it as ``[{"type": "text", "text": "x", ...}]``."""
    if len(blocks) == 1 and isinstance(blocks[0], dict) and blocks[0].keys() == {"type", "text"}:
        text = blocks[0]["text"]
        if blocks[0]["type"] == "text" and isinstance(text, str):
            return text
    return blocks


def without_markers(value: Any) -> Any:
    """A unit without the cache markers on itself, its content blocks and the blocks in
    those (``value`` itself when it has none)."""
    if not isinstance(value, dict):
        return value
    return _with_content(_without_marker(value), _block)


def _block(block: Any) -> Any:
    return _with_content(_without_marker(block), _without_marker)


def _with_content(value: Any, each: Callable[[Any], Any]) -> Any:
    """``value`` with ``each`` applied to the elements of its content list (``value``
    itself when nothing changed)."""
    content = value.get("content") if isinstance(value, dict) else None
    if not isinstance(content, list):
        return value
    mapped = [each(item) for item in content]
    if all(new is old for new, old in zip(mapped, content, strict=True)):
        return value
    return {**value, "content": mapped}


def _without_marker(value: Any) -> Any:
    if not isinstance(value, dict) or CACHE_KEY not in value:
        return value
    return {k: v for k, v in value.items() if k != CACHE_KEY}


def agreeing_prefix(a: Sequence[Any], b: Sequence[Any]) -> int:
    """How many leading elements of ``a`` and ``b`` agree: equal, or equal once their
    cache markers are ignored (only the few elements after the equal run are compared
    that way: markers move at a history's end)."""
    n = common_prefix(a, b)
    end = min(len(a), len(b))
    while n < end and unmarked(a[n]) == unmarked(b[n]):
        n += 1
    return n


def common_prefix(a: Sequence[Any], b: Sequence[Any]) -> int:
    """How many leading elements of ``a`` and ``b`` are equal."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:  # the common case, one comparison in C: one history extends the other
        return n
    i = 0
    while i < n and (a[i] is b[i] or a[i] == b[i]):
        i += 1
    return i


@dataclass
class Seen:
    """A client history as units and canonical messages (``ends[i]``: units through
    message ``i``); ``digests`` are computed on first use."""

    system: Any
    units: list[Any]
    messages: list[Message]
    ends: list[int]
    digests: list[str | None] = field(default_factory=list)
    private: bool = False
    """Some message carries ``_`` keys the upstream must not see (chat clients)."""
    made: bool = True
    """Every message is the object the protocol's conversion made from its unit (not one
    restored from the store): :meth:`Protocol.wire` may send the originals of those still
    in a request without converting them again (see :attr:`made_messages`)."""

    @property
    def made_messages(self) -> list[Message]:
        """The messages when :attr:`made`, else none (for :meth:`Protocol.wire`)."""
        return self.messages if self.made else []

    def digest(self, index: int) -> str:
        while len(self.digests) < len(self.messages):
            self.digests.append(None)
        known = self.digests[index]
        if known is None:
            known = self.digests[index] = digest_of(self.messages[index])
        return known


def convert(protocol: Protocol, parsed: Parsed, seen: Seen | None) -> tuple[int, Seen]:
    """``parsed`` as canonical messages, reusing ``seen``'s where the units agree; returns
    how many leading messages are ``seen``'s own (the same objects) and the new history."""
    if seen is None or seen.system != parsed.system:
        system = protocol.system_messages(parsed)
        rest, ends = protocol.convert(parsed.units, 0, True)
        messages = system + rest
        return 0, Seen(
            parsed.system,
            parsed.units,
            messages,
            [0] * len(system) + ends,
            private=protocol.has_private(rest),
        )
    agreed = common_prefix(parsed.units, seen.units)
    reuse = bisect.bisect_right(seen.ends, agreed)
    if reuse and seen.ends[reuse - 1] == agreed and agreed < len(parsed.units):
        reuse -= protocol.merges_forward(seen.messages[reuse - 1])
    start = seen.ends[reuse - 1] if reuse else 0
    leading = all(m.get("role") in _SYSTEM_ROLES for m in seen.messages[:reuse])
    rest, ends = protocol.convert(parsed.units, start, leading)
    history = Seen(
        parsed.system,
        parsed.units,
        seen.messages[:reuse] + rest,
        seen.ends[:reuse] + ends,
        seen.digests[:reuse],
        seen.private or protocol.has_private(rest),
        seen.made or not reuse,
    )
    return reuse, history
