"""The work state's own lines name files relative to the repository root (the Files
section states the root once): shorter lines, the same paths."""

from __future__ import annotations

import re
from dataclasses import replace

from .items import merged_files_entry
from .model import WorkItem, WorkState


def relative_text(text: str, root: str) -> str:
    """``text`` with every path under ``root`` written relative to it."""
    if len(root) < 2 or not root.endswith("/") or root not in text:
        return text
    return re.sub(r"(?<![\w/.-])" + re.escape(root), "", text)


def relative(work: WorkState, root: str) -> WorkState:
    """``work`` with the paths of its generated lines relative to ``root``."""
    if len(root) < 2 or not root.endswith("/"):
        return work

    def rel(items: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(relative_text(i, root) for i in items)

    items = tuple(
        WorkItem(i.id, i.title, tuple(map(merged_files_entry, rel(i.evidence)))) for i in work.items
    )
    return replace(
        work, done=rel(work.done), in_progress=rel(work.in_progress), items=items,
        fixed=rel(work.fixed), unverified=work.unverified,
    )  # fmt: skip
