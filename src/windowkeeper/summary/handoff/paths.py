"""File paths of the ledger written relative to one shared root directory.

A long session repeats the same absolute project prefix in every path. The ledger
declares the prefix once (``Root: /home/me/proj/``) and writes the paths under it
relative. Bare relative items are joined to the root when read back; quoted items and
bare absolute paths are literal, so every path round-trips exactly.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence

ROOT_LINE_COST = len("Root: \n")
"""Characters the root line itself costs."""


def choose_root(paths: Iterable[str]) -> str:
    """The directory (ending in ``/``) whose declaration saves the most characters, or ``""``.

    Only absolute, single-line paths count; ties go to the deeper directory.
    """
    return _choose_root(tuple(dict.fromkeys(paths)))


@functools.lru_cache(maxsize=64)
def _choose_root(paths: tuple[str, ...]) -> str:
    """Remembered: fitting the ledger to its budget asks for nearly the same lists."""
    counts: dict[str, int] = {}
    for path in paths:
        if not path.startswith("/") or "\n" in path or "\r" in path:
            continue
        end = path.rfind("/")
        while end > 0:
            directory = path[: end + 1]
            counts[directory] = counts.get(directory, 0) + 1
            end = path.rfind("/", 0, end)
    best, saved = "", 0
    for directory, count in counts.items():
        gain = len(directory) * (count - 1) - ROOT_LINE_COST
        if gain > saved or (gain == saved and gain > 0 and len(directory) > len(best)):
            best, saved = directory, gain
    return best


def relative(path: str, root: str) -> str | None:
    """``path`` relative to ``root`` when it can be written that way, else ``None``."""
    if not root or not path.startswith(root):
        return None
    rest = path[len(root) :]
    return rest if rest and not rest.startswith("/") else None


def render_paths(
    paths: Sequence[str],
    root: str,
    item: Callable[[str], str],
    quote: Callable[[str], str],
) -> str:
    """Paths as a ``", "``-separated list; ``item`` writes a bare-or-quoted list item."""
    shown = []
    for path in paths:
        rest = relative(path, root)
        if rest is not None and item(rest) == rest:
            shown.append(rest)
        elif root and not path.startswith("/"):
            shown.append(quote(path))  # a bare relative item would be joined to the root
        else:
            shown.append(item(path))
    return ", ".join(shown)


def parse_paths(items: Sequence[tuple[str, bool]], root: str) -> tuple[str, ...]:
    """Read back :func:`render_paths` items given as ``(text, was_quoted)``."""
    return tuple(
        text if quoted or not root or text.startswith("/") else root + text
        for text, quoted in items
    )
