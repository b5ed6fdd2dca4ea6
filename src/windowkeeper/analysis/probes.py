"""Inline code an agent runs to look at something (``python3 -c '…'``, ``node -e``,
``head f | python3 -``): an exploration whose failure the agent moves past once it
changes something, and no work done when it succeeds.
"""

from __future__ import annotations

import functools
import re

from .commands import is_read_only
from .events import ToolEvent
from .outputs import is_test_command
from .toolshapes import EDIT_KIND, SHELL_KIND, WRITE_KIND

# Inline code run by an interpreter (``python3 -c '…'``, ``node -e``, ``python3 - <<EOF``).
_INLINE = re.compile(r"(?:^|[\s|;&(])(?:python[\d.]*|node|ruby|perl|php)\s+(?:-c|-e|-)(?:\s|$)")
# Each match holds one of these where its name starts (see _inline).
_INTERPRETERS = ("python", "node", "ruby", "perl", "php")


def is_probe(command: str) -> bool:
    """Inline code that only looks (nothing redirected into a file, no test run): an
    exploration whose failure the agent moves past."""
    return _is_probe(command[:2_000])


@functools.lru_cache(maxsize=1_024)
def _is_probe(head: str) -> bool:
    """:func:`is_probe` of a command's first 2,000 characters (remembered: the failure
    tracker and the work state ask it of the same commands)."""
    if not _inline(head) or is_test_command(head) or ">" in head.replace("2>&1", ""):
        return False
    return "open(" not in head or ("'w'" not in head and '"w"' not in head)


def _inline(head: str) -> bool:
    """``_INLINE.search(head)``, tried only where an interpreter's name starts: a match
    starts one character before the name (or at the name, at the start of the text), and
    the pattern, which has no literal to skip to, would otherwise be tried at every
    position of every command naming an interpreter."""
    for word in _INTERPRETERS:
        at = head.find(word)
        while at >= 0:
            if _INLINE.match(head, at - 1 if at else 0):
                return True
            at = head.find(word, at + 1)
    return False


def changes_something(event: ToolEvent) -> bool:
    """A successful call that changed something (a write, an edit, a command that is not
    only a look)."""
    if event.failed or event.result is None:
        return False
    kind = event.action.kind
    if kind in (WRITE_KIND, EDIT_KIND):
        return True
    command = event.action.command if kind is SHELL_KIND else None
    return bool(command) and not is_read_only(command or "") and not is_probe(command or "")
