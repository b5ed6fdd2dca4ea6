"""Identifiers in a message's text: SHAs, UUIDs, ticket ids, issue/PR numbers and URLs.

Scanned on bytes with patterns that start with a literal (``-``, ``#``, ``http``) or on a
translated copy of the text (hex digits as ``h``), because a pattern that starts with a
character class makes Python's regex engine try every position: on megabytes of tool
output that alone would cost more than the replay it measures. Each candidate is then
checked at its boundaries in the original text.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

_HEX = b"0123456789abcdef"
_HEX_AS_H = bytes(ord("h") if i in _HEX else ord(" ") for i in range(256))
_HEX_RUN = re.compile(rb"hhhhhhh+")
_DIGITS = frozenset(b"0123456789")
_WORD = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_UPPER_OR_DIGIT = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
_MIXED_HEX = frozenset(b"0123456789abcdefABCDEF")
_URL = re.compile(rb"https?://[^\s\"'<>)\]}`\\]+")
_UUID_TAIL = re.compile(rb"-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}(?![\w])")
_TICKET_TAIL = re.compile(rb"-\d{1,6}(?![\w-])")
_ISSUE = re.compile(rb"#\d{2,6}(?![\w])")
_NOT_TICKETS = (b"UTF", b"ISO", b"SHA", b"MD", b"RFC", b"TLS", b"HTTP")


def _word_before(data: bytes, start: int) -> bool:
    return start > 0 and data[start - 1] in _WORD


def urls(data: bytes) -> Iterator[tuple[bytes, bytes]]:
    """(URL, its host and path) for each URL."""
    for match in _URL.finditer(data):
        url = match.group().rstrip(b".,;:!?")
        host_path = url.split(b"://", 1)[1].rstrip(b"/")
        if host_path:
            yield url, host_path


def shas(data: bytes) -> Iterator[bytes]:
    """Runs of 7-40 lowercase hex digits with a letter and a digit, as whole words."""
    for match in _HEX_RUN.finditer(data.translate(_HEX_AS_H)):
        start, end = match.span()
        if (
            end - start > 40
            or _word_before(data, start)
            or (end < len(data) and data[end] in _WORD)
        ):
            continue
        run = data[start:end]
        if any(c in _DIGITS for c in run) and not run.isdigit():
            yield run


def uuids(data: bytes) -> Iterator[bytes]:
    for match in _UUID_TAIL.finditer(data):
        start = match.start() - 8
        head = data[start : match.start()] if start >= 0 else b""
        if head and all(c in _MIXED_HEX for c in head) and not _word_before(data, start):
            yield data[start : match.end()]


def tickets(data: bytes) -> Iterator[bytes]:
    """``PAY-1423``: 2-10 capitals and digits, the first a letter, a dash and a number."""
    for match in _TICKET_TAIL.finditer(data):
        start = match.start()
        while start > 0 and data[start - 1] in _UPPER_OR_DIGIT and match.start() - start < 10:
            start -= 1
        prefix = data[start : match.start()]
        if len(prefix) < 2 or not prefix[:1].isalpha() or _word_before(data, start):
            continue
        if not prefix.startswith(_NOT_TICKETS):
            yield data[start : match.end()]


def issues(data: bytes) -> Iterator[bytes]:
    """``#123``: a ``#`` that does not follow a word, ``/``, ``&``, ``#`` or a quote, nor
    a ``:`` or ``=`` (``color: #333`` and ``fill="#999"`` are colours, not issues)."""
    for match in _ISSUE.finditer(data):
        start = match.start()
        if start and (data[start - 1] in _WORD or data[start - 1] in b"/&#'\"`"):
            continue
        if not data[max(0, start - 3) : start].rstrip(b" ").endswith((b":", b"=")):
            yield match.group()
