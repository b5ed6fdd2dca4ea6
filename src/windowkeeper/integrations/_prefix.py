"""Remembering a conversation's compaction for hooks that see the whole history anew.

A proxy hook or a model-input filter is handed the caller's full history on every call;
nothing it returns is kept. To keep a compaction (rather than compact the same prefix on
every call) it remembers, per conversation, the history it compacted (as a digest and a
length) and what it became. When the next history starts with exactly that history, the
compacted list replaces it and only the new messages follow; any other history (edited,
branched, another caller) is used as given, so a stale memory can never change a
conversation it does not match.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..core.messages import Message, strip_private_keys, to_json

__all__ = ("PrefixMemory", "digest", "fingerprint")

MAX_REMEMBERED = 1_000


def digest(messages: Sequence[Mapping[str, Any]]) -> str:
    """A digest of messages as a provider sees them (private keys ignored)."""
    hasher = hashlib.sha256()
    for message in messages:
        hasher.update(to_json(strip_private_keys(message)).encode("utf-8", "surrogatepass"))
        hasher.update(b"\n")
    return hasher.hexdigest()


def fingerprint(history: Sequence[Mapping[str, Any]]) -> str:
    """A conversation's identity when the caller names none: the digest of its system
    prompt and first user message (what stays the same as the conversation grows)."""
    head = [m for m in history if m.get("role") in ("system", "developer")][:1]
    first_user = [m for m in history if m.get("role") == "user"][:1]
    return digest([*head, *first_user])


@dataclass(frozen=True)
class _Compaction:
    length: int
    digest: str
    compacted: tuple[Message, ...]


class PrefixMemory:
    """Per conversation key: the newest compaction and the history it replaced."""

    def __init__(self) -> None:
        self._entries: OrderedDict[Hashable, _Compaction] = OrderedDict()

    def apply(self, key: Hashable, history: list[Message]) -> list[Message]:
        """``history`` with its remembered prefix replaced by the compaction; ``history``
        itself when nothing is remembered or it does not start with that prefix."""
        entry = self._entries.get(key)
        if entry is None or len(history) < entry.length:
            return history
        if digest(history[: entry.length]) != entry.digest:
            return history
        self._entries.move_to_end(key)
        return [*entry.compacted, *history[entry.length :]]

    def remember(
        self, key: Hashable, history: Sequence[Message], compacted: Sequence[Message]
    ) -> None:
        """``history`` (the caller's full list) became ``compacted``."""
        self._entries[key] = _Compaction(len(history), digest(history), tuple(compacted))
        self._entries.move_to_end(key)
        while len(self._entries) > MAX_REMEMBERED:
            self._entries.popitem(last=False)

    def forget(self, key: Hashable) -> None:
        self._entries.pop(key, None)
