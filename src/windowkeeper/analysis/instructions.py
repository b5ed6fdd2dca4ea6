"""The user's own lines in a message that also carries pasted material (a log, a stack
trace, a listing, code), and the excerpt a long user message is shortened to (SPEC §6 v3
"large user messages").

A line is the user's own when it reads as prose: outside a code fence, not indented, not
shaped like a log record (a timestamp or a level first, a stack frame, an exception line,
a prompt, markup), several words, mostly letters. Of those, the lines that ask or rule
(a question, please, a modal request, an imperative, a rule word) are the instruction
lines; other prose of the user's fills the room they leave. The excerpt keeps the head
and the tail of the text and, between them, the instruction lines of the part it leaves
out, with the archive handle that recalls the whole.
"""

from __future__ import annotations

import re

# What a pasted record opens with: a date or a time, a log level, a syslog stamp, a stack
# frame (Java, Python, gdb), an exception line, a shell or REPL prompt, markup or JSON.
_RECORD = re.compile(
    r"\s*(?:[\[(]?\d{2,4}[-/.]\d{1,2}[-/.]\d{1,4}|[\[(]?\d{1,2}:\d{2}"
    r"|[\[(<]?(?:TRACE|DEBUG|INFO|NOTICE|WARN(?:ING)?|ERROR|ERR|FATAL|CRITICAL|SEVERE"
    r"|PANIC)\b|(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)\s+\d{1,2}\s+\d"
    r"|at\s+[\w$.<>/]+[(:]|File\s+\"|Traceback\b|Caused\s+by\b|#\d+\s+0x"
    r"|[\w.$]*(?:Error|Exception|Warning|Fault)\b:|[$#%>]\s|>>>|\.\.\.\s|[{}\[\]<|])"
)
_FENCE = re.compile(r"\s*(?:```|~~~)")
_BULLET = re.compile(r"(?:[-*+•]|\d{1,3}[.)])\s+")
_WORD = re.compile(r"[^\W\d_]{2,}")
# A request or a rule: a question, please, a modal or first-person ask, a rule word.
_ASKS = re.compile(
    r"\?\s*$|\b(?:please|pls|can you|could you|would you|will you|i want|i need|i'?d like"
    r"|i would like|we need|we should|we must|make sure|ensure|don'?t|do not|never|always"
    r"|must|should|instead|avoid|only)\b",
    re.IGNORECASE,
)
# ``_ASKS`` for a lowered ASCII text (see "the ASCII fast paths" below): its pattern is
# lower case, so it matches there where ``_ASKS`` matches the text.
_ASKS_LOWERED = re.compile(_ASKS.pattern)
assert _ASKS.pattern == _ASKS.pattern.lower()
# Verbs a request opens with ("Fix the handler", "Check why ..."), lower case.
_IMPERATIVES = frozenset((
    "add", "analyse", "analyze", "avoid", "build", "change", "check", "clean", "continue",
    "create", "debug", "delete", "deploy", "describe", "do", "explain", "figure", "find",
    "finish", "fix", "focus", "go", "help", "ignore", "implement", "improve", "install",
    "investigate", "keep", "leave", "let", "look", "make", "migrate", "move", "note",
    "open", "proceed", "push", "read", "refactor", "remove", "rename", "replace", "report",
    "restore", "resolve", "retry", "revert", "review", "rewrite", "run", "see", "set",
    "show", "skip", "start", "stop", "summarise", "summarize", "tell", "test", "try",
    "update", "upgrade", "use", "verify", "write",
))  # fmt: skip
PROSE_LETTERS = 0.75
"""Least share of letters and spaces in a prose line."""
MIN_WORDS = 3


def is_own_line(line: str) -> bool:
    """Whether ``line`` (outside a fence) reads as something a person wrote."""
    text = line.rstrip()
    if not text or text[0] in " \t" or len(text) > 2_000 or _RECORD.match(text):
        return False
    body = _BULLET.sub("", text, count=1)
    if not body[:1].isalpha() and body[:1] not in "\"'“‘(":
        return False
    if _word_count(body) < MIN_WORDS:
        return False
    return _prose_letters(body) >= PROSE_LETTERS * len(body)


# What must hold for the ASCII fast paths below: of the ASCII characters, ``str.isalpha``
# and the regex class ``[^\W\d_]`` hold for the 52 letters only, and case-insensitive
# matching of an all-lower-case pattern matches it in the lowered text (``str.lower``
# changes only the 26 capitals there, and neither the length nor what is a word).
_ASCII_LETTERS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_LETTER_OR_SPACE = b" " + _ASCII_LETTERS
_LETTERS_ONLY = bytes(c if c in _ASCII_LETTERS else 32 for c in range(256))


def _word_count(text: str) -> int:
    """``len(_WORD.findall(text))``: the runs of two letters or more. An ASCII text is
    split in C with every other character made a space (the regex's Unicode class cost
    the most of ``is_own_line``); others take the regex."""
    if text.isascii():
        runs = text.encode("ascii").translate(_LETTERS_ONLY).split()
        return len([run for run in runs if len(run) > 1])
    return len(_WORD.findall(text))


def _prose_letters(text: str) -> int:
    """How many characters of ``text`` are letters (``str.isalpha``) or spaces; an ASCII
    text is counted in one C pass (most lines are ASCII), others a character at a time."""
    if text.isascii():
        data = text.encode("ascii")
        return len(data) - len(data.translate(None, _LETTER_OR_SPACE))
    return sum(1 for c in text if c.isalpha() or c == " ")


def asks(line: str) -> bool:
    """Whether an own line asks or rules (an instruction line)."""
    # A case-insensitive regex costs ~10× a case-sensitive one over a lowered text.
    if _ASKS_LOWERED.search(line.lower()) if line.isascii() else _ASKS.search(line):
        return True
    first = _BULLET.sub("", line.strip(), count=1).split(" ", 1)[0].strip(",:;.!").lower()
    return first in _IMPERATIVES


def own_lines(text: str) -> list[tuple[int, str]]:
    """The user's own lines of ``text`` with their offsets, code fences skipped."""
    found: list[tuple[int, str]] = []
    fenced = False
    offset = 0
    for line in text.splitlines(keepends=True):
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced and is_own_line(line):
            found.append((offset, line.strip()))
        offset += len(line)
    return found


def instruction_lines(text: str, limit: int) -> list[str]:
    """The instruction lines of ``text``, then its other own lines, in their order,
    within ``limit`` characters (whole lines only)."""
    return [line for _, line in _chosen(own_lines(text), limit)]


def _chosen(lines: list[tuple[int, str]], limit: int) -> list[tuple[int, str]]:
    asking = [asks(line) for _, line in lines]
    ranked = [i for i, a in enumerate(asking) if a] + [i for i, a in enumerate(asking) if not a]
    chosen: list[int] = []
    used = 0
    for index in ranked:
        cost = len(lines[index][1]) + 1
        if used + cost <= limit:
            chosen.append(index)
            used += cost
    return [lines[i] for i in sorted(chosen)]


MARKER_CHARS = 120
"""Room an excerpt keeps for its marker lines (besides the handle)."""
HEAD_SHARE, TAIL_SHARE = 0.45, 0.2
"""Of an excerpt's characters: the head and the tail at least; the instruction lines of
the part left out take at most the rest, and the head and the tail share what they leave."""


def excerpt(text: str, limit: int, handle: str = "") -> str:
    """``text`` itself when it is at most ``limit`` characters, else its head and tail
    around a marker that names what is left out (and ``handle``, which recalls it), the
    instruction lines of the part left out listed after the marker."""
    if len(text) <= limit:
        return text
    limit = max(0, limit - MARKER_CHARS - len(handle))
    head_end = _line_end(text, int(limit * HEAD_SHARE))
    tail_start = _line_start(text, len(text) - int(limit * TAIL_SHARE), head_end)
    room = limit - head_end - (len(text) - tail_start)
    found = [(head_end + at, line) for at, line in own_lines(text[head_end:tail_start])]
    lines = _chosen(found, room)
    # What the lines leave goes to the head (two thirds) and the tail.
    spare = max(0, room - sum(len(line) + 1 for _, line in lines))
    head_end = _line_end(text, head_end + spare * 2 // 3)
    tail_start = _line_start(text, tail_start - spare // 3, head_end)
    shown = [line for at, line in lines if head_end <= at < tail_start]
    recall = f"; recall {handle} for the whole message" if handle else ""
    marker = f"[… {tail_start - head_end:,} characters not shown{recall}"
    if shown:
        marker += "; the user's own lines among them: …]\n" + "\n".join(shown) + "\n[…]"
    else:
        marker += " …]"
    head, tail = text[:head_end].rstrip(), text[tail_start:].lstrip()
    return f"{head}\n{marker}\n{tail}"


def _line_end(text: str, at: int) -> int:
    """``at``, moved back to the end of a line when one ends in its last third."""
    cut = text.rfind("\n", at * 2 // 3, at)
    return cut + 1 if cut >= 0 else at


def _line_start(text: str, at: int, floor: int) -> int:
    """``at`` (never before ``floor``), moved on to the start of a line when one starts
    soon after it."""
    at = max(at, floor)
    cut = text.find("\n", at, at + max(1, (len(text) - at) // 3))
    return cut + 1 if cut >= 0 else at
