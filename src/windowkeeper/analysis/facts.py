"""Mechanical facts read from agent turns: tool events and shared text helpers.

Shared by the state ledger and the extractive summarizer so both describe a transcript
the same way. Everything here is deterministic and bounded: a huge tool output is only
scanned in a head and a tail window, and every pattern is compiled once. Error lines and
test results live in :mod:`.outputs`, shell-command facts in :mod:`.shellfacts`.
"""

from __future__ import annotations

import functools
import re
from bisect import bisect_right
from collections.abc import Callable, Iterable, Sequence
from itertools import accumulate

from ..core.hint_scan import ClueScanner, clue_scanner, plain_expression
from .toolshapes import shorten

WINDOW_CHARS = 4_000


# --- text helpers ----------------------------------------------------------------------


def collapse(text: str, limit: int) -> str:
    """``text`` on one line (whitespace runs collapsed), cut to ``limit`` characters."""
    if len(text) > 4 * limit + 8:
        # The collapsed head of a long text is a prefix of the whole collapsed text.
        head = " ".join(text[: 4 * limit + 8].split())
        if len(head) > limit:
            return shorten(head, limit)
    return shorten(" ".join(text.split()), limit)


def window(text: str, size: int = WINDOW_CHARS) -> str:
    """Head and tail of a long text (whole lines only); the text itself when short."""
    if len(text) <= 2 * size:
        return text
    head = text[:size].rpartition("\n")[0]
    tail = text[-size:].partition("\n")[2]
    return f"{head}\n{tail}"


def dedupe(items: Iterable[str], *, keep_last: bool = False) -> list[str]:
    """Items without repeats, in order of first (or, with ``keep_last``, last) occurrence."""
    if keep_last:
        return list(reversed(dict.fromkeys(reversed(list(items)))))
    return list(dict.fromkeys(items))


CODE_FENCE = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
# Whitespace after sentence-ending punctuation, before a capital or an opening mark (the
# look-behind follows the first whitespace character, so the engine skips ahead fast).
_SENTENCE_END = re.compile(r"\s(?<=[.!?]\s)\s*(?=[A-Z\"'`(\[])")
_BULLET = re.compile(r"^(?:[-*+>•]|#{1,6}|\d{1,3}[.)])\s+")
SHORT_WORDS = 3
"""A sentence this short is read with the one before it (see :func:`rule_sentences`)."""
_TAG_LINE = re.compile(r"</?[A-Za-z][\w-]*>")


def sentences(text: str) -> list[str]:
    """Whole sentences and list items of prose (code blocks skipped, bullets stripped).

    Hard-wrapped lines of one paragraph or list item are joined first, so a sentence is
    never cut at a line break.
    """
    return list(_sentences(text))


@functools.lru_cache(maxsize=256)
def _sentences(text: str) -> tuple[str, ...]:
    """Remembered: the summarizer splits the same user texts for several sections."""
    return tuple(s for item in paragraphs(prose(text)) for s in item_sentences(item))


@functools.lru_cache(maxsize=256)
def rule_sentences(text: str) -> tuple[str, ...]:
    """:func:`sentences`, except that a sentence of three words or fewer is read with the
    one before it in its paragraph or list item ("Git config is pre-set. Do not modify."):
    alone, it does not say what it is about."""
    found: list[str] = []
    for item in paragraphs(prose(text)):
        start = len(found)
        for sentence in item_sentences(item):
            if len(found) > start and len(sentence.split()) <= SHORT_WORDS:
                found[-1] += " " + sentence
            else:
                found.append(sentence)
    return tuple(found)


def prose(text: str) -> str:
    """``text`` without its code blocks."""
    return CODE_FENCE.sub("\n", text) if "```" in text else text


def item_sentences(item: str) -> list[str]:
    """The sentences of one paragraph or list item (see :func:`paragraphs`). A sentence
    end inside inline code (`` `ALTER TABLE ... ADD` ``) ends no sentence, when the
    item's backticks pair up (a stray one would join the rest of the item)."""
    parts = [part.strip() for part in _SENTENCE_END.split(item) if part.strip()]
    if len(parts) < 2 or "`" not in item or item.count("`") % 2:
        return parts
    joined: list[str] = []
    open_code = False
    for part in parts:
        if open_code:
            joined[-1] += " " + part
        else:
            joined.append(part)
        open_code ^= part.count("`") % 2 == 1
    return joined


def paragraphs(text: str) -> list[str]:
    """Paragraphs and list items of prose without code blocks, hard-wrapped lines joined
    and bullets stripped: :func:`sentences` splits each into sentences."""
    items: list[list[str]] = []
    fresh = True
    for raw in text.splitlines():
        line = raw.strip()
        if not line or (line[0] == "<" and _TAG_LINE.fullmatch(line)):
            fresh = True  # a line that is only a tag (``</pr_description>``) is structure
            continue
        bullet = _BULLET.match(line)
        if bullet or fresh:
            items.append([])
        items[-1].append(line[bullet.end() :].strip() if bullet else line)
        fresh = False
    return [" ".join(part for part in item if part) for item in items if any(item)]


def hinted_matches(
    pattern: re.Pattern[str], hint: re.Pattern[str], text: str
) -> list[re.Match[str]]:
    """Matches of ``pattern`` (which never spans a line break), searched only in the lines
    a ``hint`` matches: a cheap literal-led hint spares most texts the full scan."""
    found: list[re.Match[str]] = []
    done = -1
    for clue in hint.finditer(text):
        if clue.start() < done:
            continue
        start = text.rfind("\n", 0, clue.start()) + 1
        done = text.find("\n", clue.end())
        done = len(text) if done < 0 else done
        found.extend(pattern.finditer(text, start, done))
    return found


def folded(text: str) -> str:
    """``text`` in lower case, for literal checks that stand in for case-insensitive
    patterns (which also equate ``ı``/``İ`` with ``i`` and ``ſ`` with ``s``)."""
    probe = text.lower()
    if probe.isascii():
        return probe
    return probe.replace("\u0131", "i").replace("\u017f", "s").replace("\u0307", "")


_UPPER_ESCAPE = re.compile(r"\\[A-Z]")


def caseless_search(pattern: re.Pattern[str], *, at_start: bool = False) -> Callable[[str], bool]:
    """Whether the case-insensitive ``pattern`` occurs in a text (``at_start``: matches at
    its start, as ``re.match``), ~3-10x faster in ASCII text: there its lower-case twin (no
    ``IGNORECASE``: the engine skips ahead to a first character and compares characters
    as they are) is run on the lowered text. What must hold (asserted): ``pattern`` is
    ASCII and ``IGNORECASE``, with no upper-case escape (``\\S``, ``\\W``: lowering one
    would change it) and no inline flags; then in ASCII text, where letters fold only to
    ASCII letters and lowering keeps every offset, both find the same matches."""
    source = pattern.pattern
    assert pattern.flags & re.IGNORECASE and source.isascii(), source
    assert _UPPER_ESCAPE.search(source) is None and "(?i" not in source, source
    lowered = re.compile(source.lower(), pattern.flags & ~re.IGNORECASE)
    fast, plain = (lowered.match, pattern.match) if at_start else (lowered.search, pattern.search)

    def found(text: str) -> bool:
        if text.isascii():
            return fast(text.lower()) is not None
        return plain(text) is not None

    return found


Clues = Sequence[tuple[str, re.Pattern[str]]]
"""Loose stand-ins of a case-insensitive pattern, for its text :func:`folded`: each is a
literal and a pattern that starts with it, and wherever the pattern matches, one of them
does (so text none of them matches cannot match the pattern)."""


def word_clues(*words: str) -> Clues:
    """Clues that are plain lower-case words, each its own pattern (registered, as
    :func:`scanned_clues`)."""
    return scanned_clues(tuple((word, re.compile(re.escape(word))) for word in words))


# id -> (the clues, their one-pass scanner); the clues are held, so an id is never reused.
_SCANNERS: dict[int, tuple[Clues, ClueScanner]] = {}


def scanned_clues(clues: Clues) -> Clues:
    """``clues``, registered so that :func:`clued_items` finds all of them in one pass
    (Hyperscan) when each pattern is plain and flagless; for module constants (a
    registration is kept for good)."""
    patterns = [clue.pattern for _, clue in clues]
    if all(c.flags == re.UNICODE and plain_expression(c.pattern) for _, c in clues):
        scanner = clue_scanner(patterns)
        if scanner is not None:
            _SCANNERS[id(clues)] = (clues, scanner)
    return clues


def matching_clues(text: str, clues: Clues) -> Clues:
    """The clues that match somewhere in ``text``."""
    probe = folded(text)
    return [(word, clue) for word, clue in clues if word in probe and clue.search(probe)]


def clued_items(items: Sequence[str], clues: Clues) -> list[str]:
    """The items (whole sentences, say) a clue matches in, in order; all of them when
    folding moved characters."""
    joined = "\n".join(items)
    probe = folded(joined)
    if len(probe) != len(joined):
        return list(items)
    starts = list(accumulate((len(item) + 1 for item in items[:-1]), initial=0))
    registered = _SCANNERS.get(id(clues))
    if registered is not None and registered[0] is clues:
        return [items[i] for i in sorted(_scanned(probe, starts, clues, registered[1]))]
    picked: set[int] = set()
    for word, clue in clues:
        for match in clue.finditer(probe) if word in probe else ():
            first = bisect_right(starts, match.start()) - 1
            picked.update(range(first, bisect_right(starts, match.end() - 1)))
    return [items[i] for i in sorted(picked)]


def _scanned(probe: str, starts: list[int], clues: Clues, scanner: ClueScanner) -> set[int]:
    """The items (by the offsets ``starts`` of each in ``probe``) a clue matches in, from
    one scan; a clue counts only where its word is in ``probe``, as in the per-clue
    scans. A plain pattern's match holds no line break: its start names its item."""
    present: dict[int, bool] = {}
    picked: set[int] = set()
    for index, start in scanner.starts(probe):
        known = present.get(index)
        if known is None:
            known = present[index] = clues[index][0] in probe
        if known:
            picked.add(bisect_right(starts, start) - 1)
    return picked


def any_search(patterns: Iterable[re.Pattern[str]], text: str) -> bool:
    """Whether any pattern matches somewhere in ``text``."""
    return any(pattern.search(text) for pattern in patterns)


URL = re.compile(r"https?://[^\s<>\"'`\])}]+")


# --- a previous handoff ------------------------------------------------------------------


def largest_fitting(low: int, high: int, fits: Callable[[int], bool]) -> int | None:
    """The largest value in ``[low, high]`` for which ``fits`` holds (monotone), or None."""
    if high < low or not fits(low):
        return None
    while low < high:
        middle = (low + high + 1) // 2
        if fits(middle):
            low = middle
        else:
            high = middle - 1
    return low
