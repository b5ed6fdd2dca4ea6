"""What an edit changed, in one short line (issue 24: a reader asks "what does the code
now do?", and "edited helpers.py" does not say).

The gist of an edit call is its first changed line, old → new, from the call's own
arguments (an old and a new text, as string-replacement editors take them; the edits
of a multi-edit call; an insert's new text): comment and blank lines aside, the first
line it removed and the first two it added, each cut short, with a count of the other
changed lines. An in-place ``sed`` substitution (``sed -i 's/old/new/' file``) has the
pattern → the replacement. A write of a whole file and other edits through the shell
have no gist (their arguments are the file or the command, which other lines name). The
texts are masked before they are compared and cut: a secret cut short no longer looks
like one, so masking the handoff's text afterwards would not find it.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ..core.secrets import redact
from .events import ToolEvent, remembered
from .facts import collapse
from .shellwords import lines_of, steps_of
from .toolshapes import EDIT_KIND, SHELL_KIND
from .writers import in_place, in_place_files, unwrapped

SIDE_CHARS = 70
"""Characters of each changed line shown."""
ADDED_SHOWN = 2
_OLD_KEYS = ("old_string", "old_str", "oldText", "old_text", "old", "search")
_NEW_KEYS = ("new_string", "new_str", "newText", "new_text", "new", "replace", "insert_text")
# Lines that say nothing about what the code does: blank, comments, lone brackets.
_TRIVIAL = re.compile(r"\s*(?:$|#|//|/\*|\*|--|<!--|[)\]}>;,]+\s*$)")
JOIN = " ⏎ "
# A sed substitution: an optional address, ``s``, a delimiter, the pattern, the
# replacement (either may hold an escaped delimiter), flags.
_SED_SUB = re.compile(
    r"(?:\d+(?:,\d+)?|\$|/(?:\\.|[^/])*/)?\s*s(?P<d>[^\w\s\\])"
    r"(?P<old>(?:\\.|(?!(?P=d)).)*)(?P=d)(?P<new>(?:\\.|(?!(?P=d)).)*)(?P=d)[gipIM\d]*",
    re.DOTALL,
)


def edit_change(event: ToolEvent) -> tuple[str, str] | None:
    """The file and the gist of a successful edit call or in-place ``sed``
    substitution (``None`` when it has none), computed once."""
    found: tuple[str, str] | None = remembered(event, "edit_change", _edit_change)
    return found


def edit_gist(event: ToolEvent) -> str:
    """The gist of :func:`edit_change` (``""`` when there is none)."""
    change = edit_change(event)
    return change[1] if change else ""


def _edit_change(event: ToolEvent) -> tuple[str, str] | None:
    if event.result is None or event.failed:
        return None
    action = event.action
    if action.kind is SHELL_KIND and action.command and "sed" in action.command:
        return sed_change(action.command)
    if action.kind is not EDIT_KIND:
        return None
    pairs = _pairs(event.args)
    gists = [g for old, new in pairs if (g := text_gist(redact(old), redact(new)))]
    if not gists:
        return None
    more = len(gists) - 1
    edits = f" (+{more} more edit{'s' if more > 1 else ''})" if more else ""
    return action.path or action.target, gists[0] + edits


def sed_change(command: str) -> tuple[str, str] | None:
    """The file and gist of the first in-place ``sed`` substitution of a command line
    (``sed `pattern` → `replacement```), or ``None``."""
    for line in lines_of(command)[0]:
        for step in steps_of(line):
            words = unwrapped(step)
            if not words or words[0].rsplit("/", 1)[-1] != "sed":
                continue
            args = words[1:]
            match = _SED_SUB.fullmatch(_sed_script(args).strip())
            files = in_place_files(args)
            if match and files and any(in_place(word, "sed") for word in args):
                old, new = redact(match["old"]), redact(match["new"])
                return files[0], f"sed {_code([old])} → {_code([new]) if new else 'nothing'}"
    return None


def _sed_script(args: Sequence[str]) -> str:
    """The first script of a ``sed`` command's arguments (``-e``'s, else its first
    operand)."""
    for index, word in enumerate(args[:-1]):
        if word in ("-e", "--expression"):
            return args[index + 1]
    return next((word for word in args if not word.startswith("-")), "")


def _pairs(args: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(old text, new text) of each edit a call's arguments hold."""
    edits = args.get("edits")
    if isinstance(edits, list):
        return [p for e in edits if isinstance(e, Mapping) for p in _pairs(e)]
    old, new = _text(args, _OLD_KEYS), _text(args, _NEW_KEYS)
    return [(old or "", new)] if new is not None else []


def _text(args: Mapping[str, Any], keys: Sequence[str]) -> str | None:
    for key in keys:
        value = args.get(key)
        if isinstance(value, str):
            return value
    return None


def text_gist(old: str, new: str) -> str:
    """``old → new`` of the first changed lines of ``old`` and ``new`` (see the module
    docstring); ``""`` when nothing changed."""
    # The texts are compared line by line but never held as lists of lines: a line only
    # one side has matches nothing, so it is compared as a marker (one per side), and
    # the changed lines shown are read back from the text (an edit that adds a long
    # text otherwise holds all its lines and indexes each).
    small, large = sorted((old, new), key=len)
    shared = set(_lines(small)).intersection(_lines(large))
    before, after = _keyed(old, shared, _OLD_ONLY), _keyed(new, shared, _NEW_ONLY)
    removed: list[tuple[int, int]] = []
    added: list[tuple[int, int]] = []
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            removed.append((i1, i2))
            added.append((j1, j2))
    del before, after, matcher
    old_shown, old_count = _shown(old, removed, 1)
    new_shown, new_count = _shown(new, added, ADDED_SHOWN)
    if not old_count and not new_count:
        return ""
    return gist_text(old_shown, new_shown, old_count + new_count)


def gist_text(old_shown: Sequence[str], new_shown: Sequence[str], changed: int) -> str:
    """The gist of ``changed`` changed lines, showing ``old_shown`` → ``new_shown``."""
    more = changed - len(old_shown) - len(new_shown)
    if old_shown and new_shown:
        gist = f"{_code(old_shown)} → {_code(new_shown)}"
    elif new_shown:
        gist = f"added {_code(new_shown)}"
    elif old_shown:
        gist = f"removed {_code(old_shown)}"
    else:
        gist = f"changed {more} blank or comment line{'s' if more > 1 else ''}"
        more = 0
    return gist + (f" (+{more} more changed line{'s' if more > 1 else ''})" if more > 0 else "")


# The line ends of ``str.splitlines``.
_ENDS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
_LINE = re.compile(f"([^{re.escape(_ENDS)}]*)(?:\r\n|[{re.escape(_ENDS)}])?")
# What stands for each line only one side has (the two never equal, nor equal a line).
_OLD_ONLY = object()
_NEW_ONLY = object()


def _lines(text: str) -> Iterator[str]:
    """``text.splitlines()``, one line at a time."""
    for match in _LINE.finditer(text):
        if match.end() == match.start():  # only at the end of the text
            return
        yield match[1]


def _keyed(text: str, shared: set[str], alone: object) -> list[object]:
    """The lines of ``text``, each one the other side lacks as ``alone``."""
    return [line if line in shared else alone for line in _lines(text)]


def _shown(text: str, spans: Sequence[tuple[int, int]], count: int) -> tuple[list[str], int]:
    """The first ``count`` lines of ``text`` at ``spans`` (ascending index ranges) that
    say what the code does (when none does, the first non-blank ones), and how many
    lines the spans hold."""
    total = sum(end - start for start, end in spans)
    telling: list[str] = []
    others: list[str] = []
    ranges = iter(spans)
    start, end = next(ranges, (0, 0))
    for index, line in enumerate(_lines(text) if total else ()):
        while index >= end:
            start, end = next(ranges, (-1, -1))
            if end < 0:
                return telling or others, total
        if index < start:
            continue
        if not _TRIVIAL.match(line):
            telling.append(line)
            if len(telling) == count:
                break
        elif len(others) < count and line.strip():
            others.append(line)
    return telling or others, total


def _code(lines: Sequence[str]) -> str:
    return JOIN.join(_span(collapse(line, SIDE_CHARS)) for line in lines)


def _span(text: str) -> str:
    """``text`` as inline code (doubled backticks when it holds one)."""
    return f"`` {text} ``" if "`" in text else f"`{text}`"
