"""The work state's own lines name files relative to the repository root (the Files
section states the root once); the newest finished work item names its files by their
base names and older finished items only count them (the Files section has them all)."""

from __future__ import annotations

from dataclasses import replace

from ...analysis.facts import dedupe
from .items import item_status, merged_files_entry
from .model import WorkItem, WorkState


def relative_text(text: str, root: str) -> str:
    """``text`` with every path under ``root`` written relative to it."""
    if len(root) < 2 or not root.endswith("/") or root not in text:
        return text
    # re.sub(r"(?<![\w/.-])" + re.escape(root), "", text), without compiling a pattern
    # per root: each occurrence left to right, dropped unless a word character, "/", "."
    # or "-" comes right before it.
    parts, done, start = [], 0, text.find(root)
    while start >= 0:
        before = text[start - 1] if start else ""
        if before and (before.isalnum() or before in "_/.-"):
            start = text.find(root, start + 1)
            continue
        parts.append(text[done:start])
        done = start + len(root)
        start = text.find(root, done)
    return "".join(parts) + text[done:]


_OUTCOMES = frozenset({"edited", "wrote", "tests", "closed", "merged", "committed", "pushed",
                       "opened"})  # fmt: skip


def relative(work: WorkState, root: str) -> WorkState:
    """``work`` with the paths of its generated lines relative to ``root``."""

    def rel(items: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(relative_text(i, root) for i in items)

    finished = [i.id for i in work.items if not item_status(i).startswith("in progress")]
    newest = finished[-1] if finished else None

    def short(item: WorkItem) -> WorkItem:
        done, older = item.id in finished, item.id in finished and item.id != newest
        evidence = tuple(merged_files_entry(e, done, older) for e in rel(item.evidence))
        if older:  # how it ended and what it changed; its steps are done with
            evidence = tuple(e for e in evidence if e.split(" ", 1)[0] in _OUTCOMES)
        return WorkItem(item.id, item.title, evidence)

    return replace(
        work, done=rel(work.done), in_progress=rel(work.in_progress),
        items=tuple(map(short, work.items)), fixed=rel(work.fixed),
        changes=tuple(dedupe((_relative_change(c, root) for c in work.changes), keep_last=True)),
    )  # fmt: skip


def _relative_change(entry: str, root: str) -> str:
    """A change entry (``path: gist``) with its path relative to ``root``; the gist is
    code and stays as written."""
    path, sep, gist = entry.partition(": ")
    return relative_text(path, root) + sep + gist
