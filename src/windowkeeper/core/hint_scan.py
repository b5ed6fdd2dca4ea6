"""Every secret rule's hints found in one pass over a text, with Hyperscan (design §5).

Masking a text costs mostly finding out that its rules cannot match: about 40 hints,
each a substring or gate scan (:mod:`.secret_hints`). Hyperscan compiles all of them,
the case-sensitive ones exact and the case-insensitive ones caseless, into one automaton
and reports each occurrence with its start in one C pass; the rules then run their own
regexes only at those positions, as they did at the positions the scans found.

What must hold (``tests/test_hint_scan.py`` compares both on generated text): ``exact``
is what one ``str.find`` loop per hint returns, and ``lowered`` what
``secret_hints.lowered_positions`` returns wherever that is not ``None``. Hyperscan's
caseless matching is ASCII case folding; a text is scanned here only when it holds none
of ``FOLDED_TO_ASCII`` (the only characters that ``str.lower`` or ``re.IGNORECASE`` take
to an ASCII letter), so an ASCII hint occurs case-insensitively exactly where it is
found. Other texts take the pure-Python path. A non-ASCII text is scanned one byte per
character (Latin-1, ``?`` for a character past it; no hint holds ``?`` or a byte past
ASCII), so the offsets Hyperscan reports are the characters' own, with nothing to map.

Hyperscan has wheels for Linux and macOS (x86_64, arm64) and Windows x86_64, none for
Windows arm64 (pyproject leaves it out there); where it cannot be imported, or
``WINDOWKEEPER_PURE_PYTHON_SCAN=1`` is set, ``scanner()`` is ``None`` and masking takes
the pure-Python path, with the same results.
"""

from __future__ import annotations

import os
import re
import threading
from bisect import bisect_right
from collections.abc import Callable, Iterable, Sequence
from itertools import accumulate
from typing import Any

from . import scan_cache
from .secret_hints import TOKEN_GROUPS, word_start_of

try:
    import hyperscan
except ImportError:  # no wheel for this platform (Windows): the pure-Python path
    hyperscan = None  # type: ignore[assignment]

FORCE_PURE_PYTHON = "WINDOWKEEPER_PURE_PYTHON_SCAN"


class HintPositions:
    """The positions of every hint in one text, sorted, by hint."""

    __slots__ = ("_exact", "lowered", "text")

    def __init__(self, text: str, exact: dict[str, list[int]], lowered: dict[str, list[int]]):
        self.text = text
        self._exact = exact
        self.lowered = lowered

    def __bool__(self) -> bool:
        return bool(self._exact or self.lowered)

    def holds(self, hints: Iterable[str], insensitive: bool) -> bool:
        """Whether one of ``hints`` occurs (lowered, when ``insensitive``)."""
        found = self.lowered if insensitive else self._exact
        return any(hint in found for hint in hints)

    def exact(self, hints: Iterable[str]) -> list[int]:
        """Where any of the case-sensitive ``hints`` starts, each position once."""
        lists = [self._exact[hint] for hint in hints if hint in self._exact]
        if len(lists) == 1:
            return lists[0]
        return sorted({at for found in lists for at in found})


def _compiled(expressions: list[bytes], flags: list[int]) -> Any:
    """A new block-mode database of ``expressions`` (id = position) with ``flags``."""
    assert hyperscan is not None
    database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    database.compile(expressions=expressions, ids=list(range(len(expressions))), flags=flags)
    return database


class Compiled:
    """A compiled Hyperscan database and a scratch space per thread (a scratch serves one
    scan at a time)."""

    def __init__(self, expressions: list[bytes], flags: list[int]) -> None:
        assert hyperscan is not None
        self._database = scan_cache.database(
            hyperscan, expressions, flags, lambda: _compiled(expressions, flags)
        )
        self._scratch = hyperscan.Scratch(self._database)
        self._local = threading.local()
        # The thread that compiles (the importing one, usually the only one) scans with
        # this scratch itself: cloning it for that thread too cost a clone per database
        # in a process's first compaction. Another thread allocates its own from the
        # database (a clone would copy this one's struct while a scan may be writing it).
        self._local.scratch = self._scratch

    def _found(self, text: str) -> tuple[bytes | bytearray, list[tuple[int, int]]]:
        """``text`` as scanned (ASCII or UTF-8) and each match's (expression, start byte)."""
        found: list[tuple[int, int]] = []
        return self.scan_with(text, _collect, found), found

    def _found_at_chars(self, text: str) -> list[tuple[int, int]]:
        """Each match's (expression, start character) in ``text``, scanned one byte per
        character: a character past ASCII as its Latin-1 byte (0x80-0xFF) or as ``?``.
        What must hold: every expression is a literal of ASCII characters other than
        ``?`` (checked where one is compiled), so no match can hold such a byte and the
        matches are those of the text itself, at character offsets (no UTF-8 to map)."""
        found: list[tuple[int, int]] = []
        scratch = self._scratch_here()
        self._database.scan(text.encode("latin-1", "replace"), _collect, 0, found, scratch)
        return found

    def _scratch_here(self) -> Any:
        scratch = getattr(self._local, "scratch", None)
        if scratch is None:  # a scratch serves one scan at a time: one per thread
            assert hyperscan is not None
            scratch = self._local.scratch = hyperscan.Scratch(self._database)
        return scratch

    def scan_with(
        self, text: str, handler: Callable[[int, int, int, int, Any], bool | None], context: Any
    ) -> bytes | bytearray:
        """Scan ``text`` (as ASCII, or UTF-8), calling ``handler(expression, start, end,
        flags, context)`` for each match; returns the bytes scanned."""
        scratch = self._scratch_here()
        data = text.encode("ascii") if text.isascii() else _utf8(text)
        # positional (data, handler, flags, context, scratch): the binding parses keyword
        # arguments at about the cost of a short scan; it reads any buffer (its stub says
        # bytes; no ``typing.cast``: a Python call on every scan)
        self._database.scan(data, handler, 0, context, scratch)
        return data


class HintScanner(Compiled):
    """One compiled database of ``exact`` (case-sensitive) and ``caseless`` hints."""

    def __init__(self, exact: Iterable[str], caseless: Iterable[str]) -> None:
        assert hyperscan is not None
        self._hints = [(hint, False) for hint in sorted(set(exact))]
        self._hints += [(hint, True) for hint in sorted(set(caseless))]
        assert all(_plain_ascii(hint) for hint, _ in self._hints)  # see _found_at_chars
        som = hyperscan.HS_FLAG_SOM_LEFTMOST
        super().__init__(
            [_literal(hint) for hint, _ in self._hints],
            [som | hyperscan.HS_FLAG_CASELESS if low else som for _, low in self._hints],
        )

    def scan(self, text: str) -> HintPositions:
        """The hints' positions (in characters) in ``text``, which must hold no character
        of ``FOLDED_TO_ASCII`` (see the module docstring)."""
        exact: dict[str, list[int]] = {}
        lowered: dict[str, list[int]] = {}
        for index, start in sorted(self._found_at_chars(text)):
            hint, low = self._hints[index]
            (lowered if low else exact).setdefault(hint, []).append(start)
        return HintPositions(text, exact, lowered)


def _plain_ascii(literal: str) -> bool:
    """Whether ``literal`` is ASCII without ``?`` (what ``_found_at_chars`` needs)."""
    return literal.isascii() and "?" not in literal


def _utf8(text: str) -> bytearray:
    """``text.encode("utf-8", "surrogatepass")``, encoded a slice at a time: encoding a
    whole non-ASCII text reserves up to four bytes per character at once (a 10,000
    character text ~30 KB for its 10 KB of bytes); this holds the bytes and one slice."""
    data = bytearray()
    for start in range(0, len(text), _CHUNK):
        data += text[start : start + _CHUNK].encode("utf-8", "surrogatepass")
    return data


_CHUNK = 2_048


def _collect(index: int, start: int, end: int, flags: int, found: Any) -> None:
    found.append((index, start))


def scanner(exact: Iterable[str], caseless: Iterable[str]) -> HintScanner | None:
    """A scanner of these hints; ``None`` on the pure-Python path (no Hyperscan, or
    ``WINDOWKEEPER_PURE_PYTHON_SCAN`` set)."""
    return HintScanner(exact, caseless) if _enabled() else None


class LiteralScanner(Compiled):
    """Where any of some ASCII literals occurs in a text, case-insensitively (ASCII case
    folding), in one Hyperscan pass over its bytes: the gates in front of the extractors
    (which lines of a tool output may hold an error line, say) without a lower-cased copy
    of the text (for an 8,000-character non-ASCII output, ``str.lower`` alone allocates
    ~130 KB: compress's peak memory)."""

    def __init__(self, literals: Iterable[str]) -> None:
        assert hyperscan is not None
        words = sorted(set(literals))
        assert all(_plain_ascii(word) for word in words)  # see _found_at_chars
        flags = hyperscan.HS_FLAG_SOM_LEFTMOST | hyperscan.HS_FLAG_CASELESS
        super().__init__([_literal(word) for word in words], [flags] * len(words))

    def starts(self, text: str) -> set[int]:
        """The character offset where each occurrence starts. What must hold: ``text``
        holds no character of ``FOLDED_TO_ASCII`` (then these are exactly the offsets of
        the lower-cased literals in ``text.lower()``: no other character lowers to an
        ASCII one, and only ``İ``, one of them, lowers to two)."""
        return {start for _, start in self._found_at_chars(text)}


def _literal(word: str) -> bytes:
    """``word`` as a Hyperscan expression matching it literally (every byte escaped)."""
    return "".join(f"\\x{ord(char):02x}" for char in word).encode("ascii")


def literal_scanner(literals: Iterable[str]) -> LiteralScanner | None:
    """A :class:`LiteralScanner`; ``None`` on the pure-Python path (as :func:`scanner`)."""
    return LiteralScanner(literals) if _enabled() else None


class LineScanner(Compiled):
    """Which lines each of some expressions matches in, in one Hyperscan pass over the
    lines joined: the gate in front of a per-line regex (only the lines it names are
    searched with the regex itself). What must hold: no expression matches across a
    line break, and each matches wherever the regex it gates does (Hyperscan's ``\\b``
    is ASCII's: it holds wherever Python's does beside an ASCII letter)."""

    def __init__(self, expressions: Sequence[str]) -> None:
        assert hyperscan is not None
        self._count = len(expressions)
        som = hyperscan.HS_FLAG_SOM_LEFTMOST
        super().__init__([e.encode("ascii") for e in expressions], [som] * self._count)

    def lines(self, lines: Sequence[str]) -> list[set[int]]:
        """For each expression, the indices of the lines it matches in."""
        data, found = self._found("\n".join(lines))
        hits: list[set[int]] = [set() for _ in range(self._count)]
        if not found:
            return hits
        ascii_only = len(data) == sum(map(len, lines)) + len(lines) - 1
        sizes = map(len, lines) if ascii_only else (len(_utf8(line)) for line in lines)
        # the byte offset where each line starts (one line break between lines)
        starts = list(accumulate((size + 1 for size in sizes), initial=0))
        for index, start in found:
            hits[index].add(bisect_right(starts, start) - 1)
        return hits


def line_scanner(expressions: Sequence[str]) -> LineScanner | None:
    """A :class:`LineScanner`; ``None`` on the pure-Python path (as :func:`scanner`)."""
    return LineScanner(expressions) if _enabled() else None


class ConditionScanner(Compiled):
    """Which of some necessary conditions match a text, in one Hyperscan pass: each
    ``(expression, caseless)`` is single-match (reported once, at its first match), so a
    text costs one scan and a Python call per condition that matches, not per match."""

    def __init__(self, conditions: Sequence[tuple[str, bool]]) -> None:
        assert hyperscan is not None
        once = hyperscan.HS_FLAG_SINGLEMATCH
        super().__init__(
            [expression.encode("ascii") for expression, _ in conditions],
            [once | hyperscan.HS_FLAG_CASELESS if low else once for _, low in conditions],
        )

    def matching(self, text: str) -> frozenset[int] | set[int]:
        """The positions (in the conditions given) of those that match ``text``."""
        found: set[int] = set()
        self.scan_with(text, _add, found)
        return found or _NONE

    def matching_utf8(self, data: bytes) -> frozenset[int] | set[int]:
        """:meth:`matching` of the text whose UTF-8 (``surrogatepass``) is ``data``: those
        are the bytes :meth:`scan_with` makes of the text, so a caller holding them (a
        request body) has them scanned as they are, not encoded again from the text."""
        found: set[int] = set()
        self._database.scan(data, _add, 0, found, self._scratch_here())
        return found or _NONE


_NONE: frozenset[int] = frozenset()


def _add(index: int, start: int, end: int, flags: int, found: Any) -> None:
    found.add(index)


def condition_scanner(conditions: Sequence[tuple[str, bool]]) -> ConditionScanner | None:
    """A :class:`ConditionScanner`; ``None`` on the pure-Python path (as :func:`scanner`)."""
    return ConditionScanner(conditions) if _enabled() else None


class ClueScanner(Compiled):
    """Where each of some plain expressions matches in a text, in one Hyperscan pass:
    the gate of :func:`~windowkeeper.analysis.facts.clued_items`, which otherwise scans
    the text once per clue. What must hold (asserted): each expression is plain (see
    :func:`plain_expression`), so a match holds no line break, no ``?`` and no byte past
    ASCII (the starts are the text's own characters: see ``_found_at_chars``), and
    Hyperscan matches it wherever Python's ``re`` does."""

    def __init__(self, expressions: Sequence[str]) -> None:
        assert hyperscan is not None
        assert all(plain_expression(e) for e in expressions)
        som = hyperscan.HS_FLAG_SOM_LEFTMOST
        super().__init__([e.encode("ascii") for e in expressions], [som] * len(expressions))

    def starts(self, text: str) -> list[tuple[int, int]]:
        """(expression, start character) of each match in ``text``."""
        return self._found_at_chars(text)


# Lower-case ASCII words, spaces (escaped or not), apostrophes, alternations and groups:
# a pattern of these matches a fixed set of such strings (Hyperscan refuses one that
# matches the empty string).
_PLAIN = re.compile(r"(?:[a-z0-9 '|()]|\\ )+")


def plain_expression(expression: str) -> bool:
    """Whether a pattern is only literal words in alternations and non-capturing groups."""
    return _PLAIN.fullmatch(expression.replace("(?:", "(")) is not None


def clue_scanner(expressions: Sequence[str]) -> ClueScanner | None:
    """A :class:`ClueScanner`; ``None`` on the pure-Python path (as :func:`scanner`)."""
    return ClueScanner(expressions) if _enabled() else None


def _enabled() -> bool:
    """Hyperscan is installed and the pure-Python path is not forced."""
    return hyperscan is not None and os.environ.get(FORCE_PURE_PYTHON, "") in ("", "0")


_TOKEN_HINTS = tuple(hint for group in TOKEN_GROUPS for hint in group.hints)


class Scanned:
    """The Hyperscan ``HintSource`` of one ``redact`` call: the text scanned once, and
    again only once a rule has changed it."""

    __slots__ = ("_found", "_scanner")

    def __init__(self, scanner: HintScanner) -> None:
        self._scanner = scanner
        self._found: HintPositions | None = None

    def at(self, text: str) -> HintPositions:
        if self._found is None or self._found.text is not text:
            self._found = self._scanner.scan(text)
        return self._found

    def of(self, text: str) -> dict[str, list[int]] | None:
        return self.at(text).lowered

    def exact(self, text: str, hints: tuple[str, ...], word_start: bool = False) -> list[int]:
        found = self.at(text).exact(hints)
        if not word_start:
            return found
        return sorted({word_start_of(text, at) for at in found})

    def occurs(self, text: str, hints: tuple[str, ...]) -> bool:
        return bool(self.at(text).exact(hints))

    def token_hints(self, text: str) -> tuple[str, ...]:
        # every position of every token hint: a gate would only leave out positions
        # where no token can start, and trying those changes nothing
        return _TOKEN_HINTS

    def may_hold(self, text: str, hints: tuple[str, ...], insensitive: bool) -> bool:
        return self.at(text).holds(hints, insensitive)
