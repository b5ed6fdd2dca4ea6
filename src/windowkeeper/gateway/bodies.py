"""Request bodies parsed incrementally (design §8, overhead).

An agent re-sends its whole history with every request, so most of each body is bytes the
gateway parsed a moment ago. :class:`BodyParser` remembers recent bodies with the byte
offset after each unit of their history list (``messages`` / ``input``); a new body that
starts with the same bytes as one of them, through some unit, reuses that body's parsed
units (the same objects) and parses only what follows. The rest of the body (tools,
system, options after the list) is reused too when its text is unchanged.

What must hold:
- the result equals ``json.loads`` of the body with the gateway's number rules
  (:func:`~.protocols.base.loads`) for every input; any surprise (another encoding, the
  history key twice, a syntax error) takes the full parse, whose error the client sees;
- equal bytes through a unit's end mean equal parsed values: the shared prefix was valid
  JSON, ends at a ``}`` or ``]`` of a unit and holds the whole object head before the
  list, so nothing after it can change how it parses;
- reused objects are never mutated: parsed units and members are shared with later
  requests (the gateway's passes copy, never edit, what they are given);
- memory is bounded: bodies are kept per caller scope and protocol, evicted least
  recently used first past ``max_bytes`` of bodies in total.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from typing import Any

from .bodytext import Known as _Known
from .bodytext import Unusable, Walk, parse_whole, rest_of, units_of
from .protocols.base import loads

__all__ = ["BodyParser"]

_BUCKET_PREFIX = 32
"""Bodies are grouped by their first bytes (a reusable body shares at least a unit)."""
_PER_BUCKET = 128
DEFAULT_MAX_BYTES = 128 * 1024 * 1024


class _Entries:
    """One bucket's bodies, newest first, indexed by their probes (:meth:`_Known.may_share`):
    a new body looks up the bytes it holds at each probe span the bucket knows, one look-up
    for all the bodies with the same spans, instead of probing every body (a bucket holds
    up to 128, of sessions that often share a system prompt)."""

    def __init__(self) -> None:
        self.bodies: list[_Known] = []
        self._index: dict[_Spans, dict[tuple[bytes, ...], list[tuple[int, _Known]]]] = {}
        self._added = 0

    def candidates(self, raw: bytes) -> list[_Known]:
        """The bodies whose probes ``raw`` repeats (only they may share a unit with it, or
        equal it), newest first."""
        found: list[tuple[int, _Known]] = []
        for spans, groups in self._index.items():
            group = groups.get(tuple([raw[start:end] for start, end in spans]))
            if group:
                found += group
        if len(found) > 1:
            found.sort(key=lambda item: item[0])
        return [known for _, known in found]

    def add(self, known: _Known) -> None:
        self.bodies.insert(0, known)
        self._added += 1
        spans, probes = _index_key(known)
        self._index.setdefault(spans, {}).setdefault(probes, []).append((-self._added, known))

    def remove(self, known: _Known) -> None:
        self.bodies.remove(known)  # by identity (``eq=False``)
        self._unindex(known)

    def pop(self) -> _Known:
        """Drop the oldest body."""
        known = self.bodies.pop()
        self._unindex(known)
        return known

    def _unindex(self, known: _Known) -> None:
        spans, probes = _index_key(known)
        groups = self._index[spans]
        group = groups[probes]
        group[:] = [item for item in group if item[1] is not known]
        if not group:
            del groups[probes]
            if not groups:
                del self._index[spans]


_Spans = tuple[tuple[int, int], ...]


def _index_key(known: _Known) -> tuple[_Spans, tuple[bytes, ...]]:
    """A body's probe spans and bytes (a body without units has none: every body repeats
    that empty key, and only an equal body reuses such a one)."""
    spans = tuple((start, start + len(probe)) for start, probe in known.probes)
    return spans, tuple(probe for _, probe in known.probes)


_Bucket = tuple[str, str, bytes]


class BodyParser:
    """Parses request bodies, reusing what an earlier body with the same prefix held."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        self._buckets: OrderedDict[_Bucket, _Entries] = OrderedDict()
        self._bytes = 0
        self.reused_bytes = 0
        """Bytes of bodies not parsed again (tests read it)."""

    @property
    def remembered_bytes(self) -> int:
        """Bytes of the bodies kept for reuse (at most ``max_bytes``)."""
        return self._bytes

    def parse(self, raw: bytes, key: str, scope: str = "", protocol: str = "") -> Any:
        """``raw`` as JSON (the gateway's rules); ``key`` names the history list."""
        if self.max_bytes <= 0 or json.detect_encoding(raw) != "utf-8":
            return loads(raw)
        bucket = (scope, protocol, raw[:_BUCKET_PREFIX])
        entries = self._buckets.get(bucket)
        try:
            known, replaces = self._reuse(raw, key, entries.candidates(raw) if entries else [])
        except (Unusable, StopIteration, ValueError, RecursionError, IndexError):
            return loads(raw)  # the canonical parse and its error message
        if not isinstance(known, _Known):
            return known
        self._remember(bucket, known, replaces)
        return known.body(key)

    def _reuse(
        self, raw: bytes, key: str, entries: list[_Known]
    ) -> tuple[_Known | dict[str, Any], _Known | None]:
        """The parsed body, and the remembered one it supersedes: one whose bytes this body
        repeats (nearly) all of, as an agent's next request repeats its last one, moved
        cache markers aside. ``entries`` (the bucket's bodies whose probes ``raw`` repeats)
        are newest first, so the first such one is taken."""
        best: tuple[int, _Known] | None = None
        for known in entries:
            if known.raw == raw:
                self.reused_bytes += len(raw)
                return known, known
            if not known.may_share(raw):
                continue
            try:
                shared = _shared_units(raw, known)
            except Unusable:  # its offsets cannot be located (the history key twice)
                continue
            if shared and (best is None or shared > best[0]):
                best = (shared, known)
                if _supersedes(known, shared):
                    break
        if best is None:
            return parse_whole(raw, key), None
        shared, known = best
        self.reused_bytes += known.ends[shared - 1]
        return _extend(raw, key, known, shared), known if _supersedes(known, shared) else None

    def _remember(self, bucket: _Bucket, known: _Known, replaces: _Known | None) -> None:
        entries = self._buckets.get(bucket)
        if entries is None:
            entries = self._buckets[bucket] = _Entries()
        self._buckets.move_to_end(bucket)
        if replaces is not None and any(entry is replaces for entry in entries.bodies):
            entries.remove(replaces)
            self._bytes -= len(replaces.raw)
        entries.add(known)
        self._bytes += len(known.raw)
        while len(entries.bodies) > _PER_BUCKET:
            self._bytes -= len(entries.pop().raw)
        while self._bytes > self.max_bytes and self._buckets:
            oldest_bucket, oldest = next(iter(self._buckets.items()))
            self._bytes -= len(oldest.pop().raw)  # least recently used bucket, oldest body
            if not oldest.bodies:
                del self._buckets[oldest_bucket]


def _supersedes(known: _Known, shared: int) -> bool:
    """Whether a body that repeats ``known``'s first ``shared`` units makes it redundant:
    all of them but the last two, or nine tenths of its bytes (an agent's next request
    repeats the last one but for the message whose cache marker moved)."""
    return shared >= len(known.units) - 2 or known.ends[shared - 1] * 10 >= len(known.raw) * 9


def _shared_units(raw: bytes, known: _Known) -> int:
    """How many leading units of ``known`` ``raw`` repeats byte for byte (a gallop from
    the end, then bisection: a client usually resends all of them, or all but the last
    one or two when it moves a cache marker)."""
    view = memoryview(known.raw)
    ends = known.ends

    def same(count: int) -> bool:
        return count == 0 or raw.startswith(view[: ends[count - 1]])

    high = len(ends)
    if same(high):
        return high
    low, step = high - 1, 1
    while low > 0 and not same(low):
        high, step = low, step * 2
        low = max(0, low - step)
    while high - low > 1:  # same(low), not same(high)
        middle = (low + high) // 2
        low, high = (middle, high) if same(middle) else (low, middle)
    return low


def _extend(raw: bytes, key: str, known: _Known, shared: int) -> _Known:
    """``raw``, whose first ``shared`` units are ``known``'s: parse only what follows."""
    cut = known.ends[shared - 1]
    text = raw[cut:].decode("utf-8", "surrogatepass")
    walk = Walk(text, 0)
    new, ends, _ = units_of(walk, first=False)
    rest_text = text[walk.at :]
    rest = known.rest if rest_text == known.rest_text else rest_of(rest_text, key)
    return _Known(
        raw,
        known.head,
        known.units[:shared] + new,
        known.ends[:shared] + [cut + end for end in ends],
        rest,
        rest_text,
    )
