"""What an edit changed, in one short line (issue 24: a reader asks "what does the code
now do?", and "edited helpers.py" does not say).

The gist of an edit call is its first changed line, old → new, from the call's own
arguments (an old and a new text, as string-replacement editors take them; the edits
of a multi-edit call; an insert's new text): comment and blank lines aside, the first
line it removed and the first two it added, each cut short, with a count of the other
changed lines. A write of a whole file and an edit through the shell have no gist
(their arguments are the file or the command, which other lines name). The edit's texts
are masked before they are compared and cut: a secret cut short no longer looks like one,
so masking the handoff's text afterwards would not find it.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..core.secrets import redact
from .events import ToolEvent, remembered
from .facts import collapse
from .toolshapes import ToolKind

SIDE_CHARS = 70
"""Characters of each changed line shown."""
ADDED_SHOWN = 2
_OLD_KEYS = ("old_string", "old_str", "oldText", "old_text", "old", "search")
_NEW_KEYS = ("new_string", "new_str", "newText", "new_text", "new", "replace", "insert_text")
# Lines that say nothing about what the code does: blank, comments, lone brackets.
_TRIVIAL = re.compile(r"\s*(?:$|#|//|/\*|\*|--|<!--|[)\]}>;,]+\s*$)")
JOIN = " ⏎ "


def edit_gist(event: ToolEvent) -> str:
    """The gist of a successful edit call (``""`` when it has none), computed once."""
    found: str = remembered(event, "edit_gist", _edit_gist)
    return found


def _edit_gist(event: ToolEvent) -> str:
    if event.result is None or event.failed or event.action.kind is not ToolKind.EDIT:
        return ""
    pairs = _pairs(event.args)
    gists = [g for old, new in pairs if (g := text_gist(redact(old), redact(new)))]
    if not gists:
        return ""
    more = len(gists) - 1
    return gists[0] + (f" (+{more} more edit{'s' if more > 1 else ''})" if more else "")


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
    before, after = old.splitlines(), new.splitlines()
    removed: list[str] = []
    added: list[str] = []
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            removed += before[i1:i2]
            added += after[j1:j2]
    if not removed and not added:
        return ""
    old_shown = _telling(removed)[:1]
    new_shown = _telling(added)[:ADDED_SHOWN]
    more = len(removed) + len(added) - len(old_shown) - len(new_shown)
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


def _telling(lines: Sequence[str]) -> list[str]:
    """The lines that say what the code does (all of them when none does)."""
    telling = [line for line in lines if not _TRIVIAL.match(line)]
    return telling or [line for line in lines if line.strip()]


def _code(lines: Sequence[str]) -> str:
    return JOIN.join(_span(collapse(line, SIDE_CHARS)) for line in lines)


def _span(text: str) -> str:
    """``text`` as inline code (doubled backticks when it holds one)."""
    return f"`` {text} ``" if "`" in text else f"`{text}`"
