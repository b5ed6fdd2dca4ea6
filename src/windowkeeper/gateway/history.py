"""What a branch saw: a client history as units and canonical messages, converted
incrementally (see :mod:`.sessions`)."""

from __future__ import annotations

import bisect
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.messages import Message
from .protocols import Parsed, Protocol

__all__ = ["Seen", "common_prefix", "convert", "digest_of"]

_SYSTEM_ROLES = frozenset({"system", "developer"})
# Sorted keys: a client that re-serializes with another key order sends the same history.
_ENCODER = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


def digest_of(value: object) -> str:
    """A content digest (key order ignored) of a message or a list of units."""
    text = _ENCODER.encode(value).encode("utf-8", "surrogatepass")
    return hashlib.blake2b(text, digest_size=16).hexdigest()


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
    )
    return reuse, history
