"""Walking a request body's text for :mod:`.bodies`: its members, the units of its history
list and the byte offset after each unit.

Two ways a body is read whole:
- :func:`scan_whole`, the standard library's scanner member by member, which finds the
  units' values and offsets in one walk;
- :func:`parse_whole`, orjson (about a third of the scanner's time) for the values, and
  the offsets found only when a later body may reuse the units (:func:`locate`): most
  bodies are never extended by another (each request of a new session, for one), so
  their offsets are never needed but for the first two units, which index the body.

What must hold: both give what ``json.loads`` gives with the gateway's number rules
(:func:`~.protocols.base.loads`), member order included. orjson differs from it on
integers outside 64 bits (read as floats), lone surrogates, non-finite numbers and
anything else it refuses: a body holding a run of 19 digits (where such an integer could
be) or one orjson refuses is scanned instead, and the scanner's verdict stands. Without
orjson or Hyperscan (the pure-Python paths) every body is scanned.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

from ..core import hint_scan
from ..core.optional import orjson
from .protocols.base import finite_float, reject_constant

__all__ = ["Known", "Unusable", "Walk", "parse_whole", "rest_of", "scan_whole", "skip", "units_of"]

_DECODER = json.JSONDecoder(parse_constant=reject_constant, parse_float=finite_float)
# The decoder's own value scanner and string scanner (C when available): the same rules
# as json.loads with the gateway's number hooks. Typeshed does not declare them.
_SCAN: Callable[[str, int], tuple[Any, int]] = _DECODER.scan_once  # type: ignore[attr-defined]
_NAME: Callable[[str, int], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]
_WS = re.compile(r"[ \t\n\r]*")
_SPACE = frozenset(" \t\n\r")
_INDEXED = 2
"""Units located when a body is parsed whole: its probes sit at the ends of the first two."""

Reader = Callable[[str, int], tuple[Any, int]]
"""Reads the value at a position: the value and the position after it."""


class Unusable(Exception):
    """The body is not one this module can read incrementally: parse it whole."""


class Walk:
    """A position in a body's text and the byte offset (UTF-8) of a position before it,
    so that offsets are counted once, piece by piece, as the walk moves on."""

    __slots__ = ("_ascii", "_counted", "_offset", "at", "text")

    def __init__(self, text: str, at: int, counted: int = 0, offset: int = 0) -> None:
        self.text = text
        self.at = at
        self._ascii = text.isascii()  # then offsets are positions: no piece is measured
        self._counted = counted
        self._offset = offset

    def offset_of(self, at: int) -> int:
        """The byte offset of position ``at`` (at or after the last one asked)."""
        if self._ascii:
            return self._offset + at - self._counted
        piece = self.text[self._counted : at]
        self._offset += (
            len(piece) if piece.isascii() else len(piece.encode("utf-8", "surrogatepass"))
        )
        self._counted = at
        return self._offset


def units_of(
    walk: Walk, read: Reader = _SCAN, first: bool = True, limit: int = -1
) -> tuple[list[Any], list[int], bool]:
    """The values of a list from ``walk.at`` (right after ``[``, or after a value when not
    ``first``), the byte offset after each, and whether the list ended (``walk.at`` is
    then after its ``]``, else after the last value read); at most ``limit`` values when
    it is not negative."""
    text = walk.text
    units: list[Any] = []
    ends: list[int] = []
    at = skip(text, walk.at)
    expect_comma = not first or text[at] == "]"
    while len(units) != limit:
        if expect_comma:
            if text[at] != ",":
                break
            at += 1
            if text[at] == " " and text[at + 1] not in _SPACE:
                at += 1  # ", " (Python's default separator)
            elif text[at] in _SPACE:
                at = skip(text, at)
        value, at = read(text, at)
        units.append(value)
        ends.append(walk.offset_of(at))
        if text[at] in _SPACE:
            at = skip(text, at)
        expect_comma = True
    else:
        walk.at = at
        return units, ends, False
    if text[at] != "]":
        raise Unusable
    walk.at = at + 1
    return units, ends, True


def scan_whole(raw: bytes, key: str) -> Known | dict[str, Any]:
    """``raw`` scanned member by member, the offset after each unit of the ``key`` list
    found on the way; a body without that list as it parsed (nothing to reuse later)."""
    text = raw.decode("utf-8", "surrogatepass")
    head, at = _head(text, key, _SCAN)
    if at < 0:
        return head
    walk = Walk(text, at)
    units, ends, _ = units_of(walk)
    rest_text = text[walk.at :]
    return Known(raw, head, units, ends, rest_of(rest_text, key), rest_text)


_PROBE = 32
"""Bytes before the end of a body's second unit (its session's first user message, as a
rule) compared first: most bodies in a bucket belong to other sessions."""


class Known:
    """A parsed body: the members before its history list, the units, the byte offset
    after each unit, and the text and value of the members after the list.

    A body orjson parsed whole (:func:`parse_whole`) has its offsets located as far as
    its probes need; :attr:`ends` and :attr:`rest_text` locate the rest when first asked
    (:class:`Unusable` when its text's list is not the one parsed: the key twice). Units
    are shared with later bodies and never mutated."""

    __slots__ = ("_ends", "_rest_text", "_resume", "head", "probes", "raw", "rest", "units")

    def __init__(
        self,
        raw: bytes,
        head: dict[str, Any],
        units: list[Any],
        ends: list[int],
        rest: dict[str, Any],
        rest_text: str | None,
        resume: tuple[int, int] = (0, 0),
        text: str = "",
    ) -> None:
        """``rest_text`` ``None``: ``units`` are located from ``resume`` (the position in
        ``text``, the body decoded, after the list's ``[`` and its byte offset) as far
        as the probes need."""
        self.raw = raw
        self.head = head
        self.units = units
        self.rest = rest
        self._ends = ends
        self._rest_text = rest_text
        self._resume = resume
        """The text position and byte offset after the last located unit."""
        if rest_text is None:
            self._locate(_INDEXED, text)
        probes: tuple[tuple[int, bytes], ...] = ()
        if ends:
            spans = dict.fromkeys((ends[min(1, len(ends) - 1)], ends[0]))
            probes = tuple((max(0, e - _PROBE), raw[max(0, e - _PROBE) : e]) for e in spans)
        self.probes = probes
        """The last bytes of the first two units, each with its offset (see
        :meth:`may_share`), taken once: every body that arrives in this one's bucket is
        probed against them."""

    @property
    def ends(self) -> list[int]:
        if self._rest_text is None:
            self._locate()
        return self._ends

    @property
    def rest_text(self) -> str:
        if self._rest_text is None:
            self._locate()
        assert self._rest_text is not None
        return self._rest_text

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

    def _locate(self, limit: int = -1, text: str = "") -> None:
        """Locate the units after the last located one (at most ``limit``)."""
        text = text or self.raw.decode("utf-8", "surrogatepass")
        position, offset = self._resume
        walk = Walk(text, position, position, offset)
        done = len(self._ends)
        read = _Expected(iter(self.units[done:]))
        try:
            units, ends, finished = units_of(walk, read, first=done == 0, limit=limit)
            self._ends += ends
            self._resume = (walk.at, walk.offset_of(walk.at))
            if finished:
                rest_text = text[walk.at :]
                # The text's list is the one parsed only if no member after it is another
                # of the same name (json.loads keeps the last): its members are the rest's.
                names = rest_of(rest_text, None, _Expected(iter(self.rest.values())))
                if done + len(units) != len(self.units) or list(names) != list(self.rest):
                    raise Unusable
                self._rest_text = rest_text
        except (StopIteration, ValueError, IndexError, RecursionError):
            raise Unusable from None


_LONG_NUMBERS = hint_scan.condition_scanner([("[0-9]{19}", False)]) if orjson is not None else None
"""Where an integer orjson reads otherwise than ``json`` could be (it takes one outside
64 bits as a float; 19 digits is the shortest below -2**63)."""


def parse_whole(raw: bytes, key: str) -> Known | Any:
    """``raw`` parsed whole: by orjson with its first units located (the rest when a later
    body asks), else by :func:`scan_whole` (wherever orjson's reading could differ); a body
    without a ``key`` list as it parsed."""
    if _LONG_NUMBERS is None or orjson is None:
        return scan_whole(raw, key)
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return scan_whole(raw, key)  # its error, or its reading of what orjson refuses
    text = raw.decode("utf-8", "surrogatepass")
    if _LONG_NUMBERS.matching_utf8(raw):  # ``raw`` is the text's UTF-8: it decoded
        return scan_whole(raw, key)
    if not isinstance(value, dict) or not isinstance(value.get(key), list):
        return value
    names = list(value)
    at = names.index(key)
    head = {name: value[name] for name in names[:at]}
    rest = {name: value[name] for name in names[at + 1 :]}
    try:
        skimmed, position = _head(text, key, _skim)
        if position < 0 or list(skimmed) != list(head):
            raise Unusable  # the key before its list too: the parse and text disagree
        offset = len(text[:position].encode("utf-8", "surrogatepass"))
        return Known(raw, head, value[key], [], rest, None, (position, offset), text)
    except (Unusable, ValueError, IndexError, RecursionError):
        return value  # the history key twice, say: nothing to reuse later


class _Expected:
    """Reads the values the whole parse gave, in order: each one's end found by its orjson
    text where the body holds it verbatim (as JavaScript's and Rust's writers, and orjson,
    write it), else by scanning."""

    __slots__ = ("_values",)

    def __init__(self, values: Iterator[Any]) -> None:
        self._values = values

    def __call__(self, text: str, at: int) -> tuple[Any, int]:
        value = next(self._values)
        # Only a value that ends at a closing character: a number's text may go on past
        # what orjson writes ("1.0" of "1.00").
        if orjson is not None and isinstance(value, dict | list | str):
            written = orjson.dumps(value).decode()
            if text.startswith(written, at):
                return value, at + len(written)
        return value, _SCAN(text, at)[1]


def _skim(text: str, at: int) -> tuple[None, int]:
    """The position after the value at ``at`` (a member before the list, when locating)."""
    return None, _SCAN(text, at)[1]


def _head(text: str, key: str, read: Reader) -> tuple[dict[str, Any], int]:
    """The members before the ``key`` list and the position after its ``[``; a body
    without that list: all its members and -1."""
    at = skip(text, 0)
    if text[at : at + 1] != "{":
        raise Unusable
    head: dict[str, Any] = {}
    at = skip(text, at + 1)
    while text[at] != "}":
        name, at = _member_name(text, at)
        if name == key and text[at] == "[":
            return head, at + 1
        head[name], at = read(text, at)
        at = _after_member(text, at)
    if text[at + 1 :].strip(" \t\n\r"):
        raise Unusable  # something after the object: the full parse says what
    return head, -1


def rest_of(text: str, key: str | None, read: Reader = _SCAN) -> dict[str, Any]:
    """The members after the history list (``text`` starts right after its ``]``)."""
    at = skip(text, 0)
    rest: dict[str, Any] = {}
    while text[at] == ",":
        at = skip(text, at + 1)
        name, at = _member_name(text, at)
        if name == key:
            raise Unusable  # the history key twice: json.loads keeps the last one
        rest[name], at = read(text, at)
        at = skip(text, at)
    if text[at] != "}" or text[at + 1 :].strip(" \t\n\r"):
        raise Unusable
    return rest


def skip(text: str, at: int) -> int:
    """The position after the whitespace at ``at``."""
    return _WS.match(text, at).end()  # type: ignore[union-attr]  # [ \t\n\r]* always matches


def _member_name(text: str, at: int) -> tuple[str, int]:
    """A member's name at ``at`` and the position of its value."""
    if text[at] != '"':
        raise Unusable
    name, at = _NAME(text, at + 1)
    at = skip(text, at)
    if text[at] != ":":
        raise Unusable
    return name, skip(text, at + 1)


def _after_member(text: str, at: int) -> int:
    """The position of the next member's name (after ``,``) or of the closing ``}``."""
    at = skip(text, at)
    if text[at] == ",":
        return skip(text, at + 1)
    if text[at] != "}":
        raise Unusable
    return at
