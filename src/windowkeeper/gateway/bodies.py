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
import re
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .protocols.base import _constant, _finite, loads

__all__ = ["BodyParser"]

_DECODER = json.JSONDecoder(parse_constant=_constant, parse_float=_finite)
# The decoder's own value scanner and string scanner (C when available): the same rules
# as json.loads with the gateway's number hooks. Typeshed does not declare them.
_SCAN: Callable[[str, int], tuple[Any, int]] = _DECODER.scan_once  # type: ignore[attr-defined]
_NAME: Callable[[str, int], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]
_WS = re.compile(r"[ \t\n\r]*")
_SPACE = frozenset(" \t\n\r")
_BUCKET_PREFIX = 32
"""Bodies are grouped by their first bytes (a reusable body shares at least a unit)."""
_PER_BUCKET = 128
_PROBE = 32
"""Bytes before the end of a body's second unit (its session's first user message, as a
rule) compared first: most bodies in a bucket belong to other sessions."""
DEFAULT_MAX_BYTES = 128 * 1024 * 1024


class _Unusable(Exception):
    """The body is not one this module can read incrementally: parse it whole."""


@dataclass(frozen=True, eq=False)
class _Known:
    """A parsed body: the members before its history list, the units, the byte offset
    after each unit, and the text and value of the members after the list."""

    raw: bytes
    head: dict[str, Any]
    units: list[Any]
    ends: list[int]
    rest_text: str
    rest: dict[str, Any]
    probes: tuple[tuple[int, bytes], ...] = field(init=False)
    """The last bytes of the first two units, each with its offset (see :meth:`may_share`),
    taken once: every body that arrives in this one's bucket is probed against them."""

    def __post_init__(self) -> None:
        probes: tuple[tuple[int, bytes], ...] = ()
        if self.ends:
            ends = dict.fromkeys((self.ends[min(1, len(self.ends) - 1)], self.ends[0]))
            probes = tuple((max(0, e - _PROBE), self.raw[max(0, e - _PROBE) : e]) for e in ends)
        object.__setattr__(self, "probes", probes)

    def body(self, key: str) -> dict[str, Any]:
        return {**self.head, key: list(self.units), **self.rest}

    def may_share(self, raw: bytes) -> bool:
        """A cheap test that fails for most bodies sharing neither of its first two units
        with this one (the first unit too: bodies that share none reuse nothing, and
        Anthropic bodies of different sessions often share their second, an assistant
        turn). Compared in place: a bucket holds up to 128 bodies, each probed."""
        probes = self.probes
        for start, probe in probes:
            if not raw.startswith(probe, start):
                return False
        return bool(probes)


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
        except (_Unusable, StopIteration, ValueError, RecursionError, IndexError):
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
            shared = _shared_units(raw, known)
            if shared and (best is None or shared > best[0]):
                best = (shared, known)
                if _supersedes(known, shared):
                    break
        if best is None:
            return _full(raw, key), None
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
    return shared >= len(known.ends) - 2 or known.ends[shared - 1] * 10 >= len(known.raw) * 9


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


def _full(raw: bytes, key: str) -> _Known | dict[str, Any]:
    """``raw`` parsed member by member, with the offset after each unit of ``key``; a
    body without that list is returned as it parsed (there is nothing to reuse later)."""
    text = raw.decode("utf-8", "surrogatepass")
    at = _skip(text, 0)
    if text[at : at + 1] != "{":
        raise _Unusable
    head: dict[str, Any] = {}
    at = _skip(text, at + 1)
    while text[at] != "}":
        name, at = _member_name(text, at)
        if name == key and text[at] == "[":
            units, ends, at = _units(text, at + 1)
            rest_text = text[at:]
            return _Known(raw, head, units, ends, rest_text, _rest(rest_text, key))
        head[name], at = _SCAN(text, at)
        at = _after_member(text, at)
    if text[at + 1 :].strip(" \t\n\r"):
        raise _Unusable  # something after the object: the full parse says what
    return head


def _extend(raw: bytes, key: str, known: _Known, shared: int) -> _Known:
    """``raw``, whose first ``shared`` units are ``known``'s: parse only what follows."""
    cut = known.ends[shared - 1]
    text = raw[cut:].decode("utf-8", "surrogatepass")
    new, ends, at = _units(text, 0, first=False)
    rest_text = text[at:]
    rest = known.rest if rest_text == known.rest_text else _rest(rest_text, key)
    return _Known(
        raw,
        known.head,
        known.units[:shared] + new,
        known.ends[:shared] + [cut + end for end in ends],
        rest_text,
        rest,
    )


def _units(text: str, at: int, first: bool = True) -> tuple[list[Any], list[int], int]:
    """The values of a list from ``at`` (right after ``[``, or after a value when not
    ``first``), the byte offset after each (``text`` encoded as UTF-8), and the position
    after the closing ``]``."""
    units: list[Any] = []
    ends: list[int] = []
    ascii = text.isascii()  # then offsets are positions: no piece is measured
    counted = offset = 0  # text[:counted] is ``offset`` bytes long
    at = _skip(text, at)
    expect_comma = not first or text[at] == "]"
    while True:
        if expect_comma:
            if text[at] != ",":
                break
            at += 1
            if text[at] == " " and text[at + 1] not in _SPACE:
                at += 1  # ", " (Python's default separator)
            elif text[at] in _SPACE:
                at = _skip(text, at)
        value, at = _SCAN(text, at)
        units.append(value)
        if ascii:
            ends.append(at)
        else:
            piece = text[counted:at]
            offset += len(piece) if piece.isascii() else len(piece.encode("utf-8", "surrogatepass"))
            counted = at
            ends.append(offset)
        if text[at] in _SPACE:
            at = _skip(text, at)
        expect_comma = True
    if text[at] != "]":
        raise _Unusable
    return units, ends, at + 1


def _rest(text: str, key: str) -> dict[str, Any]:
    """The members after the history list (``text`` starts right after its ``]``)."""
    at = _skip(text, 0)
    rest: dict[str, Any] = {}
    while text[at] == ",":
        at = _skip(text, at + 1)
        name, at = _member_name(text, at)
        if name == key:
            raise _Unusable  # the history key twice: json.loads keeps the last one
        rest[name], at = _SCAN(text, at)
        at = _skip(text, at)
    if text[at] != "}" or text[at + 1 :].strip(" \t\n\r"):
        raise _Unusable
    return rest


def _skip(text: str, at: int) -> int:
    """The position after the whitespace at ``at``."""
    return _WS.match(text, at).end()  # type: ignore[union-attr]  # [ \t\n\r]* always matches


def _member_name(text: str, at: int) -> tuple[str, int]:
    """A member's name at ``at`` and the position of its value."""
    if text[at] != '"':
        raise _Unusable
    name, at = _NAME(text, at + 1)
    at = _skip(text, at)
    if text[at] != ":":
        raise _Unusable
    return name, _skip(text, at + 1)


def _after_member(text: str, at: int) -> int:
    """The position of the next member's name (after ``,``) or of the closing ``}``."""
    at = _skip(text, at)
    if text[at] == ",":
        return _skip(text, at + 1)
    if text[at] != "}":
        raise _Unusable
    return at
