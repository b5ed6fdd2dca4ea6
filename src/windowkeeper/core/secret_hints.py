"""Where the hints of the secret rules occur: the fast path of :mod:`.secrets`.

Nearly every text has no secret, so what masking costs is finding out that a rule
cannot match. A substring scan costs about 1 ns per character whatever the needle, and
the rules have some 40 hints; here each group of hints sharing a character costs one
scan instead: a regex whose first item is that one character (the engine scans for a
leading literal in a C loop) and whose look-behinds and tails name the rest of each
hint. The regexes never decide a match themselves; they only gate the rule's own hint
scan, so the rules still see exactly the positions they saw without them.

What must hold (``tests/test_secret_hints.py`` checks it on generated text): a group's
gate matches a text whenever one of the group's hints that can begin a match occurs in
it, and ``lowered_positions`` returns what one ``find`` per hint per piece returns.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class HintGroup:
    """Hints tried only where ``gate`` finds something in the text (or lowered piece)."""

    gate: re.Pattern[str]
    hints: tuple[str, ...]


_UNDERSCORED = (
    "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "hf_", "sk_", "rk_", "whsec_", "npm_",
)  # fmt: skip
# _TOKEN's alternatives by a character each one needs. `xox` needs "-" too: its
# alternative is xox[abposr]-, so a text without that cannot match at an "xox".
TOKEN_GROUPS: tuple[HintGroup, ...] = (
    HintGroup(
        re.compile(r"_(?:(?<=hf_|sk_|rk_)|(?<=gh[pousr]_|npm_)|(?<=whsec_)|(?<=github_pat_))"),
        _UNDERSCORED,
    ),
    HintGroup(
        re.compile(r"-(?:(?<=sk-)|(?<=xox[abposr]-|xapp-|pypi-)|(?<=glpat-))"),
        ("sk-", "xox", "glpat-", "xapp-", "pypi-"),
    ),
    HintGroup(re.compile(r"A(?:KIA|SIA|Iza)"), ("AKIA", "ASIA", "AIza")),
    HintGroup(re.compile(r"eyJ"), ("eyJ",)),
)

# The case-insensitive hints, looked for in lower-cased pieces. "pwd" and "key" are
# there for _ENV_LINE (its upper-case hints are found among these, see ``_env_starts``).
LOWERED_GROUPS: tuple[HintGroup, ...] = (
    HintGroup(
        re.compile(r"c(?:(?<=sec)ret|(?<=ac)cess|lient|red)"),
        ("secret", "access", "client", "cred"),
    ),
    HintGroup(re.compile(r"p(?:ass|(?<=ap)i|rivate|wd)"), ("pass", "api", "private", "pwd")),
    HintGroup(re.compile(r"k(?:(?<=tok)en|ey)"), ("token", "key")),
    HintGroup(re.compile(r"auth"), ("auth", "authorization")),
    HintGroup(re.compile(r"bearer"), ("bearer",)),
)
LOWERED_HINTS = frozenset(hint for group in LOWERED_GROUPS for hint in group.hints)

# Characters that re's IGNORECASE takes for an ASCII letter although ``str.lower`` does
# not turn them into it (ſ matches "s", ı "i", İ "i"), and the Kelvin sign, which both
# take to "k" (Hyperscan's ASCII caseless does not); found by trying every code point.
# Without them, a case-insensitive match of an ASCII word is that word lowered. Escaped:
# an editor's normalization once turned the Kelvin sign into an ASCII "K" here.
FOLDED_TO_ASCII = "\u0130\u0131\u017f\u212a"


def token_hints(text: str) -> tuple[str, ...]:
    """The hints of _TOKEN worth looking for in ``text``: those of every group whose gate
    matches (the others cannot begin a match in it)."""
    return tuple(h for group in TOKEN_GROUPS if group.gate.search(text) for h in group.hints)


def has_folded_letters(text: str) -> bool:
    """Whether ``text`` holds a character that IGNORECASE matches to an ASCII letter
    while ``.lower()`` does not lower it to that letter."""
    return not text.isascii() and any(char in text for char in FOLDED_TO_ASCII)


# Case-insensitive hints are looked for in lower-cased pieces of a long text, never in
# a lower-cased copy of all of it: masking a 30 KB tool output must not hold a second
# 30 KB string (compress's peak memory). Pieces overlap by the longest hint less one.
CHUNK = 8_192
OVERLAP = 15  # "PRIVATE KEY-----", "hooks.slack.com/" (secrets checks it)


def lowered_positions(
    text: str, chunk: int = CHUNK, overlap: int = OVERLAP
) -> dict[str, list[int]] | None:
    """Where each of ``LOWERED_HINTS`` starts in ``text``, found in lower-cased pieces of
    ``chunk`` characters (each read ``overlap`` further, so a hint across a boundary is
    found in the piece it starts in); ``None`` when lower-casing changes the length of
    the text (some non-ASCII letters do), so the positions would drift. Only a group
    whose gate matches the piece is looked for in it."""
    found: dict[str, list[int]] = {}
    for start in range(0, len(text), chunk):
        piece = text[start : start + chunk + overlap]
        low = piece.lower()
        if len(low) != len(piece):
            return None
        for group in LOWERED_GROUPS:
            if group.gate.search(low) is None:
                continue
            for hint in group.hints:
                index = low.find(hint)
                while 0 <= index < chunk:  # one starting in the overlap is the next piece's
                    found.setdefault(hint, []).append(start + index)
                    index = low.find(hint, index + 1)
    return found


_WORD_CHARS = frozenset(string.ascii_letters + string.digits + "_")


def positions(haystack: str, hints: tuple[str, ...], word_start: bool = False) -> list[int]:
    """Where any of ``hints`` starts in ``haystack`` (or the word it is in starts, when
    ``word_start``), each position once, sorted."""
    found: set[int] = set()
    for hint in hints:
        index = haystack.find(hint)
        while index >= 0:
            found.add(word_start_of(haystack, index) if word_start else index)
            index = haystack.find(hint, index + 1)
    return sorted(found)


def word_start_of(text: str, index: int) -> int:
    """Where the run of ``[A-Za-z0-9_]`` that holds ``text[index]`` begins."""
    while index and text[index - 1] in _WORD_CHARS:
        index -= 1
    return index


class HintSource(Protocol):
    """Where the rules' hints occur in the text being masked (one per ``redact`` call).

    ``of``: ``lowered_positions(text)``; ``exact``: ``positions(text, hints, word_start)``;
    ``occurs``: whether one of ``hints`` is in ``text``; ``token_hints``: the token hints
    worth looking for (all of them, or those ``token_hints`` leaves); ``may_hold``: False
    only where none of ``hints`` occurs (lowered, when ``insensitive``)."""

    def of(self, text: str) -> dict[str, list[int]] | None: ...

    def exact(self, text: str, hints: tuple[str, ...], word_start: bool = False) -> list[int]: ...

    def occurs(self, text: str, hints: tuple[str, ...]) -> bool: ...

    def token_hints(self, text: str) -> tuple[str, ...]: ...

    def may_hold(self, text: str, hints: tuple[str, ...], insensitive: bool) -> bool: ...


class Lowered:
    """The pure-Python ``HintSource``: the ``lowered_positions`` of the text being masked,
    computed on first use and again only for a new text (once a rule has changed it);
    case-sensitive hints found with ``str.find``."""

    __slots__ = ("_found", "_text")

    def __init__(self) -> None:
        self._text: str | None = None
        self._found: dict[str, list[int]] | None = None

    def of(self, text: str) -> dict[str, list[int]] | None:
        if text is not self._text:
            self._found = lowered_positions(text)
            self._text = text
        return self._found

    def exact(self, text: str, hints: tuple[str, ...], word_start: bool = False) -> list[int]:
        return positions(text, hints, word_start)

    def occurs(self, text: str, hints: tuple[str, ...]) -> bool:
        return any(hint in text for hint in hints)

    def token_hints(self, text: str) -> tuple[str, ...]:
        return token_hints(text)

    def may_hold(self, text: str, hints: tuple[str, ...], insensitive: bool) -> bool:
        return True  # each rule's own gate decides
