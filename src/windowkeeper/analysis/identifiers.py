"""Identifiers worth carrying verbatim: ticket ids, issue numbers, commit SHAs, URLs.

Prose (user and assistant text, an agent tool's report, a subagent prompt) is scanned
for all of them. Command output is noisier: it gives ticket ids, URLs, its first few
UUIDs, labelled ids (``commit 1a2b3c4``, ``agentId: 1a2b3c4``) and, from git/gh output
only, SHAs at the start of a line. File contents (reads) are never scanned. Every scan is bounded.
"""

from __future__ import annotations

import re
from collections.abc import Collection

from ..core.hint_scan import condition_scanner
from ..core.secret_hints import has_folded_letters
from .events import ToolEvent, remembered
from .facts import URL, dedupe, hinted_matches, window
from .toolshapes import FETCH_KIND, OTHER_KIND, SHELL_KIND, shorten

SCAN_CHARS = 4_000
"""Head and tail characters of a prose text scanned for identifiers."""
OUTPUT_SCAN_CHARS = 2_000
"""Head and tail characters of a tool output scanned for identifiers."""
MAX_UUIDS = 3
"""UUIDs taken from one tool output at most."""

# Every pattern starts with a literal or a character class (a leading look-behind is
# written after the first character), so the regex engine skips ahead quickly; a cheap
# literal "hint" pattern gates the rarer shapes, which are then matched line by line.

# A ticket's hint: a hyphen and digit after an upper case letter and 1-9 letters or digits.
_TICKET_HINT = re.compile(
    r"-\d(?<=[A-Z0-9]-\d)(?:"
    + "|".join(rf"(?<=[A-Z][A-Z0-9]{{{n}}}-\d)" for n in range(1, 10))
    + ")"
)
_TICKET = re.compile(r"([A-Z](?<![\w-][A-Z])[A-Z0-9]{1,9})-\d{1,6}(?![\w-])")
_NOT_TICKETS = frozenset({"UTF", "SHA", "ISO", "GPT", "TLS", "SSL", "AES", "RSA", "HTTP", "UCS"})
# ``spotter-gqc.4``: hyphenated words with a numeric suffix; every part after the first
# hyphen must hold a letter (checked after matching, which keeps the pattern linear).
_SLUG_HINT = re.compile(r"-(?=[a-z0-9]*[a-z])[a-z0-9]*\.\d")
_SLUG_ID = re.compile(r"[a-z](?<![\w./-][a-z])[a-z0-9]*(?:-[a-z0-9]+)+(?:\.\d+)+(?![\w-]|\.\w)")
# ``spotter-3r6``: a word and a short hash of letters and digits (tracker ids such as
# beads' ``prefix-a1b``); an ordinal or unit suffix (``top-10s``, ``mid-90s``) is not one.
_HASH_HINT = re.compile(r"-(?=[a-z]{0,7}\d)(?=\d{0,7}[a-z])[a-z0-9]{3,8}\b")
_HASH_ID = re.compile(
    r"[a-z](?<![\w./-][a-z])[a-z0-9]{1,20}-(?=[a-z]{0,7}\d)(?=\d{0,7}[a-z])[a-z0-9]{3,8}"
    r"(?![\w-]|\.\w)"
)
_NOT_HASH = re.compile(r"\d+(?:s|th|st|nd|rd|px|em|ms|kb|mb|gb|bit|k|m)|v?\d+[a-z]?")
_ISSUE = re.compile(r"#(?<![\w&#/]#)\d{1,6}\b")
# SHAs: hex runs of 7-40 characters with at least one digit and one letter, not part of a
# longer word.
_HEX_MASK = bytes(1 if chr(b) in "0123456789abcdef" else 0 for b in range(256))
_SEVEN_HEX = b"\x01" * 7
_UUID_HINT = re.compile(r"-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-")
# Every hyphenated shape's hint in one alternation: it matches where one of them does,
# so one scan tells whether any of the four per-hint scans can find something (most texts
# with a hyphen hold none of them: 763 of the 895 tool outputs of the real sessions). The
# hyphen each hint starts with is written once, before the alternation: a pattern that
# starts with a literal is scanned for it, one that starts with a choice is tried at
# every character.
# The engine tries the alternation at every hyphen (a separator line holds dozens), so
# each branch is written to fail fast, matching where its hint matches: every hint needs
# a letter or digit right after the hyphen (one test rules out "--", "- ", "->"); the
# letter-or-digit runs are possessive (``*+``, ``{0,7}+``: what follows a run is outside
# its class, so giving characters back never lets the rest match); "a letter in the run
# of letters and digits" is "a letter after the run's leading digits". The tests compare
# it with the four hints on their own.
_HYPHEN_HINTS = re.compile(
    r"-(?=[\dA-Za-z])(?:"
    r"(?:(?=[0-9]*+[a-z])[a-z0-9]*+\.\d)"  # _SLUG_HINT
    r"|(?:(?=[a-z]{0,7}+\d)(?=\d{0,7}+[a-z])[a-z0-9]{3,8}\b)"  # _HASH_HINT
    rf"|(?:{_TICKET_HINT.pattern.removeprefix('-')})"
    rf"|(?:{_UUID_HINT.pattern.removeprefix('-')})"
    ")"
)
assert all(h.pattern.startswith("-") for h in (_TICKET_HINT, _SLUG_HINT, _HASH_HINT, _UUID_HINT))
_UUID = re.compile(
    r"[0-9a-fA-F](?<![\w-][0-9a-fA-F])[0-9a-fA-F]{7}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}(?![\w-])"
)
_GIT_SHA_LINE = re.compile(r"^(?:commit )?([0-9a-f]{7,40})\b|^\[[^\]\s]+ ([0-9a-f]{7,40})\]", re.M)
# The label of a labelled SHA, right before the hex run (at most 11 characters).
_SHA_LABEL = re.compile(
    r"(?i:\b(?:commit|sha|revision|rev|agent_?id|task_?id|run_?id|id)\b)[\s:=#\"']{1,3}\Z"
)
_LABEL_REACH = 12
# ``git`` or ``gh`` at the start of the command or after a separator.
_GIT_COMMAND = re.compile(r"g(?<![^\s;&|(]g)(?:it|h)\s")

Found = list[tuple[int, str]]

# Necessary conditions of the scans of a tool output, in one Hyperscan pass over its
# window (nearly every output holds none, and the labelled SHAs' scan encodes and
# masks the whole window): each matches wherever its scan can find something. Python's
# ``\d`` takes Unicode digits and ``\s`` Unicode white space too: in UTF-8 every byte
# of a non-ASCII character is 0x80 or above (as in secret_gate). The URLs' condition is
# the literal every URL match starts with: the pass reads the window anyway, where a
# substring test for it read the window again (~5 instructions a character).
_LABELLED, _ISSUES, _URLS, _SLUGS, _HASHES, _TICKETS, _UUIDS = range(7)
_OUTPUT_CONDITIONS = (
    # _SHA_LABEL's word ending, one to three separators (up to three bytes each), the
    # hex run's first seven characters; caseless (texts with a letter IGNORECASE folds
    # onto an ASCII one never come here)
    (
        r"(?:commit|sha|revision|rev|id)[\t\n\x0b\x0c\r \x1c-\x1f:=#\"'\x80-\xff]{1,9}"
        r"[0-9a-f]{7}",
        True,
    ),
    (r"#(?:[0-9]|[\x80-\xff])", False),
    (r"https?://", False),  # URL's start (case-sensitive, as URL is)
    # The four hyphen hints (_HYPHEN_HINTS' branches), each without its look-arounds: it
    # matches wherever its hint does (a Unicode digit's UTF-8 starts with a byte over
    # 0x7f; Hyperscan's ``\b`` is ASCII's, which holds wherever Python's does after an
    # ASCII letter or digit), so only the hints whose condition matched are scanned for
    # (each regex tries every hyphen: separator lines hold dozens)
    (r"-[0-9]*[a-z][a-z0-9]*\.(?:[0-9]|[\x80-\xff])", False),  # _SLUG_HINT
    # _HASH_HINT: three or more letters and digits, a letter and a digit among them
    (r"-(?:[a-z]{2,}[0-9]|[a-z][0-9][a-z0-9]|[0-9]{2,}[a-z]|[0-9][a-z][a-z0-9])[a-z0-9]*\b", False),
    (r"[A-Z][A-Z0-9]{1,9}-(?:[0-9]|[\x80-\xff])", False),  # _TICKET_HINT
    (r"-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-", False),  # _UUID_HINT
)
assert URL.pattern.startswith("https?://")
_OUTPUT_GATE = condition_scanner(_OUTPUT_CONDITIONS)
_EVERY_SCAN = frozenset(range(len(_OUTPUT_CONDITIONS)))
_HYPHEN_SCANS = frozenset((_SLUGS, _HASHES, _TICKETS, _UUIDS))


def _output_scans(text: str) -> Collection[int]:
    """Which of the gated scans may find something in ``text`` (every one on the
    pure-Python path, and for a text holding a letter ``IGNORECASE`` folds onto an ASCII
    one)."""
    if _OUTPUT_GATE is None or has_folded_letters(text):
        return _EVERY_SCAN
    return _OUTPUT_GATE.matching(text)


def _is_sha(value: str) -> bool:
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


def _slug(value: str) -> bool:
    parts = value.split(".", 1)[0].split("-")[1:]
    return all(any(c.isalpha() for c in part) for part in parts)


def _hashed(value: str) -> bool:
    return _NOT_HASH.fullmatch(value.rsplit("-", 1)[1]) is None


def _shas(text: str) -> Found:
    """(start, value) of every SHA-like hex run, found through a byte mask of the text
    (one byte per character: hex digit -> 1, anything else -> 0)."""
    marks = text.encode("ascii", "replace").translate(_HEX_MASK)
    found: Found = []
    start = marks.find(_SEVEN_HEX)
    while start >= 0:
        end = marks.find(0, start)
        end = len(text) if end < 0 else end
        if _bounded(text, start, end):
            value = text[start:end]
            if _is_sha(value):
                found.append((start, value))
        start = marks.find(_SEVEN_HEX, end)
    return found


def _bounded(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` is at most 40 characters and not part of a longer word."""
    if end - start > 40 or (start and _wordish(text[start - 1])):
        return False
    return end == len(text) or not _wordish(text[end])


def _wordish(char: str) -> bool:
    """``[\\w-]`` of a regular expression: Unicode letters and digits, ``_`` and ``-``."""
    return char.isalnum() or char in "_-"


def _labelled_shas(text: str) -> Found:
    """(label start, value) of SHAs right after a label such as ``commit`` or ``id:``."""
    found: Found = []
    for at, value in _shas(text):
        label = _SHA_LABEL.search(text, max(0, at - _LABEL_REACH), at)
        if label:
            found.append((label.start(), value))
    return found


def text_identifiers(
    text: str, *, uuids: bool = False, shas: bool = True, scan: int = SCAN_CHARS
) -> list[str]:
    """Ticket ids, issue numbers, SHAs (only labelled ones unless ``shas``), URLs (and
    UUIDs when asked), in order of appearance, from the head and tail ``scan`` chars."""
    text = window(text, scan)
    return _identifiers(text, uuids=uuids, shas=shas, hinted=_hyphen_hinted(text))


def _hyphen_hinted(text: str) -> bool:
    """Whether a hyphenated shape's hint occurs in ``text`` (else none of them can)."""
    return "-" in text and _HYPHEN_HINTS.search(text) is not None


def _identifiers(
    text: str, *, uuids: bool, shas: bool, hinted: bool, scans: Collection[int] = _EVERY_SCAN
) -> list[str]:
    """:func:`text_identifiers` of a windowed ``text``; ``hinted``: whether a hyphen hint
    may occur in it (its :func:`_hyphen_hinted`, or a hint's gate condition matched);
    ``scans``: its :func:`_output_scans` (when known)."""
    labelled = _LABELLED in scans
    found = _shas(text) if shas else _labelled_shas(text) if labelled else []
    if hinted:  # cheap checks skip most scans
        found.extend(_hyphenated(text, uuids=uuids, scans=scans))
    # The gate's answer first: each of its conditions implies the substring tested after it.
    if _ISSUES in scans and "#" in text:
        found.extend((m.start(), m.group(0)) for m in _ISSUE.finditer(text))
    for match in URL.finditer(text) if _URLS in scans and "://" in text else ():
        found.append((match.start(), shorten(match.group(0).rstrip(".,;:!?*`"), 200)))
    if not found:
        return []
    return dedupe(value for _, value in sorted(found))


def _hyphenated(text: str, *, uuids: bool, scans: Collection[int] = _EVERY_SCAN) -> Found:
    """(start, value) of ticket ids, slug ids and (when asked) UUIDs; ``scans``: the
    hints the output gate saw (only those can be in the text)."""
    found: Found = []
    if _TICKETS in scans:
        for match in hinted_matches(_TICKET, _TICKET_HINT, text):
            if match.group(1) not in _NOT_TICKETS:
                found.append((match.start(), match.group(0)))
    if _SLUGS in scans:
        slugs = hinted_matches(_SLUG_ID, _SLUG_HINT, text)
        found.extend((m.start(), m.group(0)) for m in slugs if _slug(m.group(0)))
    if _HASHES in scans:
        hashed = hinted_matches(_HASH_ID, _HASH_HINT, text)
        found.extend((m.start(), m.group(0)) for m in hashed if _hashed(m.group(0)))
    if uuids and _UUIDS in scans:
        found.extend((m.start(), m.group(0)) for m in hinted_matches(_UUID, _UUID_HINT, text))
    return found


def event_identifiers(event: ToolEvent) -> list[str]:
    """Identifiers of a tool call: its command, URL or (other tools) arguments, and its
    output unless it is a file's content."""
    action = event.action
    if action.kind is SHELL_KIND:
        found = text_identifiers(action.command or "")
    elif action.kind is OTHER_KIND:
        found = text_identifiers(_arguments_text(event))
    else:
        found = text_identifiers(action.url or "")
    output = output_identifiers(event)
    return dedupe([*found, *output]) if output else found


# The kinds whose output is scanned (a file's content is not); a tuple, as ``FILE_KINDS``.
_SCANNED_KINDS = (SHELL_KIND, OTHER_KIND, FETCH_KIND)


def output_identifiers(event: ToolEvent) -> tuple[str, ...]:
    """Identifiers a tool's output names (not a file's content), computed once per event
    (a tuple: the memo keeps it for the compaction, and most are the shared empty one)."""
    found: tuple[str, ...] = remembered(event, "output_ids", _output_identifiers)
    return found


def _output_identifiers(event: ToolEvent) -> tuple[str, ...]:
    action, result = event.action, event.result
    if not result or action.kind not in _SCANNED_KINDS:
        return ()
    # Output is noisy: only labelled SHAs count there (and git/gh lines, below), and
    # only its first few UUIDs (a log can print one per line).
    # The window of a window is itself (each part of it is under OUTPUT_SCAN_CHARS):
    # this is text_identifiers(output, shas=False, scan=OUTPUT_SCAN_CHARS), gated once.
    output = window(result, OUTPUT_SCAN_CHARS)
    scans = _output_scans(output)
    # The gate tells which hints may occur; without it, one regex whether any does.
    hinted = not _HYPHEN_SCANS.isdisjoint(scans) and (
        scans is not _EVERY_SCAN or _hyphen_hinted(output)
    )
    found = _identifiers(output, uuids=False, shas=False, hinted=hinted, scans=scans)
    if hinted and _UUIDS in scans:
        uuids = hinted_matches(_UUID, _UUID_HINT, output)
        found.extend(dedupe(m.group(0) for m in uuids)[:MAX_UUIDS])
    if action.command and _GIT_COMMAND.search(action.command[:2_000]):
        for match in _GIT_SHA_LINE.finditer(result[:OUTPUT_SCAN_CHARS]):
            sha = match.group(1) or match.group(2)
            if _is_sha(sha):
                found.append(sha)
    return tuple(dedupe(found))


def _arguments_text(event: ToolEvent) -> str:
    parts = [value for value in event.args.values() if isinstance(value, str)]
    return "\n".join(parts)[:SCAN_CHARS]


_HEX = frozenset("0123456789abcdef")


def identifier_kind(value: str) -> str:
    """What an identifier is: ``url``, ``uuid``, ``sha``, ``id`` (a ticket, tracker id or
    issue number) or ``value`` (anything else: a port, a version, a stated value)."""
    if "://" in value:
        return "url"
    if _UUID.fullmatch(value):
        return "uuid"
    if 7 <= len(value) <= 40 and set(value) <= _HEX and _is_sha(value):
        return "sha"
    if _ISSUE.fullmatch(value) or _TICKET.fullmatch(value):
        return "id"
    if (_SLUG_ID.fullmatch(value) and _slug(value)) or (
        _HASH_ID.fullmatch(value) and _hashed(value)
    ):
        return "id"
    return "value"
